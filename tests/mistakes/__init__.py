"""Catalogs of plausible wrong solutions, one module per problem: what the suite must catch.

Each `Mistake` replaces one or more of the reference's public names with a wrong version. The meta-test
`tests/meta/test_mistakes.py` runs the problem's tests (not the differential ones: the oracle tests a
student sees must catch it) against the reference with the mistake swapped in, and asserts they fail:

    pytest --impl reference --mutant flops:macs -m "flops and not differential"

The catalogs double as TA documentation of what the suite catches and what students get wrong.

A slip costs the behaviours it breaks and nothing else: each catalogue's `COSTS` names, for each mistake, the
behaviours (grader/registry.py) whose tests it may fail; the behaviours that wait for one of those (`requires`)
may lose their points with them. tests/meta/test_mistakes.py fails when a mistake costs any other behaviour.

A mistake that `loops` never returns: it is graded only as the grader grades, in a worker whose calls have a time
limit, where it must cost what leaving its function unfinished costs (tests/meta/test_loops.py); the in-process
runs of the catalogue (tests/meta/mutation.py, the fingerprints' answers, compare) leave it out.
"""

import ast
import dataclasses
import importlib
from dataclasses import dataclass
from pathlib import Path

from grader.registry import BY_ID, selector

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Mistake:
    problem: str
    id: str
    description: str
    replaces: dict  # public name -> wrong implementation
    costs: tuple[str, ...] = ()  # the behaviours whose tests it may fail (its catalogue's COSTS)
    loops: bool = False  # it never returns: graded isolated alone, never run in-process


def catalog(problem: str) -> list[Mistake]:
    """The mistakes catalogued for `problem` ([] if it has no catalog yet), each with its costs."""
    try:
        module = importlib.import_module(f"tests.mistakes.{problem}")
    except ModuleNotFoundError:
        return []
    costs = getattr(module, "COSTS", {})
    return [dataclasses.replace(m, costs=tuple(costs.get(m.id, ()))) for m in module.MISTAKES]


def returning(mistakes: list[Mistake]) -> list[Mistake]:
    """The mistakes that return (those that can run in-process): all but those that loop."""
    return [m for m in mistakes if not m.loops]


def behaviours_of(problem: str, tests: list[str]) -> set[str]:
    """The behaviours of `problem` that tests (function names, pytest ids allowed: "test_x[param]") belong to."""
    owner = {test: b.name for b in BY_ID[problem].behaviours for test in b.tests}
    return {owner[test.partition("[")[0]] for test in tests}


def waited_for(problem: str, behaviour) -> set[str]:
    """The behaviours of `problem` whose tests `behaviour`'s gates name (grader/registry.py `requires`, `fixed`)."""
    owner = {test: b.name for b in BY_ID[problem].behaviours for test in b.tests}
    texts = (*behaviour.requires, *(w for waits in behaviour.fixed.values() for w in waits))
    return {owner[selector(text)[0]] for text in texts}


def and_what_waits(problem: str, behaviours: set[str]) -> set[str]:
    """`behaviours` and every behaviour with a test that waits for one of theirs (a gate: `requires`, `fixed`),
    however indirectly: what a run that fails those can lose, at most (a gate names a region: a test of another
    region of the same behaviour failing holds back nothing)."""
    lost = set(behaviours)
    behaviours = BY_ID[problem].behaviours
    while waiting := {b.name for b in behaviours if b.name not in lost and lost & waited_for(problem, b)}:
        lost |= waiting
    return lost


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
    top-level definitions that the planted mistakes use (not MISTAKES, not the reference's own names; helpers they
    call, however indirectly) and the imports those use; then each replaced name bound to its mistake. Only what
    the mistakes use: another mistake's code (an oracle imported, say) is not the student's."""
    reference = (ROOT / "reference" / f"{problem}.py").read_text()
    defined = {n.name for n in ast.parse(reference).body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    catalogue = (ROOT / "tests" / "mistakes" / f"{problem}.py").read_text()
    lines = catalogue.splitlines()
    mistakes = [find_mistake(f"{problem}:{mistake_id}") for mistake_id in mistake_ids]
    nodes = ast.parse(catalogue).body
    definitions = {n.name: n for n in nodes if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name not in defined}
    wanted = {wrong.__name__ for m in mistakes for wrong in m.replaces.values()}
    used: set[str] = set()
    while pending := wanted - used:
        used |= pending
        for name in pending & set(definitions):
            wanted |= {n.id for n in ast.walk(definitions[name]) if isinstance(n, ast.Name)}
    kept = []
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("reference", "tests"):
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            if not {(a.asname or a.name).split(".")[0] for a in node.names} & wanted:
                continue
        elif not (isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in definitions and node.name in used):
            continue  # MISTAKES, the docstring, the reference's names, other mistakes' code
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        kept.append("\n".join(lines[start - 1:node.end_lineno]))
    bindings = []
    for mistake in mistakes:
        for name, wrong in mistake.replaces.items():
            assert wrong.__name__ not in defined, f"{problem}:{mistake.id}: {wrong.__name__} is a reference name"
            bindings.append(f"{name} = {wrong.__name__}  # planted: {problem}:{mistake.id}")
    return "\n".join([reference, "", "# -- planted mistakes (tests/meta/test_class_report.py) --",
                      "import types as _planted_types", "",
                      "ref = _planted_types.SimpleNamespace(**dict(globals()))", "", "\n\n\n".join(kept), "",
                      *bindings, ""])
