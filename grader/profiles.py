"""The hypothesis profiles of the suite, and how a grading run applies its budgets (grader/grading_budget.py, the
calibration's output, which a command rewrites: no code of its own) and its seed to each generated test.

    dev        the default: 20 examples, new ones each run
    ci         40, reproducible
    grade      what the grader runs: each test its budget, seeded from the grading seed
    calibrate  grade, failures not shrunk (tests/meta/mutation.py --every-test)
    floor      grade with no budget under FLOOR
    thorough   200, new inputs every run: a student's most thorough check before submitting
    mutation   10, reproducible (tests/meta/mutation.py)
"""

import contextlib
import hashlib
import os
from typing import Any

import hypothesis
from hypothesis import HealthCheck, Phase, settings

from grader import grading_budget

# No "explain" phase anywhere: it reruns a failing example many times to annotate it, which turns a run on
# the stubs from seconds into a minute; the shrunk example is what a student needs.
_COMMON: dict[str, Any] = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow],
               phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink])
settings.register_profile("dev", max_examples=20, **_COMMON)
# ci and grade: reproducible (derandomized, no example database, and a failing test reports its first bug,
# shrunk: the search for further bugs after it lasts up to 10 s of wall time, so that how much it ran, and what it
# reported, depended on the machine's speed).
_REPRODUCIBLE: dict[str, Any] = dict(derandomize=True, database=None, print_blob=False, report_multiple_bugs=False,
                                     **_COMMON)
settings.register_profile("ci", max_examples=40, **_REPRODUCIBLE)
# grade: what the grader runs; a test's examples are its budget, or FLOOR (grader/grading_budget.py)
settings.register_profile("grade", max_examples=grading_budget.FLOOR, **_REPRODUCIBLE)
# calibrate: grade's inputs and budgets, but a failing test is not shrunk (tests/meta/mutation.py --every-test
# records where each test first failed, which is all a budget needs)
settings.register_profile("calibrate", settings.get_profile("grade"),
                          phases=[Phase.explicit, Phase.reuse, Phase.generate])
# floor: grade with no budget under FLOOR, as it graded before they were calibrated (what
# tests/meta/test_automatic_mutants.py compares the budgets with)
settings.register_profile("floor", settings.get_profile("grade"))
GRADING_PROFILES = ("grade", "calibrate", "floor")
# thorough: a student's most thorough local check before submitting, new random inputs every run
settings.register_profile("thorough", max_examples=200, database=None, print_blob=True, **_COMMON)
# mutation: each catalogued mistake must be caught within a few derandomized examples (tests/meta/mutation.py)
settings.register_profile("mutation", max_examples=10, **_REPRODUCIBLE)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


def generated_test(item) -> Any:
    """The item's test function, or the generated test inside it where a check runs after all its examples (an
    audit's evidence: tests/audit_run.py `evidenced`, whose `given_test` takes the seed and the budget)."""
    test: Any = getattr(item, "obj", None)
    return getattr(test, "given_test", test)


def apply_grading_budget(item, at_least: int = 0) -> None:
    """A generated test listed in grader/grading_budget.py runs its own number of examples when it grades, where
    that is at least `at_least` (set once per test function: the items of a parametrized test share it, and so
    do the runs of one process). A test with settings of its own asks `graded_examples` for its budget."""
    test: Any = generated_test(item)
    examples, _why = grading_budget.BUDGET.get(getattr(test, "__name__", ""), (0, ""))
    if examples and examples < at_least:
        return
    if examples and getattr(test, "is_hypothesis_test", False) and getattr(test, "_grading_budget", None) is None:
        test._grading_budget = examples
        with contextlib.suppress(hypothesis.errors.InvalidArgument):  # settings of its own: already its budget
            settings(settings.default, max_examples=examples)(test)


def graded_examples(test_name: str, otherwise: int) -> int:
    """The examples of a generated test with settings of its own: its budget (grader/grading_budget.py) where the
    run grades (a grading profile), else `otherwise`."""
    if settings.get_current_profile_name() in GRADING_PROFILES and test_name in grading_budget.BUDGET:
        return grading_budget.BUDGET[test_name][0]
    return otherwise


def seed_generated_test(item, seed: int) -> None:
    """Seed a hypothesis test from the grading seed and its own name (a seed overrides derandomization)."""
    test: Any = generated_test(item)
    if getattr(test, "is_hypothesis_test", False):
        name = f"{seed}:{item.module.__name__}:{test.__qualname__}".encode()
        hypothesis.seed(int.from_bytes(hashlib.sha256(name).digest()[:8], "big"))(test)
