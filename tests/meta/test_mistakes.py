"""Every catalogued mistake is caught by its problem's oracle tests (tests/mistakes/), as the grader runs them:
the `grade` profile's budgets of examples (grader/grading_budget.py), under a grading seed that is none of the
three the budgets were calibrated on. The tests that name a function the mistake replaces run first
(tests/meta/mutation.py NamingTestsFirst): a mistake is caught when any test fails, whatever their order."""

import json
import subprocess
import sys

import pytest

from grader.registry import PROBLEMS
from tests.mistakes import catalog

# These run whole suites in subprocesses: far past the per-test default of 120 s on a loaded machine.
pytestmark = [pytest.mark.meta, pytest.mark.timeout(1800)]

MISTAKES = [m for p in PROBLEMS for m in catalog(p.id)]
HELD_OUT_SEED = 11  # grader/grading_budget.py was calibrated on seeds 1, 2 and 3


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("mutation") / "results.json"
    subprocess.run([sys.executable, "-m", "tests.meta.mutation", "--profile", "grade", "--grading-seed",
                    str(HELD_OUT_SEED), "--naming-first", "--json", str(out)], check=False, timeout=1800)
    return {(r["problem"], r["id"]): r for r in json.loads(out.read_text())}


def test_every_problem_with_tests_has_at_least_six_mistakes():
    from tests.meta.suite import problems_with_tests

    thin = {p: len(catalog(p)) for p in problems_with_tests() if len(catalog(p)) < 6}
    assert not thin, f"problems with fewer than six catalogued mistakes: {thin}"


@pytest.mark.parametrize("mistake", MISTAKES, ids=lambda m: f"{m.problem}:{m.id}")
def test_mistake_is_caught(results, mistake):
    result = results[(mistake.problem, mistake.id)]
    assert result["caught"], (f"{mistake.problem}:{mistake.id} ({mistake.description}) is not caught by the "
                              f"problem's oracle tests under grading seed {HELD_OUT_SEED} "
                              f"(pytest exit code {result['exit_code']})")
