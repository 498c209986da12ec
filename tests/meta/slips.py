"""Slips planted in a copy of the reference, as a student would leave them: an endless loop, or a function
left unfinished (tests/meta/test_grader.py, tests/meta/test_gradescope_image.py)."""

import ast

LOOP = ("while True:", "    pass")
UNFINISHED = ("raise NotImplementedError",)


def planted(source: str, statement: tuple[str, ...], names: set[str] | None = None) -> str:
    """`source` with `statement` (its lines) first in the body of each public top-level function named in `names`
    (every one, without `names`)."""
    lines = source.splitlines()
    functions = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")
                 and (names is None or n.name in names)]
    assert names is None or {n.name for n in functions} == names, f"no such functions: {names}"
    for node in sorted(functions, key=lambda n: -n.lineno):
        first = node.body[0].lineno - 1
        indent = lines[first][:len(lines[first]) - len(lines[first].lstrip())]
        lines[first:first] = [indent + line for line in statement]
    return "\n".join(lines) + "\n"
