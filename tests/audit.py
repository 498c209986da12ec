"""Static audits: what a solution's source may not mention (the oracle it is graded against), and what
it must use. The source is read as text from disk; the code under test is never imported for this."""

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def source_path(package: str, module: str) -> Path:
    return ROOT / package / f"{module}.py"


def parsed(package: str, module: str) -> tuple[str, ast.Module]:
    """The module's source and its syntax tree, parsed once for each text (the audits ask at each example). A
    source that does not parse fails the audit as the submission's slip, not as an error of the grading code."""
    path = source_path(package, module)
    text = path.read_text(encoding="utf-8")
    try:
        return text, _parse(text, str(path))
    except SyntaxError as exc:
        pytest.fail(f"{module}.py does not parse (line {exc.lineno}: {exc.msg}), so its audit cannot read it",
                    pytrace=False)


@functools.lru_cache(maxsize=16)
def _parse(text: str, filename: str) -> ast.Module:
    return ast.parse(text, filename=filename)


def forbidden_mentions(package: str, module: str, forbidden: tuple[str, ...]) -> list[str]:
    """Lines of the module (docstrings and comments aside) whose names, attributes, imports or string
    literals contain any of `forbidden`, as "line N: text"."""
    text, tree = parsed(package, module)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
    }
    hits = set()
    for node in ast.walk(tree):
        words: list[str] = []
        if isinstance(node, ast.Name):
            words = [node.id]
        elif isinstance(node, ast.Attribute):
            words = [node.attr]
        elif isinstance(node, ast.alias):
            words = [node.name, node.asname or ""]
        elif isinstance(node, ast.ImportFrom):
            words = [node.module or ""]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            words = [node.value]
        if any(f.lower() in w.lower() for w in words for f in forbidden):
            line = getattr(node, "lineno", 0)
            hits.add((line, text.splitlines()[line - 1].strip() if line else ""))
    return [f"line {n}: {t}" for n, t in sorted(hits)]
