"""Which code may import which (issue 23), read from the code's AST:

1. the suite's test modules are run by pytest, never imported. What the staff tools share with a problem's
   tests lives in tests/common/, which both import. Meta-tests, which inspect the suite itself, are the one
   exception;
2. `tests` may import `grader`; the grader imports the suite only where it runs it (the worker's scenarios,
   pytest's plugin), in the fingerprints and in the course staff's tools (the catalogue, strategies,
   tests/common, scenarios).
"""

import ast
from pathlib import Path

import pytest

from tests.meta.suite import ROOT

pytestmark = pytest.mark.meta

CHECKED = ["grader", "tests", "assignment", "reference", "conftest.py", "setup.py"]


def python_files() -> list[Path]:
    files = []
    for entry in CHECKED:
        path = ROOT / entry
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path] * path.exists()
    return [f for f in files if "meta" not in f.relative_to(ROOT).parts[:2]]


def imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [(node.lineno, node.module)] + [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return found


def test_nothing_outside_the_meta_tests_imports_a_test_module():
    offenders = []
    for path in python_files():
        for line, module in imported_modules(ast.parse(path.read_text(), str(path))):
            if module.rsplit(".", 1)[-1].startswith("test_"):
                offenders.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not offenders, "a test module is run by pytest, never imported; move what is shared to tests/common/: " \
        + "; ".join(offenders)


# The grader imports the suite only where it runs it: the worker runs the scenarios; pytest's plugin finds the
# suite it serves and, for a TA's --mutant, the catalogue; the fingerprints and the staff tools read the catalogue,
# the strategies, what the tests share (tests/common) and the scenarios. Everything else of the grader stands
# without tests/.
GRADER_READS_OF_THE_SUITE = {
    "grader/harness/worker.py": ("tests", "tests.scenarios"),
    "grader/harness/plugin.py": ("tests", "tests.mistakes"),
}
STAFF_READS_OF_THE_SUITE = ("tests", "tests.mistakes", "tests.strategies", "tests.common", "tests.scenarios")


def dynamically_imported(tree: ast.AST) -> list[tuple[int, str]]:
    """importlib.import_module("...") with a constant name (an f-string: its constant start)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module":
            name = node.args[0] if node.args else None
            if isinstance(name, ast.JoinedStr) and name.values and isinstance(name.values[0], ast.Constant):
                name = name.values[0]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                found.append((node.lineno, name.value.rstrip(".")))
    return found


def test_the_grader_imports_from_tests_only_what_it_runs():
    from grader.harness import boundary

    readers = [p for p in boundary.STAFF if p.startswith("grader/")] + ["grader/fingerprints"]
    offenders = []
    for path in sorted((ROOT / "grader").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("grader/staff/samples/"):
            continue  # submissions, not the grader
        allowed = GRADER_READS_OF_THE_SUITE.get(rel, ())
        if any(rel == s or rel.startswith(s + "/") for s in readers):
            allowed = STAFF_READS_OF_THE_SUITE
        tree = ast.parse(path.read_text(), str(path))
        for line, module in imported_modules(tree) + dynamically_imported(tree):
            if module.partition(".")[0] != "tests":
                continue
            if not any(module == a or (a != "tests" and module.startswith(a + ".")) for a in allowed):
                offenders.append(f"{rel}:{line} imports {module}")
    assert not offenders, ("the grader imports the suite only where it runs it (GRADER_READS_OF_THE_SUITE, "
                           "STAFF_READS_OF_THE_SUITE): " + "; ".join(offenders))


def test_released_modules_import_withheld_ones_only_inside_functions():
    """boundary.RUN_WHERE_PRESENT: a released module that runs a withheld one (the catalogue, for the fingerprints
    and a TA's --mutant) imports it where it is called, never at its top: the student release, which lacks it,
    imports the module all the same."""
    from grader.harness import boundary

    offenders = []
    for rel, modules in boundary.RUN_WHERE_PRESENT.items():
        tree = ast.parse((ROOT / rel).read_text(), rel)
        inside = {id(node) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                  for node in ast.walk(f)}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom | ast.Import) and id(node) not in inside:
                names = [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                offenders += [f"{rel}:{node.lineno} imports {n} at its top" for n in names
                              if any(n == m or n.startswith(m + ".") for m in modules)]
    assert not offenders, offenders
