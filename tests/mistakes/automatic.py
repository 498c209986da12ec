"""Mistakes made by rule, not by hand: automatic mutants of the reference. Each changes one thing in one
problem module's source: an arithmetic operator, a comparison, a boolean operator, a `not` or a unary minus
dropped, or a number constant. The catalogue (one module a problem) holds the mistakes students make; these
hold the ones nobody thought of, so a budget of examples (grader/grading_budget.py) is measured on mistakes
it was not written for.

    python -m tests.meta.mutation --automatic [--sample N]   # which are caught, by which test, at which example

A mutant's id is "auto-<index>-L<line>" (`--mutant flops:auto-12-L40` swaps it in). Swapped in, it replaces every
name the module defines at its top level (functions, classes, constants) with those of the module compiled
from the mutated source, so a change in a helper reaches every public function that calls it. The shape checks
that the grader installs on imported modules are not on these (compiled, not imported). Some mutants change
nothing a test can see (`x * 1` made `x * 2` where x is 0, a bound no input reaches): those are never caught, by any
budget, and only the mutants caught under today's budgets say anything about a smaller one.
"""

import ast
import random
import types
from dataclasses import dataclass
from pathlib import Path

from tests.mistakes import Mistake

ROOT = Path(__file__).resolve().parents[2]

SWAPS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Mult,
         ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult, ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE,
         ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
         ast.In: ast.NotIn, ast.NotIn: ast.In, ast.And: ast.Or, ast.Or: ast.And}
SYMBOLS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
           ast.Pow: "**", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
           ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in", ast.And: "and", ast.Or: "or"}


def _changes(tree: ast.Module):
    """(node, field, index, new value, what changed) for every one-place change of `tree`'s code: not its
    docstrings, annotations or strings."""
    skipped = set()
    for node in ast.walk(tree):
        for annotation in [getattr(node, "annotation", None), getattr(node, "returns", None)]:
            if annotation is not None:
                skipped.update(map(id, ast.walk(annotation)))
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            skipped.add(id(first.value))  # a docstring
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.BinOp | ast.BoolOp) and type(node.op) in SWAPS:
            new = SWAPS[type(node.op)]
            yield node, "op", None, new(), f"{SYMBOLS[type(node.op)]} -> {SYMBOLS[new]}"
        elif isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                if type(op) in SWAPS:
                    new = SWAPS[type(op)]
                    yield node, "ops", i, new(), f"{SYMBOLS[type(op)]} -> {SYMBOLS[new]}"
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub):
            yield node, None, None, node.operand, f"{'not' if isinstance(node.op, ast.Not) else '-'} dropped"
        elif isinstance(node, ast.Constant) and type(node.value) in (int, float):
            new = node.value + 1 if isinstance(node.value, int) else (node.value * 2 or 1.0)
            yield node, "value", None, new, f"{node.value!r} -> {new!r}"


def _enclosing(tree: ast.Module) -> dict[int, str]:
    """id(node) -> the name of the top-level function or class it is in."""
    return {id(inner): node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.ClassDef)
            for inner in ast.walk(node)}


@dataclass(frozen=True)
class Mutant:
    problem: str
    id: str
    description: str
    replaces: tuple[str, ...]  # the top-level function or class changed (what tests/meta/mutation.py orders by)


def automatic(problem: str) -> list[Mutant]:
    """Every automatic mutant of the reference's `problem` module, in the order of `ast.walk`."""
    tree = ast.parse(_source(problem))
    where = _enclosing(tree)
    return [Mutant(problem, f"auto-{index}-L{node.lineno}", f"line {node.lineno}: {what}",
                   (where[id(node)],) if id(node) in where else ())
            for index, (node, _, _, _, what) in enumerate(_changes(tree))]


def sample(mutants: list, n: int, seed: int = 0) -> list:
    """`n` of `mutants`, drawn at random but the same for the same seed, in their order."""
    if n >= len(mutants):
        return mutants
    picked = set(random.Random(seed).sample(range(len(mutants)), n))
    return [m for i, m in enumerate(mutants) if i in picked]


def build(problem: str, mutant_id: str) -> Mistake:
    """The mutant `mutant_id` as a catalogued mistake: every name the module defines at its top level, taken
    from the module compiled from the mutated source."""
    index = int(mutant_id.split("-")[1])
    tree = ast.parse(_source(problem))
    names = _top_level_names(tree)  # a change never touches a definition's name or an assignment's target
    node, field, position, new, what = list(_changes(tree))[index]
    if field is None:  # the operand takes the operator's place
        _replace_child(tree, node, new)
    elif position is None:
        setattr(node, field, new)
    else:
        getattr(node, field)[position] = new
    module = types.ModuleType(f"reference.{problem}")
    module.__file__ = str(ROOT / "reference" / f"{problem}.py")
    exec(compile(ast.fix_missing_locations(tree), module.__file__, "exec"), module.__dict__)
    return Mistake(problem, mutant_id, f"line {node.lineno}: {what}",
                   {name: module.__dict__[name] for name in names if name in module.__dict__})


def _source(problem: str) -> str:
    return (ROOT / "reference" / f"{problem}.py").read_text()


def _replace_child(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return
            if isinstance(value, list) and any(v is old for v in value):
                value[[i for i, v in enumerate(value) if v is old][0]] = new
                return
    raise ValueError("the node to replace is not in the tree")


def _top_level_names(tree: ast.Module) -> list[str]:
    names = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return names
