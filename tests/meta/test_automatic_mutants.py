"""The automatic mutants (tests/mistakes/automatic.py) are what they say: one change each, in the reference's
code and nowhere else, and swapped in they change what the reference's functions answer. And the budgets under
FLOOR (grader/grading_budget.py) lose none of them: every mutant that the grade profile caught before them (the
`floor` profile: FLOOR examples wherever a budget is lower) is caught within them, under a grading seed and a
sample of mutants that they were not calibrated on; and so for the differential tests' budgets, with the
mistake in the package under test."""

import ast
import inspect
import json
import subprocess
import sys

import pytest

from reference import flops as reference_flops
from tests.meta import processes
from tests.mistakes import find_mistake
from tests.mistakes.automatic import automatic, sample

pytestmark = pytest.mark.meta


def test_each_problem_has_mutants_named_by_their_line_and_change():
    mutants = automatic("flops")
    assert len(mutants) > 50 and len({m.id for m in mutants}) == len(mutants)
    source = inspect.getsource(reference_flops).splitlines()
    for mutant in mutants:
        line = int(mutant.id.rsplit("-L", 1)[1])
        assert mutant.description.startswith(f"line {line}: ")
        assert not source[line - 1].lstrip().startswith(('"""', "#")), f"{mutant}: a docstring or comment"


def test_a_mutant_changes_one_place_and_the_answer_with_it():
    wrong = [m for m in automatic("flops") if m.replaces == ("matmul_flops",) and "* -> /" in m.description]
    assert wrong, "matmul_flops (2 * b * d * k) has a * to make a /"
    mistake = find_mistake(f"flops:{wrong[0].id}")
    assert reference_flops.matmul_flops(2, 3, 4) == 48
    assert mistake.replaces["matmul_flops"](2, 3, 4) != 48
    functions = {name: value for name, value in mistake.replaces.items() if inspect.isfunction(value)}
    changed = [name for name, value in functions.items()
               if value.__code__.co_code != inspect.unwrap(getattr(reference_flops, name)).__code__.co_code]
    assert changed == ["matmul_flops"], f"the functions changed: {changed}"


def test_the_sample_is_the_same_each_time_and_in_order():
    mutants = automatic("tensors")
    picked = sample(mutants, 20)
    assert picked == sample(mutants, 20) and len(picked) == 20
    assert [mutants.index(m) for m in picked] == sorted(mutants.index(m) for m in picked)


@pytest.mark.parametrize("problem", ["tensors", "roofline", "adamw"])
def test_every_mutant_compiles(problem):
    for mutant in sample(automatic(problem), 15, seed=1):
        mistake = find_mistake(f"{problem}:{mutant.id}")
        assert mistake.replaces, mutant
        assert all(not isinstance(v, ast.AST) for v in mistake.replaces.values())


HELD_OUT_SEED = 11  # the budgets were calibrated on grading seeds 1, 2 and 3, and on the sample of sample seed 0
HELD_OUT_SAMPLE = dict(size=100, seed=1)


def caught_under(profile: str, options: list[str], out) -> set[str]:
    """The mistakes or mutants that `python -m tests.meta.mutation OPTIONS` catches under `profile` and the
    held-out grading seed."""
    processes.run([sys.executable, "-m", "tests.meta.mutation", *options, "--profile", profile, "--grading-seed",
                   str(HELD_OUT_SEED), "--json", str(out)], cpu_seconds=850, stdout=subprocess.DEVNULL)
    return {f"{r['problem']}:{r['id']} ({r['description']})" for r in json.loads(out.read_text()) if r["caught"]}


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_budgets_catch_every_automatic_mutant_that_floor_caught(tmp_path):
    options = ["--automatic", "--sample", str(HELD_OUT_SAMPLE["size"]), "--sample-seed", str(HELD_OUT_SAMPLE["seed"]),
               "--naming-first"]
    caught = {profile: caught_under(profile, options, tmp_path / f"{profile}.json") for profile in ("floor", "grade")}
    assert len(caught["floor"]) >= HELD_OUT_SAMPLE["size"] * 0.7, "most automatic mutants are caught"
    lost = sorted(caught["floor"] - caught["grade"])
    assert not lost, f"caught with FLOOR examples a test, not within the budgets under it: {lost}"


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_differential_tests_budgets_catch_what_floor_caught(tmp_path):
    # the differential tests alone, the mistake in the package under test: the catalogue and a sample of mutants
    lost = []
    for what, options in (("catalogue", []), ("mutants", ["--automatic", "--sample", str(2 * HELD_OUT_SAMPLE["size"]),
                                                          "--sample-seed", str(HELD_OUT_SAMPLE["seed"])])):
        caught = {profile: caught_under(profile, ["--differential", *options], tmp_path / f"{what}-{profile}.json")
                  for profile in ("floor", "grade")}
        assert len(caught["floor"]) >= 100, f"{what}: the differential tests catch many"
        lost += sorted(caught["floor"] - caught["grade"])
    assert not lost, f"caught with FLOOR examples a differential test, not within the budgets under it: {lost}"
