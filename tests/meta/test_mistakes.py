"""Every catalogued mistake is caught by its problem's oracle tests (tests/mistakes/), as the grader runs them: the
`grade` profile's budgets of examples (grader/grading_budget.py; a failure not shrunk), under a grading seed that is
none of the three the budgets were calibrated on; it fails tests of only the behaviours its catalogue's COSTS names
(and those that wait for them); and, graded as `grade` grades it (every behaviour run to its end, the gates
applied), the points it loses stay within the behaviours whose tests it fails: no row whose tests pass is held
back. The catalogue is graded once for the
whole session (tests/meta/catalogue.py, the `catalogue` fixture of tests/meta/conftest.py)."""

import importlib

import pytest

from grader.registry import BY_ID, PROBLEMS
from tests.meta.catalogue import HELD_OUT_SEED
from tests.mistakes import and_what_waits, behaviours_of, catalog, returning

pytestmark = [pytest.mark.meta, pytest.mark.timeout(3600)]  # the catalogue's grading: a backstop

MISTAKES = [m for p in PROBLEMS for m in returning(catalog(p.id))]  # one that loops: tests/meta/test_loops.py
POINTS_TOLERANCE = 1e-6  # points are sums of float shares (a behaviour's weight over its items): rounding only


def test_every_problem_with_tests_has_at_least_six_mistakes():
    from tests.meta.suite import problems_with_tests

    thin = {p: len(catalog(p)) for p in problems_with_tests() if len(catalog(p)) < 6}
    assert not thin, f"problems with fewer than six catalogued mistakes: {thin}"


@pytest.mark.parametrize("mistake", MISTAKES, ids=lambda m: f"{m.problem}:{m.id}")
def test_mistake_is_caught(catalogue, mistake):
    result = catalogue[(mistake.problem, mistake.id)]
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
def test_mistake_costs_only_what_it_breaks(catalogue, mistake):
    failed = sorted(catalogue[(mistake.problem, mistake.id)].get("failed", {}))
    beyond = behaviours_of(mistake.problem, failed) - and_what_waits(mistake.problem, set(mistake.costs))
    assert not beyond, (
        f"{mistake.problem}:{mistake.id} ({mistake.description}) fails tests of behaviours it should not touch: "
        f"{sorted(beyond)} (its COSTS: {list(mistake.costs)}; failed: {failed}). Make those tests check one thing, "
        f"or, if the mistake really breaks them, add them to its COSTS in tests/mistakes/{mistake.problem}.py")


@pytest.mark.parametrize("mistake", MISTAKES, ids=lambda m: f"{m.problem}:{m.id}")
def test_mistake_loses_points_only_where_its_tests_fail(catalogue, mistake):
    """Points, gates applied: a row whose tests all passed loses nothing. A gate (grader/registry.py `requires`,
    `fixed`) makes a table of answers or nonsense earn nothing, and names evidence of its own row's region, which a
    slip elsewhere does not fail: a row held back by a gate while its tests pass is a row to give evidence of its
    own (an audit's right answers, a valid call beside a refused one) or a gate to narrow to its region.
    `python -m tests.meta.fairness` grades one mistake and marks a row held by a gate."""
    result = catalogue[(mistake.problem, mistake.id)]
    assert not result["report_faults"], f"{mistake.problem}:{mistake.id}: its run's report: {result['report_faults']}"
    lost = {name: b["points"] - b["score"] for name, b in result["behaviours"].items()
            if not b["failed"] and b["score"] < b["points"] - POINTS_TOLERANCE}
    assert not lost, (
        f"{mistake.problem}:{mistake.id} ({mistake.description}), graded as `grade` grades it, loses points in "
        "behaviours whose tests all passed: " + ", ".join(f"{name!r} {points:.2f}" for name, points in lost.items())
        + f" (of {sum(lost.values()):.2f} points; the behaviours whose tests it fails: "
        f"{sorted(name for name, b in result['behaviours'].items() if b['failed'])}). A slip costs the rows whose "
        "tests it fails, nothing else: the gate that held these back waits for evidence of another region")
