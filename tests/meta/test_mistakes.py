"""Every catalogued mistake is caught by its problem's oracle tests (tests/mistakes/), as the grader runs them:
the `grade` profile's budgets of examples (grader/grading_budget.py), under a grading seed that is none of the
three the budgets were calibrated on; and it costs only the behaviours its catalogue's COSTS names (and those
that wait for them): every test runs, so each behaviour it breaks is seen."""

import importlib
import json
import sys

import pytest

from grader.registry import BY_ID, PROBLEMS
from tests.meta import processes
from tests.meta.suite import problems_selected
from tests.mistakes import and_what_waits, behaviours_of, catalog, returning

# These run whole suites in subprocesses: far past the per-test default of 120 s on a loaded machine.
pytestmark = [pytest.mark.meta, pytest.mark.timeout(1800)]

MISTAKES = [m for p in PROBLEMS for m in returning(catalog(p.id))]  # one that loops: tests/meta/test_loops.py
HELD_OUT_SEED = 11  # grader/grading_budget.py was calibrated on seeds 1, 2 and 3


@pytest.fixture(scope="module")
def results(request, tmp_path_factory):
    out = tmp_path_factory.mktemp("mutation") / "results.json"
    only = [f"--problem={p}" for p in problems_selected(request, "results") or ()]
    # its CPU seconds, its shards' included, and nothing of it left running past them (tests/meta/processes.py)
    processes.run([sys.executable, "-m", "tests.meta.mutation", "--profile", "grade", "--grading-seed",
                   str(HELD_OUT_SEED), "--every-test", "--json", str(out), *only], cpu_seconds=1800)
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


def test_each_mistakes_costs_name_its_problems_behaviours():
    for problem in {m.problem for m in MISTAKES}:
        module = importlib.import_module(f"tests.mistakes.{problem}")
        ids = {m.id for m in catalog(problem)}
        assert set(module.COSTS) == ids, (f"tests/mistakes/{problem}.py: COSTS should name each mistake once; "
                                          f"missing {sorted(ids - set(module.COSTS))}, unknown "
                                          f"{sorted(set(module.COSTS) - ids)}")
        names = {b.name for b in BY_ID[problem].behaviours}
        unknown = {name for costs in module.COSTS.values() for name in costs} - names
        assert not unknown, f"tests/mistakes/{problem}.py: COSTS names no behaviour of {problem}: {sorted(unknown)}"


@pytest.mark.parametrize("mistake", MISTAKES, ids=lambda m: f"{m.problem}:{m.id}")
def test_mistake_costs_only_what_it_breaks(results, mistake):
    failed = sorted(results[(mistake.problem, mistake.id)].get("failed", {}))
    beyond = behaviours_of(mistake.problem, failed) - and_what_waits(mistake.problem, set(mistake.costs))
    assert not beyond, (
        f"{mistake.problem}:{mistake.id} ({mistake.description}) fails tests of behaviours it should not touch: "
        f"{sorted(beyond)} (its COSTS: {list(mistake.costs)}; failed: {failed}). Make those tests check one thing, "
        f"or, if the mistake really breaks them, add them to its COSTS in tests/mistakes/{mistake.problem}.py")
