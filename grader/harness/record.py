"""One test's line of the report: what the test process writes (report.py) and the grader reads and checks
(grader/runner.py), without importing pytest."""

from typing import TypedDict

# Who raised a failure (grader/harness/report.py `raised_by`): the code under test, in the grading worker (an
# exception rebuilt from its reply); a check or a limit about that code (an assertion, a time or memory limit, a
# broken reply); or the grading code itself, which is never presented as the student's failure.
RAISED_BY = ("submission", "check", "grader")


class ReportRecord(TypedDict, total=False):
    """One test's line of the report, as the test process writes it and the grader reads it (grader/runner.py,
    which checks every field's type: a line that does not fit is a fault of the report, never a score)."""

    nodeid: str
    problem: str | None  # its problem's id (its marker), None for a test of no problem
    outcome: str  # passed, failed or skipped
    gpu: bool
    differential: bool  # compares with the reference in this process
    duration: float  # seconds: setup, call and teardown
    message: str  # what a student reads of a failure or a skip
    raised_by: str  # a failure's cause, from its exception's type: one of RAISED_BY
    evidence: list[str]  # what the worker's guard reported while the test ran
    examples: int  # a generated test's examples run
    first_failing_example: int  # counted from 1; 0 where none failed
    ran_out: dict  # what ran out of time in this test ("module.function" -> the message): not called again
