"""Which code may import which (issue 23): the suite's test modules are run by pytest, never imported. What
the staff tools share with a problem's tests lives in tests/common/, which both import. Meta-tests, which
inspect the suite itself, are the one exception."""

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
