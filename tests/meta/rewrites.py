"""Copies rewritten as a student who copies would rewrite them, for the copy check's calibration
(tests/meta/test_copycheck.py) and the hostile corpus (tests/meta/test_hostile.py): renamed, reordered, re-emitted
token by token, padded with dead statements, or a part pasted, all made from the reference or from the installed
oracles' sources at test time (no oracle's code is kept in this repository)."""

import ast
import importlib.util
import io
import tokenize
from pathlib import Path

from grader import copycheck


def renamed(source: str) -> str:
    """Every name the module binds renamed, docstrings and comments gone, laid out anew (ast.unparse)."""
    tree = ast.parse(source)
    bound, assigned = copycheck.bound_names(source)
    kept = imports(source) | {"self", "cls"}  # a name imported without `as` is the module's: kept
    every = sorted((bound | assigned) - kept - {n for n in bound | assigned if n.startswith("__")})
    names = {n: f"q{i}" for i, n in enumerate(every) if n in bound}
    attributes = {n: f"q{i}" for i, n in enumerate(every) if n in assigned}

    class Rename(ast.NodeTransformer):
        def visit_Name(self, node):
            node.id = names.get(node.id, node.id)
            return node

        def visit_arg(self, node):
            node.arg = names.get(node.arg, node.arg)
            return self.generic_visit(node)

        def visit_Attribute(self, node):
            node.attr = attributes.get(node.attr, node.attr)
            return self.generic_visit(node)

        def visit_FunctionDef(self, node):
            node.name = names.get(node.name, node.name)  # a method: the same new name as where it is called
            if node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
                node.body = node.body[1:] or [ast.Pass()]
            return self.generic_visit(node)

        visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef

        def visit_keyword(self, node):
            node.arg = names.get(node.arg, node.arg)
            return self.generic_visit(node)

        def visit_alias(self, node):
            if node.asname:
                node.asname = names.get(node.asname, node.asname)
            return node

    return ast.unparse(Rename().visit(tree))


def imports(source: str) -> set[str]:
    return {n.name.split(".")[0] for n in ast.walk(ast.parse(source)) if isinstance(n, ast.alias) and not n.asname}


def reordered(source: str) -> str:
    """The module's top-level functions in the opposite order (Python finds a function's globals when it is
    called, so the order of independent definitions is free)."""
    tree = ast.parse(source)
    slots = [i for i, node in enumerate(tree.body) if isinstance(node, ast.FunctionDef)]
    functions = [tree.body[i] for i in slots]
    for i, node in zip(slots, reversed(functions), strict=True):
        tree.body[i] = node
    for node in ast.walk(tree):  # and two assignments in a row swapped where neither reads what the other sets
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        i = 0
        while i + 1 < len(body):
            a, b = body[i], body[i + 1]
            if isinstance(a, ast.Assign) and isinstance(b, ast.Assign) and not (_sets(a) & _uses(b)) \
                    and not (_sets(b) & (_uses(a) | _sets(a))):
                body[i], body[i + 1] = b, a
                i += 1
            i += 1
    return ast.unparse(tree)


def _sets(statement: ast.Assign) -> set[str]:
    return {n.id for t in statement.targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _uses(statement: ast.Assign) -> set[str]:
    return {n.id for n in ast.walk(statement.value) if isinstance(n, ast.Name)}


def reemitted(source: str) -> str:
    """The source re-emitted token by token: bound names renamed, comments dropped, spacing of its own
    (tokenize.untokenize's), so that no line of the original survives."""
    names, attributes = copycheck.bound_names(source)
    names, attributes = names - imports(source), attributes
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            continue
        string = tok.string
        own = attributes if out and out[-1][1] == "." else names
        if tok.type == tokenize.NAME and string in own and not string.startswith("__") and string not in ("self",):
            string = f"z_{string[::-1]}_"
        out.append((tok.type, string))
    return tokenize.untokenize(out)


PAD = "zq_pad = [zq_k * 3 for zq_k in range(7) if zq_k % 2] + [1, 2, 3] * 0"  # 25 tokens that change nothing


def padded(source: str) -> str:
    """Renamed, with a dead statement of 25 tokens after every statement of every body: every k-gram that spans
    two statements is broken (issue 41: 11.7% of the fingerprints matched, a run of 8)."""
    tree = ast.parse(renamed(source))
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            body = getattr(node, name, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                setattr(node, name, [new for statement in body for new in (statement, ast.parse(PAD).body[0])])
    return ast.unparse(tree)


class _DoingNothing(ast.NodeTransformer):
    """Every value assigned or returned as `value if True else None`, and an unread keyword parameter on every
    function: each statement's tokens changed, and nothing it does."""

    def visit_Assign(self, node):
        self.generic_visit(node)
        node.value = ast.IfExp(ast.Constant(True), node.value, ast.Constant(None))
        return node

    def visit_Return(self, node):
        self.generic_visit(node)
        if node.value is not None:
            node.value = ast.IfExp(ast.Constant(True), node.value, ast.Constant(None))
        return node

    def visit_FunctionDef(self, node):
        self.generic_visit(node)
        node.args.kwonlyargs.append(ast.arg("zq_unused"))
        node.args.kw_defaults.append(ast.Constant(0))
        return node


def disguised(source: str) -> str:
    """Padded (`padded`), and every statement changed in what does nothing (issue 53: 4 statements in order, 5% of
    the fingerprints before the copy check read what runs)."""
    return ast.unparse(_DoingNothing().visit(ast.parse(padded(source))))


def carriage_returns(source: str) -> str:
    """`disguised`, with bare carriage returns for line ends: Python reads it with universal newlines (issue 53: the
    copy check's tokenizer saw one line and one statement)."""
    return disguised(source).replace("\n", "\r")


REWRITES = {"renamed": renamed, "reordered": lambda s: renamed(reordered(s)), "re-emitted": reemitted,
            "padded": padded, "disguised, padded": disguised, "disguised, padded, bare CR": carriage_returns}


def pasted_part(problem_id: str, lines: int = 120) -> str:
    """The first functions and classes (about `lines` lines) of the problem's largest oracle file, renamed and laid
    out anew: what a student pastes in."""
    source = max(copycheck.oracle_sources(problem_id), key=lambda s: len(s.tokens.text))
    text = Path(installed(source.name)).read_text()
    tree = ast.parse(text)
    picked, used = [], 0
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and used < lines:
            picked.append(node)
            used += node.end_lineno - node.lineno + 1
    return renamed(ast.unparse(ast.Module(body=picked, type_ignores=[])))


def installed(name: str) -> str:
    top = importlib.util.find_spec(name.split("/")[0])
    return str(Path(top.origin).parent.parent / name)
