"""assignment/ and reference/ expose the same API; handout, registry and test markers agree."""

import ast
import importlib
import inspect
import re

import pytest

from tests.meta.suite import ROOT, problems_with_tests
from tests.registry import BY_ID, PROBLEMS

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
