"""assignment/ and reference/ expose the same API; handout, registry and test markers agree; every graded test
function has exactly one weight."""

import ast
import importlib
import inspect
import re
from collections import Counter

import pytest

from grader.registry import BEHAVIOURS, BY_ID, PROBLEMS, WHOLE_DOMAIN_TESTED, weight_table
from grader.staff import checklist
from tests.meta.suite import ROOT, problems_with_tests

pytestmark = pytest.mark.meta


def _public_api(package: str, module: str) -> dict[str, str]:
    """name -> signature text of every public name (`__all__`); for classes, their public methods too."""
    mod = importlib.import_module(f"{package}.{module}")
    api = {}
    for name in mod.__all__:
        obj = getattr(mod, name)
        if inspect.isclass(obj):
            api[name] = f"class({', '.join(b.__name__ for b in obj.__bases__)})"
            for attr, member in vars(obj).items():
                if callable(member) and (not attr.startswith("_") or attr in ("__init__", "__torch_dispatch__")):
                    api[f"{name}.{attr}"] = str(inspect.signature(member))
        elif callable(obj):
            api[name] = str(inspect.signature(obj))
    return api


@pytest.mark.parametrize("module", problems_with_tests())
def test_assignment_and_reference_expose_the_same_api(module):
    assert _public_api("assignment", module) == _public_api("reference", module)


@pytest.mark.parametrize("module", problems_with_tests())
def test_every_stub_function_raises_not_implemented(module):
    tree = ast.parse((ROOT / "assignment" / f"{module}.py").read_text())
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    solved = [f.name for f in functions if not any(
        isinstance(n, ast.Raise) and "NotImplementedError" in ast.unparse(n) for n in ast.walk(f))]
    assert not solved, f"stub functions in assignment/{module}.py that do not raise NotImplementedError: {solved}"


def _handout_problems() -> list[tuple[str, str, int]]:
    text = (ROOT / "handout.md").read_text()
    return [(m[0], m[1], int(m[2])) for m in re.findall(r"^## Problem \((\w+)\): (.+) \((\d+) points\)$", text, re.M)]


def test_handout_lists_the_registry_problems_in_order():
    assert _handout_problems() == [(p.id, p.title, p.points) for p in PROBLEMS]


def test_every_test_module_carries_its_problem_marker():
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        problem = path.stem.removeprefix("test_")
        assert problem in BY_ID, f"{path.name} is not named after a registered problem"
        tree = ast.parse(path.read_text())
        marks = [ast.unparse(n.value) for n in tree.body if isinstance(n, ast.Assign)
                 and any(getattr(t, "id", None) == "pytestmark" for t in n.targets)]
        assert marks and f"pytest.mark.{problem}" in marks[0], f"{path.name} lacks pytestmark = pytest.mark.{problem}"


def test_every_problem_with_tests_has_a_stub_and_a_reference():
    for problem in problems_with_tests():
        assert (ROOT / "assignment" / f"{problem}.py").exists()
        assert (ROOT / "reference" / f"{problem}.py").exists()


# -- the weights: every graded test function in exactly one behaviour, the handout's tables ---------------

def graded_test_functions(problem: str) -> set[str]:
    """The test functions of the problem's test file that count: all of them but those marked `gpu`."""
    module = importlib.import_module(f"tests.test_{problem}")
    return {name for name, obj in vars(module).items() if name.startswith("test_") and callable(obj)
            and not any(mark.name == "gpu" for mark in getattr(obj, "pytestmark", []))}


def test_every_problem_has_behaviours_and_only_problems_do():
    assert list(BEHAVIOURS) == [p.id for p in PROBLEMS], \
        "grader/registry.py BEHAVIOURS: one entry per problem, in order"


@pytest.mark.parametrize("problem", problems_with_tests())
def test_every_graded_test_function_has_exactly_one_behaviour(problem):
    graded = graded_test_functions(problem)
    named = Counter(test for b in BY_ID[problem].behaviours for test in b.tests)
    unweighted = sorted(graded - set(named))
    assert not unweighted, (
        f"tests/test_{problem}.py has test functions that no behaviour weighs: {unweighted}. Add each to a "
        f"behaviour of '{problem}' in grader/registry.py BEHAVIOURS (or give it a behaviour of its own, its points "
        f"taken from the others: they add up to the problem's {BY_ID[problem].points}), then regenerate the "
        f"problem's weight table in handout.md")
    twice = sorted(test for test, count in named.items() if count > 1)
    assert not twice, f"'{problem}': test functions in more than one behaviour in grader/registry.py: {twice}"
    unknown = sorted(set(named) - graded)
    assert not unknown, (
        f"'{problem}' behaviours in grader/registry.py name test functions that tests/test_{problem}.py does not "
        f"have, or GPU tests (worth nothing): {unknown}")


def test_the_handout_shows_each_problems_weight_table():
    tables = checklist.handout_weight_tables()
    for problem in PROBLEMS:
        assert tables.get(problem.id) == weight_table(problem), (
            f"handout.md, problem {problem.id}: the table under '### Points' is not the registry's "
            f"(`python -m grader.staff.checklist --write` rewrites the tables); it should be\n"
            f"{weight_table(problem)}")




def _without_points(text: str, problem: str, heading_too: bool) -> str:
    """handout.md's `text` with `problem`'s points block cut (its `### Points` heading too, with `heading_too`)."""
    start = text.index(f"## Problem ({problem}):")
    body = text.index("\n### Points\n", start) + (0 if heading_too else len("\n### Points\n"))
    return text[:body] + text[text.index("\n", text.index("| **total** |", body)):]


@pytest.mark.parametrize("problem", [PROBLEMS[0].id, PROBLEMS[5].id, PROBLEMS[-1].id])  # first, inside, last
def test_writing_the_tables_writes_a_new_problems_points_and_touches_no_other_section(problem):
    handout = (ROOT / "handout.md").read_text()
    assert checklist.with_weight_tables(handout) == handout
    for heading_too in (False, True):
        assert checklist.with_weight_tables(_without_points(handout, problem, heading_too)) == handout, (
            f"{problem}'s ### Points written from the registry{' (and its heading)' * heading_too}")
    first = PROBLEMS[0]
    wrong = handout.replace(f"({first.points} points)", f"({first.points + 1} points)", 1)
    wrong = re.sub(r"^There are \w+ problems", "There are two problems", wrong, flags=re.M)
    assert checklist.with_weight_tables(wrong) == handout, "the headings' points and the number of problems too"


def test_writing_the_tables_of_a_problem_without_a_section_names_the_step():
    handout = (ROOT / "handout.md").read_text()
    problem = PROBLEMS[3].id
    with pytest.raises(SystemExit, match=rf"no section '## Problem \({problem}\): \.\.\.' .*step 7"):
        checklist.with_weight_tables(handout.replace(f"## Problem ({problem}):", "## Problem (gone):"))

# -- adding a problem: docs/contributing.md's checklist, each part by name ---------------------------------------------

@pytest.mark.parametrize("problem", [p.id for p in PROBLEMS])
def test_every_problem_has_every_part_of_the_checklist(problem):
    lacks = checklist.missing(problem)
    assert not lacks, f"{problem} lacks (grader/staff/checklist.py, docs/contributing.md): {lacks}"


def test_the_checklist_names_what_a_new_problem_lacks():
    """Every step but the points' sum (a property of all the problems, which a new one does not change until
    it is in the registry) names a problem that does not exist."""
    lacks = [int(line.split(".")[0]) for line in checklist.missing("ra_not_a_problem")]
    assert lacks == [i for i, step in enumerate(checklist.STEPS, 1) if step.missing is not checklist._hundred]


def test_the_readme_lists_the_checklist():
    readme = (ROOT / checklist.CONTRIBUTING).read_text()
    assert "## Adding a problem" in readme and checklist.with_readme_section(readme) == readme, (
        "docs/contributing.md's 'Adding a problem' is not grader/staff/checklist.py's STEPS: "
        "`python -m grader.staff.checklist --write` rewrites it")


# -- no slip costs much: the largest share of one test item ----------------------------------------------------

MAX_ITEM_POINTS = 1.5  # the handout's "How points are computed": one failing item never costs more


@pytest.fixture(scope="module")
def collected_items() -> list[tuple[str, str]]:
    """Every pytest item of the problems' tests, as (problem, "test_x[id]") (the reference's collection)."""
    import subprocess
    import sys

    from tests.meta.suite import grader_env

    collected = subprocess.run([sys.executable, "-m", "pytest", "--impl", "reference", "--collect-only", "-q",
                                "-p", "no:cacheprovider"], cwd=ROOT, env=grader_env(), capture_output=True,
                               text=True, timeout=600, check=True).stdout
    return [(line.split("::")[0].removeprefix("tests/test_").removesuffix(".py"), line.split("::")[-1])
            for line in collected.splitlines() if "::" in line and line.startswith("tests/test_")]


def test_no_test_item_carries_more_than_one_and_a_half_points(collected_items):
    items = Counter((problem, name.split("[")[0]) for problem, name in collected_items)
    heavy = []
    for problem in PROBLEMS:
        for b in problem.behaviours:
            ran = [f for f in b.tests if items[problem.id, f]]
            share = max((b.points / len(ran) / items[problem.id, f] for f in ran), default=0.0)
            if share > MAX_ITEM_POINTS + 1e-9:
                heavy.append(f"{problem.id}: {b.name} ({share:g} points in one item of {ran})")
    assert not heavy, "split these behaviours (more test functions, or parametrized items): " + "; ".join(heavy)


def test_every_assert_of_the_suite_says_what_failed():
    """Grading runs pytest with --assert=plain (grader/runner.py): an assert's message is all a failure shows."""
    bare = []
    for path in sorted((ROOT / "tests").glob("*.py")) + sorted((ROOT / "tests").glob("*/*.py")):
        if path.parent.name not in ("meta", "benchmarks", "mistakes"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            bare += [f"{path.relative_to(ROOT)}:{n.lineno}" for n in ast.walk(tree) if isinstance(n, ast.Assert)
                     and n.msg is None]
    assert not bare, f"asserts without a message: {bare}"


def test_every_grading_budget_names_a_generated_test_and_gives_a_reason():
    from grader import grading_budget

    generated = {name: obj for problem in problems_with_tests()
                 for name, obj in vars(importlib.import_module(f"tests.test_{problem}")).items()
                 if name.startswith("test_") and getattr(obj, "is_hypothesis_test", False)}
    unknown = sorted(set(grading_budget.BUDGET) - set(generated))
    assert not unknown, f"grader/grading_budget.py budgets tests that are not generated tests of the suite: {unknown}"
    for name, (examples, why) in grading_budget.BUDGET.items():
        # what it ran before budgets: 60 at most, or ten times FLOOR with settings of its own (mini_einops' MANY;
        # hypothesis marks a test it applied settings to)
        before = 10 * grading_budget.FLOOR if getattr(generated[name], "_hypothesis_internal_settings_applied",
                                                      False) else 60
        assert grading_budget.MINIMUM <= examples <= before and examples != grading_budget.FLOOR, (
            f"{name}: a budget is at least MINIMUM, at most the {before} of before, and not FLOOR (which needs no "
            f"entry)")
        assert len(why.split()) >= 5, f"{name}: the budget's reason, from the mutation data, is missing"


def test_the_worker_imports_only_what_its_tree_holds():
    """Every module of the grader that the worker imports, at its top or inside a function, and the modules those
    import in turn, is copied into its read-only tree (grader/harness/boundary.py WORKER): one missing there lets
    the in-process and isolated runs pass and every worker of a real grading exit at its start."""
    from grader.harness import boundary

    seen, todo = set(), ["grader/harness/worker.py"]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for node in ast.walk(ast.parse((ROOT / path).read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [f"{node.module}.{a.name}" for a in node.names] + [node.module] \
                if isinstance(node, ast.ImportFrom) and node.module else []
            for name in names:
                for candidate in (name.replace(".", "/") + ".py", name.replace(".", "/") + "/__init__.py"):
                    if name.startswith("grader") and (ROOT / candidate).is_file():
                        todo.append(candidate)
    missing = sorted(p for p in seen if p not in boundary.WORKER)
    assert not missing, f"the worker imports these, which its tree lacks (boundary.WORKER_HARNESS): {missing}"


def test_the_boundary_lists_agree():
    # grader/harness/boundary.py is the one list; what else states a part of it must say the same
    from grader.harness import boundary

    def inside(path, folders):
        return any(path == f or path.startswith(f + "/") for f in folders)

    setup_tree = ast.literal_eval(re.search(r"^TREE = (\(.*?\))", (ROOT / "setup.py").read_text(), re.M).group(1))
    assert setup_tree == boundary.WORKSPACE, "setup.py TREE: the wheel's copy of the tree is the grading workspace"
    assert not [w for w in boundary.WORKER if inside(w, boundary.PRIVATE + boundary.STAFF)], \
        "the worker sees nothing private or staff's"
    assert set(boundary.SOLUTIONS) <= set(boundary.PRIVATE) & set(boundary.WITHHELD), \
        "a solution is private to the grader's user and withheld from the release"
    assert all(inside(w, boundary.WORKSPACE) or w.startswith("grader/") for w in boundary.WORKER)
    missing = [p for p in (*boundary.PRIVATE, *boundary.STAFF, *boundary.WORKER, *boundary.RELEASED, *boundary.PACKAGED)
               if p not in (".git", "build") and not boundary.locate(p, ROOT).exists()]
    assert not missing, f"grader/harness/boundary.py names paths that do not exist: {missing}"


def _item(name: str) -> tuple[str, str]:
    function, _, item = name.partition("[")
    return function, item[:-1]


@pytest.mark.parametrize("problem", problems_with_tests())
def test_gates_wait_for_generated_tests_and_every_table_passable_item_waits(problem, collected_items):
    """grader/registry.py's gates: every selector (`requires`, `fixed`'s keys and what they wait for) names items
    the tests have; what an item waits for is generated tests (or a behaviour whose whole domain is tested); and
    every item of a test that hypothesis does not drive waits for some, unless WHOLE_DOMAIN_TESTED."""
    from grader.registry import selects

    module = importlib.import_module(f"tests.test_{problem}")
    names = [_item(name) for of, name in collected_items if of == problem]
    generated = {f for f, _ in names if getattr(getattr(module, f), "is_hypothesis_test", False)}
    whole_domain = {t for b in BY_ID[problem].behaviours if (problem, b.name) in WHOLE_DOMAIN_TESTED for t in b.tests}
    for b in BY_ID[problem].behaviours:
        for key in b.fixed:
            assert any(selects(key, f, item) for f, item in names), f"{problem}: {b.name!r}: no item is {key!r}"
        for text in {s for waits in (b.requires, *b.fixed.values()) for s in waits}:
            chosen = [f for f, item in names if selects(text, f, item)]
            assert chosen, f"{problem}: {b.name!r} waits for {text!r}, which selects no test item"
            assert set(chosen) <= generated | whole_domain, (
                f"{problem}: {b.name!r} waits for {text!r}, which is not a generated test: a table passes it too")
        if (problem, b.name) in WHOLE_DOMAIN_TESTED:
            continue
        for f, item in names:
            if f in b.tests and f not in generated:
                assert b.gate(f, item), (f"{problem}: {b.name!r}: {f}[{item}] has fixed inputs, which a table of "
                                         "answers passes: give it `requires` or a key in `fixed`")


def test_an_item_belongs_to_the_problem_of_its_file_whatever_its_ids():
    """Grading reads an item's problem from its test file, never from its keywords (which hold its parametrization's
    ids: an id that is a problem's name, adamw, must not move the item to that problem)."""
    from types import SimpleNamespace

    from grader.harness.time_limit import problem_of

    assert problem_of(SimpleNamespace(nodeid="tests/test_flops.py::test_counts[adamw]")) == "flops"
    assert problem_of(SimpleNamespace(nodeid="test_memory.py::test_x[tensors-precision]")) == "memory"
    assert problem_of(SimpleNamespace(nodeid="tests/meta/test_grader.py::test_x[flops]")) is None
    assert problem_of(SimpleNamespace(nodeid="tests/test_flops_extra.py::test_x")) is None


def test_the_registry_names_the_tensor_ops_the_strategies_draw():
    from grader import registry
    from tests.strategies.tensors import TENSOR_OPS

    assert registry.BY_ID["tensors"].behaviours[1].fixed and {*TENSOR_OPS, *registry.SPLIT_OP_PARTS.values()} == {
        key.split("[")[1].split()[0] for key in registry.BY_ID["tensors"].behaviours[1].fixed} - {"no-ops"}
