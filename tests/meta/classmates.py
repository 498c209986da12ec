"""A synthetic class for the similarity check (grader/similarity.py): its meta-test, its calibration and its
benchmark build it as folders of submissions, one module per problem.

Honest students write each problem's module their own way: the stub with catalogued mistakes of their own choice
written below it (tests/mistakes/: no two students choose the same set) and code of their own (`own_code`: small
functions of random statements and expressions, seeded), or the honest adamw of tests/meta/honest/. One group of
students shares a source per problem in PLANTED: the first holds the reference's module, the others a copy of it
edited as a student who copies would edit it (tests/meta/rewrites.py's renaming, reordering, padding,
re-emitting; comments; a function of another student's swapped in; a function pasted below code of their own).
"""

import ast
import inspect
import itertools
import random
from dataclasses import dataclass, field
from pathlib import Path

from grader.registry import PROBLEMS
from tests.meta import rewrites
from tests.meta.suite import ROOT
from tests.mistakes import catalog

MODULES = {p.id: p.module for p in PROBLEMS}


def stub(module: str) -> str:
    return (ROOT / "assignment" / f"{module}.py").read_text()


def reference(module: str) -> str:
    return (ROOT / "reference" / f"{module}.py").read_text()


def commented(source: str) -> str:
    """Renamed, and a comment of the copier's own above every third line."""
    lines = []
    for i, line in enumerate(rewrites.renamed(source).splitlines()):
        if i % 3 == 0 and line.strip():
            lines.append(" " * (len(line) - len(line.lstrip())) + f"# step {i // 3}: as I worked it out")
        lines.append(line)
    return "\n".join(lines) + "\n"


def function_swapped(source: str, problem: str) -> str:
    """Renamed, with its first function that the catalogue replaces taken out and the catalogue's version (another
    student's) written in its place."""
    tree = ast.parse(source)
    for mistake in catalog(problem):
        for name, wrong in mistake.replaces.items():
            node = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
            try:
                theirs = inspect.getsource(wrong).replace(f"def {wrong.__name__}(", f"def {name}(", 1)
            except (OSError, TypeError):
                continue
            if node is not None:
                lines = source.splitlines()
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                return rewrites.renamed("\n".join(lines[:start - 1] + theirs.splitlines() + lines[node.end_lineno:]))
    raise AssertionError(f"{problem}: no function of the reference is a catalogued mistake's")


EDITS = {"renamed": lambda s, p: rewrites.renamed(s), "reordered": lambda s, p: rewrites.reordered(s),
         "padded": lambda s, p: rewrites.padded(s), "re-emitted": lambda s, p: rewrites.reemitted(s),
         "commented": lambda s, p: commented(s), "function swapped": function_swapped,
         # issue 53: taken whole, reordered, padded, every statement changed in what does nothing, bare CR line ends
         "disguised": lambda s, p: rewrites.carriage_returns(rewrites.reordered(s))}

# problem -> how each copy after the first (the reference's module) was edited; "pasted" is a function of the
# reference pasted below the copier's own honest module. adamw and gradient_accumulation stay honest: the honest
# adamw (tests/meta/honest/) and the reference's are two students' independent work.
PLANTED = {"tensors": ["renamed"], "mini_einops": ["reordered"], "flops": ["padded", "disguised"],
           "precision": ["re-emitted"],
           "roofline": ["commented"], "activation_checkpointing": ["function swapped"], "benchmarking": ["pasted"],
           "memory": ["renamed", "reordered"], "einops_practice": ["padded", "commented"]}


SHORT = 8  # a mistake of more lines is one student's: two who write the same long function alike copied it
PASTED = 40  # lines of the reference pasted below a copier's own code


@dataclass
class Group:
    """Students who share one source on `problem`: `members` (the first holds the reference's module), `how` each
    copy was made, and for a pasted part the lines it stands on in each member's module."""

    problem: str
    members: list[str]
    how: list[str]
    lines: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def pairs(self) -> set[frozenset[str]]:
        return {frozenset(p) for p in itertools.combinations(self.members, 2)}


@dataclass
class SyntheticClass:
    folder: Path
    students: list[str]
    groups: list[Group]
    honest_adamw: tuple[str, str] = ("", "")  # (the honest adamw's student, the reference adamw's student)

    def planted(self, problem: str) -> set[frozenset[str]]:
        return set().union(*(g.pairs for g in self.groups if g.problem == problem))


def own_code(rng: random.Random, functions: int = 4) -> list[str]:
    """Functions of a student's own: statements over random expressions (operators, builtins, methods, indexing,
    comprehensions, conditions, loops), so that two students share only what such code repeats by chance."""
    out = []
    for f in range(functions):
        names = [f"x{i}" for i in range(rng.randint(1, 3))]
        body = [f"def _mine_{rng.randrange(10**6)}_{f}({', '.join(names)}):"]
        for _ in range(rng.randint(3, 7)):
            body += _statement(rng, names, "    ")
        body.append(f"    return {_expression(rng, names, 2)}")
        out.append("\n".join(body) + "\n")
    return out


def _statement(rng: random.Random, names: list[str], indent: str) -> list[str]:
    target, kind = f"v{len(names)}", rng.random()
    if kind < 0.5 or len(indent) > 4:
        names.append(target)
        return [f"{indent}{target} = {_expression(rng, names[:-1], 3)}"]
    if kind < 0.65:
        return [f"{indent}{rng.choice(names)} {rng.choice(OPERATORS)}= {_expression(rng, names, 2)}"]
    if kind < 0.85:
        return [f"{indent}for {target} in {rng.choice(['range', 'reversed', 'enumerate'])}("
                f"{_expression(rng, names, 1)}):", *_statement(rng, [*names, target], indent + "    ")]
    head = f"{indent}if {_expression(rng, names, 2)} {rng.choice(['<', '>', '==', '!=', '<=', 'in'])} " \
           f"{_expression(rng, names, 1)}:"
    return [head, *_statement(rng, names, indent + "    ")]


OPERATORS = ["+", "-", "*", "/", "//", "%", "**", "&", "|"]
CALLS = ["len", "min", "max", "sum", "abs", "sorted", "round", "int", "float", "list", "tuple", "any", "all"]
METHODS = ["sum", "mean", "view", "reshape", "item", "numel", "size", "transpose", "flatten", "count", "index"]


def _expression(rng: random.Random, names: list[str], depth: int) -> str:
    kind = rng.random()
    if depth == 0 or kind < 0.2:
        return rng.choice(names) if rng.random() < 0.7 else str(rng.randint(0, 99))
    inner = [_expression(rng, names, depth - 1) for _ in range(rng.randint(1, 3))]
    if kind < 0.45:
        return f"({inner[0]} {rng.choice(OPERATORS)} {_expression(rng, names, depth - 1)})"
    if kind < 0.6:
        return f"{rng.choice(CALLS)}({', '.join(inner)})"
    if kind < 0.75:
        return f"{rng.choice(names)}.{rng.choice(METHODS)}({', '.join(inner[:rng.randint(0, 2)])})"
    if kind < 0.85:
        return f"{rng.choice(names)}[{inner[0]}]"
    if kind < 0.93:
        return f"[{inner[0]} for _ in {rng.choice(names)}]"
    return f"({inner[0]} if {_expression(rng, names, 0)} else {inner[-1]})"


def pasted_lines(source: str, at_least: int = PASTED) -> tuple[int, int]:
    """The lines of `source` a copier pastes: its top-level functions from the longest on, in a row, until there are
    `at_least` lines."""
    functions = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)]
    longest = max(range(len(functions)), key=lambda i: functions[i].end_lineno - functions[i].lineno)
    last = longest
    while functions[last].end_lineno - functions[longest].lineno < at_least and last + 1 < len(functions):
        last += 1
    return functions[longest].lineno, functions[last].end_lineno


def _mistake_sources(problem: str) -> list[str]:
    sources = []
    for mistake in catalog(problem):
        for wrong in dict.fromkeys(mistake.replaces.values()):
            try:
                sources.append(inspect.getsource(wrong))
            except (OSError, TypeError):  # a lambda's line, or a built-in
                continue
    return list(dict.fromkeys(sources))


def build(folder: Path, size: int = 44, seed: int = 0, problems: list[str] | None = None) -> SyntheticClass:
    """Write a class of `size` students (s000, s001, ...) under `folder`, one module per problem (`problems`: all),
    with PLANTED's groups on distinct students."""
    rng = random.Random(seed)
    problems = problems or list(MODULES)
    students = [f"s{i:03d}" for i in range(size)]
    chosen: dict[str, set[tuple[int, ...]]] = {}
    texts: dict[tuple[str, str], str] = {}
    for problem in problems:
        module, mistakes = MODULES[problem], _mistake_sources(problem)
        taken: set[int] = set()  # the long mistakes already written by a student
        for student in students:
            for _ in range(200):
                picked = tuple(sorted(rng.sample(range(len(mistakes)), min(len(mistakes), rng.randint(1, 3)))))
                if picked not in chosen.setdefault(problem, set()) and not taken & set(picked):
                    break
            else:  # every set is someone's (a large class): one short mistake, as many students write it
                picked = (rng.choice([i for i, text in enumerate(mistakes) if text.count("\n") <= SHORT]),)
            chosen[problem].add(picked)
            taken |= {i for i in picked if mistakes[i].count("\n") > SHORT}
            pieces = [mistakes[i] for i in picked] + own_code(rng)
            rng.shuffle(pieces)  # each student orders their functions their own way
            texts[student, problem] = "\n\n".join([stub(module), *pieces])
    made = SyntheticClass(folder, students, [])
    free = list(students)
    rng.shuffle(free)
    for problem, edits in PLANTED.items():
        if problem not in problems:
            continue
        module, members = MODULES[problem], [free.pop() for _ in range(len(edits) + 1)]
        original = reference(module)
        texts[members[0], problem] = original
        group = Group(problem, members, ["the reference's module", *edits])
        for member, how in zip(members[1:], edits, strict=True):
            if how == "pasted":
                first, last = pasted_lines(original)
                own = texts[member, problem].rstrip("\n") + "\n\n\n"
                texts[member, problem] = own + "\n".join(original.splitlines()[first - 1:last]) + "\n"
                start = own.count("\n") + 1
                group.lines = {members[0]: (first, last), member: (start, start + last - first)}
            else:
                texts[member, problem] = EDITS[how](original, problem)
        made.groups.append(group)
    if "adamw" in problems:
        made.honest_adamw = (free.pop(), free.pop())
        texts[made.honest_adamw[0], "adamw"] = (ROOT / "tests" / "meta" / "honest" / "adamw.py").read_text()
        texts[made.honest_adamw[1], "adamw"] = reference("adamw")
    for (student, problem), text in texts.items():
        (folder / student).mkdir(parents=True, exist_ok=True)
        (folder / student / f"{MODULES[problem]}.py").write_text(text)
    return made
