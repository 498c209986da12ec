"""Fingerprints: the catalogued mistakes (tests/mistakes/) a submission's answers match, function by function,
named beside its failures for the student and in the class report for staff. What grading calls
(grader/grading.py `fingerprinter`): `Fingerprinter`, which runs a graded submission's failed functions again,
in a sandbox of their own and within what is left of its time limit, on the inputs of comparer.py, whose
answers are kept between runs (cache.py). `resource-grader compare` (grader/staff/compare.py) is the TAs' view
of the same engine.
"""

from pathlib import Path

from grader.fingerprints.comparer import EXAMPLES, Comparer, prepare
from grader.matches import FunctionMatch, Matches


class _Deadline:
    """The package, refusing every call once `seconds` have passed since it was made: the whole comparison
    of one submission stays within its time limit however many calls time out one by one."""

    def __init__(self, package, seconds: float):
        import time

        self._package, self._clock = package, time.monotonic
        self.deadline = self._clock() + seconds
        self.expired = False

    def _check(self) -> None:
        if self._clock() > self.deadline:
            self.expired = True
            raise TimeoutError("the submission's time limit for fingerprints was reached")

    def __getattr__(self, name: str):
        if name in ("isolated", "worker", "close", "name", "writable"):
            return getattr(self._package, name)
        if name == "run":
            return self._guarded(self._package.run)
        return _DeadlineModule(self, getattr(self._package, name))

    def _guarded(self, function):
        def guarded(*args, **kwargs):
            self._check()
            return function(*args, **kwargs)

        return guarded


class _DeadlineModule:
    def __init__(self, deadline: _Deadline, module):
        self._deadline, self._module = deadline, module

    def __getattr__(self, name: str):
        return self._deadline._guarded(getattr(self._module, name))


def class_comparer(problems: list[str], examples: int = EXAMPLES) -> Comparer:
    """A Comparer of `problems` with every catalogued mistake's answers computed up front, so that batch's
    threads share it (they only run submissions in their workers and compare answers)."""
    comparer = Comparer(problems, examples=examples)
    for problem in problems:
        for entry in comparer.entries[problem]:
            for mistake in comparer.mistakes(problem, entry):
                comparer.mistake_answers(mistake, problem, entry)
    return comparer


def _without_contradictions(functions: list[dict]) -> None:
    """Keep a function's match only where none of its entries (inputs of several kinds) contradicts it: on
    each entry the student's answers are the mistake's, or the reference's where the mistake answers as the
    reference does. A mistake matched on one kind of input is not named when another kind shows it is not."""
    groups: dict[tuple, list[dict]] = {}
    for f in functions:
        groups.setdefault(tuple(f["names"]), []).append(f)
    for group in groups.values():
        allowed = set.intersection(*({m["id"] for m in f["matches"]} |
                                     (set(f["like_reference"]) if f["agree"] == f["of"] else set()) for f in group))
        for f in group:
            f["matches"] = [m for m in f["matches"] if m["id"] in allowed]


def fingerprint(comparer: Comparer, submission: Path, layers, *, problems: list[str], agreed: list[str] = (),
                call_seconds: float, memory_mb: int, seconds: float, ran_out: dict[str, str] | None = None) -> Matches:
    """The catalogued mistakes `submission` matches, function by function (plain data for the grader's
    output and the class report): its functions of `problems` run as `compare` runs them (the seam's worker,
    in the sandbox of `layers`, each call within `call_seconds` and the worker within `memory_mb`), all of
    it within `seconds` (no call starts after, no wait on the worker goes past), each function until no
    mistake can match it; those of `agreed` (problems whose every test passed) are not run and count as
    agreeing with the reference. What ran out of time in the grading's tests (`ran_out`: grader/harness/client.py)
    is not called again: it fails at once, as there. Problems the comparer has no inputs for are left out. Never
    raises: what went wrong is in its `error`."""
    import time
    import traceback

    from grader.submission import SubmissionError, in_sandbox, isolated_package

    start = time.monotonic()
    run = [p for p in problems if p in comparer.problems]
    result = Matches(problems=run + [p for p in agreed if p in comparer.problems], ran=run)
    for problem in agreed:
        for entry in comparer.entries.get(problem, []):
            result.functions[f"{problem}.{entry.key}"] = FunctionMatch(True, list(entry.names), [], 0)
    try:
        if run:
            with in_sandbox(submission, layers, seconds, memory_mb) as (box, workspace):
                package = isolated_package(box, workspace, call_timeout=call_seconds, memory_mb=memory_mb,
                                           deadline=start + seconds,  # every wait, a call's or a fork's, ends there
                                           ran_out=ran_out)
                limited = _Deadline(package, seconds)
                try:
                    report = comparer.compare(limited, run, until_unmatched=True)
                finally:
                    package.close()
                    result.ran_out = sorted(set(package.worker.timed_out) - set(ran_out or {}))
            result.timed_out = limited.expired
            result.review = report["review"]
            for problem in report["problems"]:
                _without_contradictions([f for f in problem["functions"] if f["comparable"]])
                for f in problem["functions"]:
                    if f["comparable"]:
                        name = f"{problem['problem']}.{f['function']}"
                        result.functions[name] = FunctionMatch(f["agree"] == f["of"], f["names"],
                                                               [m["id"] for m in f["matches"]], f["of"])
                        if f["matches"]:
                            result.descriptions[name] = {m["id"]: m["description"] for m in f["matches"]}
    except SubmissionError as exc:
        result.error = f"unreadable: {exc}"
    except Exception:  # noqa: BLE001 - a fingerprint's failure never stops a grading or a batch
        result.error = traceback.format_exc()
    result.seconds = time.monotonic() - start
    return result


class Fingerprinter:
    """What grading calls (grader/grading.py) to fingerprint one graded submission: `fingerprint` with the limits
    of the grading. With `up_front` (batch) every catalogued answer of `problems` is computed now, once, for
    the threads to share; otherwise (grade) on the first call that has something to run, for the problems it
    is asked about: a grading that fingerprints nothing never imports torch in the grader's process."""

    def __init__(self, problems: list[str], layers, limits, *, up_front: bool = False):
        self.problems = list(problems)
        self.layers, self.limits = layers, limits
        comparable = [p for p in problems if p in compare_inputs_problems()] if up_front else []
        self.shared = class_comparer(comparable) if comparable else None

    def descriptions(self) -> dict:
        return mistake_descriptions(self.shared) if self.shared else {}

    def __call__(self, submission: Path, problems: list[str], agreed: list[str], seconds: float,
                 ran_out: dict[str, str] | None = None) -> Matches:
        run = [p for p in problems if p in self.problems]
        try:
            comparer = self.shared
            if comparer is None:
                run = [p for p in run if p in compare_inputs_problems()]
                if not run:
                    return Matches()
                comparer = Comparer(run)
        except Exception:  # noqa: BLE001 - the grade stands without its fingerprints
            import traceback

            return Matches(error=traceback.format_exc())
        return fingerprint(comparer, submission, self.layers, problems=run, agreed=agreed,
                           call_seconds=self.limits.call_seconds, memory_mb=self.limits.worker_memory_mb,
                           seconds=seconds, ran_out=ran_out)


def mistake_descriptions(comparer: Comparer) -> dict:
    """"problem.function" -> {mistake id: description} for every comparable function of the comparer."""
    out = {}
    for problem in comparer.problems:
        for entry in comparer.entries[problem]:
            out[f"{problem}.{entry.key}"] = {m.id: m.description for m in comparer.mistakes(problem, entry)}
    return out


def compare_inputs_problems() -> list[str]:
    """The problems compare has inputs for (the others' functions all need a scenario)."""
    prepare()
    from grader.fingerprints import inputs

    return list(inputs.BUILDERS)
