"""What the fingerprints found for one submission: the catalogued mistakes its functions answer as.

grader/fingerprints/'s `fingerprint` makes it; grading reads its error and review evidence, scoring names its
known mistakes, the class report counts them over a batch; a cluster's worker sends it back as plain data
(`data`, `from_data`)."""

from dataclasses import asdict, dataclass, field


@dataclass
class FunctionMatch:
    """One comparable function (or one kind of input of it) of the submission, against the reference."""

    agree: bool  # every input compared gave the reference's answer
    names: list[str]  # the public names it calls
    matches: list[str]  # the ids of the catalogued mistakes that gave its answer on every input
    of: int  # the inputs compared


@dataclass
class Matches:
    functions: dict[str, FunctionMatch] = field(default_factory=dict)  # "problem.function" -> what it matched
    descriptions: dict[str, dict[str, str]] = field(default_factory=dict)  # "problem.function" -> {id: text}
    problems: list[str] = field(default_factory=list)  # fingerprinted: run again, or passed (agreeing)
    ran: list[str] = field(default_factory=list)  # run again (failed)
    error: str | None = None  # what went wrong (the grade stands without them)
    review: list[str] = field(default_factory=list)  # the worker's guard's evidence while they ran
    timed_out: bool = False  # stopped at what was left of the submission's time limit
    seconds: float = 0.0
    ran_out: list[str] = field(default_factory=list)  # functions that ran out of time there (not in the tests before)

    def data(self) -> dict:
        return asdict(self)

    @classmethod
    def from_data(cls, data: dict) -> "Matches":
        functions = {name: FunctionMatch(**found) for name, found in data.get("functions", {}).items()}
        return cls(**{**data, "functions": functions})

    def with_problems_of(self, other: "Matches", problems: list[str]) -> "Matches":
        """These matches, with `other`'s for `problems` (kept from an earlier grading) beside them."""
        def kept(key: str) -> bool:
            return key.split(".", 1)[0] in problems

        return Matches({**self.functions, **{k: v for k, v in other.functions.items() if kept(k)}},
                       {**self.descriptions, **{k: v for k, v in other.descriptions.items() if kept(k)}},
                       [*self.problems, *(p for p in other.problems if p in problems)],
                       [*self.ran, *(p for p in other.ran if p in problems)], self.error, self.review,
                       self.timed_out, self.seconds)
