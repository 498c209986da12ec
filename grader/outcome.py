"""The outcome of one grading, as one type: what `grade` prints, what results.json and grades.csv's row say, what a
batch keeps in grading.json and what a cluster's worker sends back.

`grade_submission` (grader/grading.py) makes it, and so does a batch for a submission it could not read or a task
that did not finish (`unreadable`, `failed`). Its methods render it: `table` (the score table the student reads),
`results` (Gradescope's results.json), `row` (grades.csv's). `to_data` and `from_data` carry it as plain data with
a version, so that a reader never takes data of another form for this one: data of another version, or with no
version at all (written before outcomes had one), raises OutcomeError with `old` set, and data that is not an
outcome raises it with `old` unset, each saying what is wrong.
"""

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from grader import messages
from grader.matches import Matches
from grader.scoring import KnownMistake, ProblemScore, known_mistakes, results_json, scores_from, table

VERSION = 1  # of `to_data`'s form: a change that a reader of the last form would misread makes the next
STATUSES = ("ok", "review", "unreadable", "error")
SCORED = ("ok", "review")  # the statuses with a score (the class report counts these)
ROW_HEADER = ("submission", "status", "total", "seconds", "attempts", "reason", "similar_to")  # problems after total


class DataError(ValueError):
    """Data that is not what a reader reads: `old` where it is of another version (or of none), else corrupt."""

    def __init__(self, why: str, *, old: bool = False):
        super().__init__(why)
        self.old = old


class OutcomeError(DataError):
    """Data that is not an outcome of this version."""


def versioned(data: object, version: int, what: str, error: type[DataError]) -> dict[str, Any]:
    """`data` where it is a mapping of `version` (a record of `what`, in words); `error`, saying why, where not."""
    if not isinstance(data, dict):
        raise error(f"not {what}: a {type(data).__name__}, not a mapping")
    found = data.get("version")
    if found != version:
        raise error(f"written before {what.split(' ', 1)[-1]}s had a version" if found is None else
                    f"of version {found!r}, and this grader reads version {version}", old=True)
    return data


@dataclass(frozen=True)
class Figures:
    """For course staff (results.json's extra_data): the seconds each problem's tests took, the examples its
    generated tests ran, and the functions that ran out of time (not called again)."""

    seconds_per_problem: dict[str, float] = field(default_factory=dict)
    examples_per_problem: dict[str, int] = field(default_factory=dict)
    ran_out_of_time: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Outcome:
    """One grading of the submission `name`. `status`: ok, review (scored, but for a person to look at: the
    evidence says why), unreadable (the submission), error (the grader, or a run whose report cannot be trusted:
    for a person, never a score). What the student reads: `lead` (first), the scores, `notes` (last); a problem in
    `untouched` (left as the stub), `missing` (not in the upload) or `broken` (its module does not import: problem
    -> one line) is one line of the table. What staff read: `evidence` (why a person should look: the guard's
    reports, copies, an analysis cut off), `fingerprints` (the catalogued mistakes its answers match), `figures`,
    `digest` (the similarity digest, grader/similarity.py: None where it could not be computed), `reason` (why a
    grading did not finish) and `operator` (the grader's own lines, never the student's)."""

    name: str
    status: str
    seconds: float
    scores: list[ProblemScore] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    lead: list[str] = field(default_factory=list)
    untouched: frozenset[str] = frozenset()
    missing: frozenset[str] = frozenset()
    broken: dict[str, str] = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)
    fingerprints: Matches | None = None
    figures: Figures | None = None
    digest: dict[str, Any] | None = None
    reason: str = ""
    operator: list[str] = field(default_factory=list)

    @classmethod
    def unreadable(cls, name: str, why: str) -> "Outcome":
        """A submission that cannot be read (`why`, as the student reads it)."""
        return cls(name, "unreadable", 0.0, notes=[messages.UNREADABLE.format(why=why)])

    @classmethod
    def failed(cls, name: str, reason: str) -> "Outcome":
        """A grading that did not finish (its task failed, its worker died): `reason`, for the operator."""
        return cls(name, "error", 0.0, notes=[messages.GRADER_FAILED], reason=reason, operator=[reason])

    @property
    def scored(self) -> bool:
        return self.status in SCORED

    @property
    def total(self) -> float:
        return sum(p.score for p in self.scores)

    @property
    def known(self) -> list[KnownMistake]:
        """The catalogued mistakes its answers match, one per function."""
        return known_mistakes(self.fingerprints)

    def table(self, *, failures: bool = True) -> str:
        """The score table the student reads (scoring.table), with each failure's counterexample where `failures`."""
        return table(self.scores, self.notes, self.untouched, self.known, lead=self.lead, missing=self.missing,
                     broken=self.broken, failures=failures)

    def results(self) -> dict[str, Any]:
        """Gradescope's results.json (scoring.results_json): the table without the failures at the top, which are
        under each behaviour's test."""
        return results_json(self.scores, seconds=self.seconds, output=self.table(failures=False),
                            review=self.evidence, known=self.known, fingerprinted=self._fingerprinted(),
                            broken=self.broken, missing=self.missing,
                            per_problem=asdict(self.figures) if self.figures else None)

    def _fingerprinted(self) -> dict[str, Any] | None:
        """For course staff: what the fingerprints ran, where they ran something."""
        found = self.fingerprints
        if not found or not (found.ran or found.error):
            return None
        return {"problems": found.ran, "seconds": round(found.seconds, 1), "timed_out": found.timed_out,
                "error": bool(found.error), "ran_out_of_time": found.ran_out}

    def row(self, ids: list[str], *, attempts: int = 1, similar_to: str = "") -> list[str | float | int]:
        """grades.csv's row (ROW_HEADER, each of `ids` after the total): the points of each problem of `ids` ("" where
        not graded), rounded as shown."""
        by_id = {p.id: round(p.score, 2) for p in self.scores}
        return [self.name, self.status, round(sum(by_id.values()), 2), *[by_id.get(i, "") for i in ids],
                round(self.seconds, 1), attempts, self.reason, similar_to]

    def to_data(self) -> dict[str, Any]:
        """Plain data for JSON, with VERSION."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data.update(scores=[asdict(p) for p in self.scores], untouched=sorted(self.untouched),
                    missing=sorted(self.missing), fingerprints=self.fingerprints and self.fingerprints.data(),
                    figures=self.figures and asdict(self.figures))
        return {"version": VERSION, **data}

    @classmethod
    def from_data(cls, data: object) -> "Outcome":
        """The outcome `to_data` gave; OutcomeError, saying why, for anything else."""
        data = versioned(data, VERSION, "an outcome", OutcomeError)
        names = {f.name for f in fields(cls)}
        unknown, absent = sorted(data.keys() - names - {"version"}), sorted(names - data.keys())
        if unknown or absent:
            raise OutcomeError(f"not an outcome: {'unknown fields ' + ', '.join(unknown) if unknown else ''}"
                               f"{'; ' if unknown and absent else ''}"
                               f"{'no ' + ', '.join(absent) if absent else ''}")
        if data["status"] not in STATUSES:
            raise OutcomeError(f"not an outcome: status {data['status']!r}")
        try:
            return cls(str(data["name"]), data["status"], float(data["seconds"]), scores_from(data["scores"]),
                       _strings(data["notes"]), _strings(data["lead"]), frozenset(_strings(data["untouched"])),
                       frozenset(_strings(data["missing"])), {str(k): str(v) for k, v in data["broken"].items()},
                       _strings(data["evidence"]),
                       None if data["fingerprints"] is None else Matches.from_data(data["fingerprints"]),
                       None if data["figures"] is None else Figures(**data["figures"]), data["digest"],
                       str(data["reason"]), _strings(data["operator"]))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise OutcomeError(f"not an outcome: {type(exc).__name__}: {exc}") from None

    def replacing(self, old: str, new: str) -> "Outcome":
        """This outcome with `old` replaced by `new` in every text (a worker's temporary folder by nothing: the
        student reads the submission's name)."""
        return Outcome.from_data(_replaced(self.to_data(), old, new))

    def but(self, **changes: Any) -> "Outcome":
        """A copy with `changes` (dataclasses.replace)."""
        return replace(self, **changes)


def _strings(value: object) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"a list of strings expected, not {value!r:.80}")
    return value


def _replaced(data: object, old: str, new: str) -> object:
    if isinstance(data, str):
        return data.replace(old, new)
    if isinstance(data, list):
        return [_replaced(v, old, new) for v in data]
    if isinstance(data, dict):
        return {k: _replaced(v, old, new) for k, v in data.items()}
    return data
