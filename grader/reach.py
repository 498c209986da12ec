"""What a module's code reaches, read statically: the dotted names of the modules, functions and attributes it
refers to, resolved through its imports, its aliases and its attribute chains, never by the spelling of its own
names. The static audits (tests/audit.py) ask whether a solution reaches its oracle; the copy check
(grader/copycheck.py) whether a module can read its own source.

    import torch.utils.flop_counter as fc          reaches torch.utils.flop_counter
    fc.FlopCounterMode()                           torch.utils.flop_counter.FlopCounterMode
    counter = torch.utils; counter.flop_counter    torch.utils.flop_counter (an alias is followed)
    importlib.import_module("torch.utils." + "x")  torch.utils.x (a constant name, folded)
    getattr(torch.optim, "AdamW")                  torch.optim.AdamW
    ContextVar("flop_counter_depth")               contextvars.ContextVar (a string is no reference)
    x.half()                                       ?.half (an attribute of an object it cannot resolve)
    len(x)                                         builtins.len (a builtin the module does not rebind)
"""

import ast
import builtins
from dataclasses import dataclass

from grader.normalised import constant

UNRESOLVED = "?"  # the owner of an attribute whose object is not a module or name the module imported
BUILTINS = frozenset(dir(builtins))
IMPORTERS = frozenset({"importlib.import_module", "builtins.__import__"})


@dataclass(frozen=True)
class Reference:
    """A dotted name the module reaches, and the line it does so on."""

    name: str
    line: int


def references(tree: ast.Module) -> list[Reference]:
    """Every name `tree` reaches (see the module's docstring), in the order of its lines."""
    resolver = _Resolver(tree)
    resolver.visit(tree)
    return sorted(set(resolver.found), key=lambda r: (r.line, r.name))


def reaches(tree: ast.Module, prefixes: tuple[str, ...]) -> list[Reference]:
    """The references of `tree` to any of `prefixes` (a dotted name, or anything under it)."""
    return [r for r in references(tree) if any(r.name == p or r.name.startswith(p + ".") for p in prefixes)]


class _Resolver(ast.NodeVisitor):
    def __init__(self, tree: ast.Module):
        self.aliases: dict[str, str] = {}  # a name the module binds -> the dotted name it stands for
        self.bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} | \
            {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)} | \
            {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}
        self.found: list[Reference] = []

    def _add(self, name: str, node: ast.AST) -> None:
        self.found.append(Reference(name, getattr(node, "lineno", 0)))

    def resolve(self, node: ast.AST) -> str | None:
        """The dotted name an expression stands for, where it is a module, a name from one, a builtin or an
        attribute chain on those."""
        if isinstance(node, ast.Name):
            if node.id in self.aliases:
                return self.aliases[node.id]
            return f"builtins.{node.id}" if node.id in BUILTINS and node.id not in self.bound else None
        if isinstance(node, ast.Attribute):
            owner = self.resolve(node.value)
            return f"{owner}.{node.attr}" if owner else None
        if isinstance(node, ast.Call):
            function = self.resolve(node.func)
            if function in IMPORTERS and node.args:
                known, name = constant(node.args[0])
                return name if known and isinstance(name, str) else None
            if function == "builtins.getattr" and len(node.args) >= 2:
                owner, (known, name) = self.resolve(node.args[0]), constant(node.args[1])
                return f"{owner}.{name}" if owner and known and isinstance(name, str) else None
        return None

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node)
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                top = alias.name.partition(".")[0]
                self.aliases[top] = top

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = "." * node.level + (node.module or "")
        for alias in node.names:
            name = f"{base}.{alias.name}" if base and not base.endswith(".") else base + alias.name
            self._add(name, node)
            self.aliases[alias.asname or alias.name] = name

    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)
        target = self.resolve(node.value)
        for t in node.targets:
            if isinstance(t, ast.Name) and target:
                self.aliases[t.id] = target  # an alias: `fc = torch.utils.flop_counter`

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            name = self.resolve(node)
            if name:
                self._add(name, node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = self.resolve(node)
        if name:
            self._add(name, node)
        else:
            self._add(f"{UNRESOLVED}.{node.attr}", node)
        self.visit(node.value)

    def visit_Call(self, node: ast.Call) -> None:
        name = self.resolve(node)
        if name:
            self._add(name, node)
        self.generic_visit(node)
