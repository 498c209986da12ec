"""The report's lines, as types: what the test process writes (report.py) and the grader reads and checks
(grader/runner.py `read_report`), without importing pytest. First a `Collected` line (every test the run will run),
then a `ReportRecord` per test as it finishes, last a `Finished` line (how pytest ended); a collection error is a
ReportRecord whose outcome is "error"."""

from typing import Required, TypedDict

# Who raised a failure (grader/harness/report.py `raised_by`): the code under test, in the grading worker (an
# exception rebuilt from its reply); a check or a limit about that code (an assertion, a time or memory limit, a
# broken reply); or the grading code itself, which is never presented as the student's failure.
RAISED_BY = ("submission", "check", "grader")


class CollectedTest(TypedDict):
    """A test the run will run (its problem's id, None for a test of no problem)."""

    nodeid: str
    problem: str | None
    gpu: bool
    differential: bool


class Collected(TypedDict):
    """The report's first line."""

    collected: list[CollectedTest]


class Finished(TypedDict):
    """The report's last line: pytest's exit status."""

    finished: int


class ReportRecord(TypedDict, total=False):
    """One test's line of the report, as the test process writes it and the grader reads it (grader/runner.py,
    which checks every field's type: a line that does not fit is a fault of the report, never a score)."""

    nodeid: Required[str]
    problem: str | None  # its problem's id (its marker), None for a test of no problem
    outcome: Required[str]  # passed, failed or skipped
    gpu: bool
    differential: bool  # compares with the reference in this process
    duration: float  # seconds: setup, call and teardown
    message: Required[str]  # what a student reads of a failure or a skip
    raised_by: str  # a failure's cause, from its exception's type: one of RAISED_BY
    evidence: list[str]  # what the worker's guard reported while the test ran
    examples: int  # a generated test's examples run
    first_failing_example: int  # counted from 1; 0 where none failed
    ran_out: dict  # what ran out of time in this test ("module.function" -> the message): not called again
