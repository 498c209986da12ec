"""No function of the grader is longer than LONGEST lines unless the comment right above it says why (issue 54): a
long function is where a reader loses the thread, and where the next change is hard to review. The reason is a
comment block directly above the `def` (or its decorators) whose first line starts with "# Long:"; the test prints
every long function with its reason."""

import ast

import pytest

from tests.meta.suite import ROOT

pytestmark = pytest.mark.meta

LONGEST = 80
MARK = "# Long:"


def long_functions() -> list[tuple[str, int, str, str]]:
    """(path, line, name, reason) of every function of grader/ longer than LONGEST lines ("" where no reason)."""
    found = []
    for path in sorted((ROOT / "grader").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("grader/staff/samples/"):
            continue  # submissions, not the grader
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines), rel)):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if node.end_lineno - node.lineno + 1 <= LONGEST:
                continue
            above = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 2  # index of the line above
            comment = []
            while above >= 0 and lines[above].strip().startswith("#"):
                comment.insert(0, lines[above].strip())
                above -= 1
            reason = " ".join(line.lstrip("# ") for line in comment) if comment and comment[0].startswith(MARK) else ""
            found.append((rel, node.lineno, node.name, reason))
    return found


def test_every_long_function_says_why():
    found = long_functions()
    for rel, line, name, reason in found:
        print(f"{rel}:{line} {name}: {reason or 'NO REASON'}")
    without = [f"{rel}:{line} {name}" for rel, line, name, reason in found if not reason]
    assert not without, (f"functions longer than {LONGEST} lines with no '{MARK} ...' comment above them saying why "
                         f"(or split them): {without}")
