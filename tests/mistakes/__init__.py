"""Catalogs of plausible wrong solutions, one module per problem: what the suite must catch.

Each `Mistake` replaces one or more of the reference's public names with a wrong version. The meta-test
`tests/meta/test_mistakes.py` runs the problem's tests (not the differential ones: the oracle tests a
student sees must catch it) against the reference with the mistake swapped in, and asserts they fail:

    pytest --impl reference --mutant flops:macs -m "flops and not differential"

The catalogs double as TA documentation of what the suite catches and what students get wrong.
"""

import ast
import importlib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Mistake:
    problem: str
    id: str
    description: str
    replaces: dict  # public name -> wrong implementation


def catalog(problem: str) -> list[Mistake]:
    """The mistakes catalogued for `problem` ([] if it has no catalog yet)."""
    try:
        module = importlib.import_module(f"tests.mistakes.{problem}")
    except ModuleNotFoundError:
        return []
    return list(module.MISTAKES)


def find_mistake(spec: str) -> Mistake:
    """`spec` is "problem:mistake_id" (or a nonsense implementation's id, tests/mistakes/nonsense.py, or an
    automatic mutant's, tests/mistakes/automatic.py)."""
    problem, _, mistake_id = spec.partition(":")
    if mistake_id.startswith("auto-"):  # tests/mistakes/automatic.py
        return importlib.import_module("tests.mistakes.automatic").build(problem, mistake_id)
    found = catalog(problem)
    if mistake_id.startswith(("nonsense-", "core-")):  # not mistakes: tests/meta/test_nonsense.py's
        found = importlib.import_module("tests.mistakes.nonsense").nonsense(problem)
    for mistake in found:
        if mistake.id == mistake_id:
            return mistake
    known = ", ".join(f"{problem}:{m.id}" for m in catalog(problem)) or "none"
    raise ValueError(f"unknown mistake {spec!r}; known for {problem!r}: {known}")


def planted_source(problem: str, mistake_ids: list[str]) -> str:
    """The source of a `problem` module that is the reference with the mistakes `mistake_ids` swapped in: the
    reference's source; `ref`, a snapshot of its names (what the catalogue's `ref.` means); the catalogue's
    imports and top-level definitions (not MISTAKES, not the reference's own names); then each replaced name
    bound to its mistake."""
    reference = (ROOT / "reference" / f"{problem}.py").read_text()
    defined = {n.name for n in ast.parse(reference).body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    catalogue = (ROOT / "tests" / "mistakes" / f"{problem}.py").read_text()
    lines = catalogue.splitlines()
    kept = []
    for node in ast.parse(catalogue).body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("reference", "tests"):
            continue
        if isinstance(node, ast.Assign | ast.Expr | ast.AnnAssign):  # MISTAKES, the docstring
            continue
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in defined:
            continue
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        kept.append("\n".join(lines[start - 1:node.end_lineno]))
    bindings = []
    for mistake_id in mistake_ids:
        mistake = find_mistake(f"{problem}:{mistake_id}")
        for name, wrong in mistake.replaces.items():
            assert wrong.__name__ not in defined, f"{problem}:{mistake_id}: {wrong.__name__} is a reference name"
            bindings.append(f"{name} = {wrong.__name__}  # planted: {problem}:{mistake_id}")
    return "\n".join([reference, "", "# -- planted mistakes (tests/meta/test_class_report.py) --",
                      "import types as _planted_types", "",
                      "ref = _planted_types.SimpleNamespace(**dict(globals()))", "", *kept, "", *bindings, ""])
