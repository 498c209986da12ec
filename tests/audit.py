"""Static audits: what a solution's code may not reach (the oracle it is graded against), and what it must use,
resolved through its imports and attributes (grader/reach.py), never by the substrings of its names. The source is
read from disk; the code under test is never imported for this."""

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


def reaching(package: str, module: str, names: tuple[str, ...], attributes: tuple[str, ...] = (),
             within: str | None = None) -> list[str]:
    """Lines of the module, as "line N: text", that reach any of `names` (dotted names: a module, or anything in
    it), resolved through its imports, aliases and attribute chains (grader/reach.py), or any attribute named in
    `attributes` (the last part of what it reaches, or a method of an object it cannot resolve: a tensor's) that
    the module does not define itself; with `within`, in the top-level function of that name alone. What the code
    reaches decides, never what a name or a string spells: a ContextVar named "flop_counter_depth" reaches
    contextvars.ContextVar."""
    text, tree = parsed(package, module)
    own_attributes, references = _analysed(text, str(source_path(package, module)))
    lines = range(1, len(text.splitlines()) + 1)
    if within is not None:
        found = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == within]
        lines = range(found[0].lineno, found[0].end_lineno + 1) if found else range(0)
    hits = set()
    for reference in references:
        last = reference.name.rpartition(".")[2]
        if reference.line in lines and (
                any(reference.name == n or reference.name.startswith(n + ".") for n in names)
                or last in attributes and last not in own_attributes):
            hits.add((reference.line, text.splitlines()[reference.line - 1].strip()))
    return [f"line {n}: {t}" for n, t in sorted(hits)]


@functools.lru_cache(maxsize=16)
def _analysed(text: str, filename: str) -> tuple[frozenset[str], tuple]:
    """The attributes the module assigns itself and every name it reaches (grader/reach.py), read once for each
    text: an audit asks at every example, and reading a module's references costs tens of milliseconds."""
    from grader import reach
    from grader.normalised import bound_names

    tree = _parse(text, filename)
    _, own_attributes = bound_names(tree) or (frozenset(), frozenset())
    return own_attributes, tuple(reach.references(tree))
