"""What of a module's source runs, as tokens with the lines they come from: how the copy check and the similarity
between students read a module (grader/copycheck.py, grader/similarity.py).

1. read      as Python reads it (`read_source`): the coding cookie or the BOM, then universal newlines (a bare
             carriage return ends a line as well), so that statements and line numbers are the interpreter's;
2. simplify  what does not run or does nothing is taken out (`Simplify`): a conditional whose test is a constant
             (`x if True else None`, `if False:`, `while 0:`, `True and x`), code after a return, raise, break
             or continue, an expression statement that calls nothing (a docstring, a lone name), a store to a name
             that nothing reads (to a fixpoint: a dead statement after every statement), a parameter with a
             default that the function never reads (and an unread `*args` or `**kwargs`), annotations, `pass`;
             `x += y` reads as `x = x + y`;
3. tokens    of each statement left (a compound statement's header alone), written anew by `ast.unparse` (so that
             parentheses, spacing, quotes and line breaks are no longer the writer's), each token carrying the
             first and last line of its statement in the source; every literal is `N` (numbers) or `S`
             (strings), every name `V` but keywords, the builtins the module does not bind and the attributes it
             does not assign; import statements are left out.

A module that does not parse is read as tokenize's tokens, up to its first error, with layout, docstrings and
imports left out the same way.
"""

import ast
import builtins
import copy
import functools
import importlib.util
import io
import keyword
import operator
import tokenize
from dataclasses import dataclass
from typing import Any

from grader.sources import AST_LOCK

BUILTINS = frozenset(dir(builtins))
BLOCKS = ("body", "handlers", "orelse", "cases", "finalbody")  # the statement lists of a compound statement
MARKERS = {"orelse": "else", "finalbody": "finally"}  # what opens those without a header of their own
FIXPOINT = 8  # rounds of dead-store removal at most: each round can only expose the stores the last one fed
LARGE = 2**64  # constant arithmetic is folded below this magnitude only: folding must cost nothing
LARGE_TEXT = 4096  # and strings joined up to this length


@dataclass(frozen=True)
class Tokens:
    """A module's normalised tokens and the line each starts and ends on."""

    text: tuple[str, ...]
    first: tuple[int, ...]
    last: tuple[int, ...]
    statements: tuple[int, ...] = ()  # where each statement (a compound one's header) starts in `text`


def read_source(source: bytes | str) -> str:
    """`source` as the interpreter reads a module's file: decoded by its coding cookie or BOM (UTF-8 by default; an
    undecodable byte replaced), with universal newlines."""
    if isinstance(source, str):
        return source.replace("\r\n", "\n").replace("\r", "\n")
    try:
        return importlib.util.decode_source(source)
    except (SyntaxError, LookupError, UnicodeDecodeError, ValueError):  # a bad cookie, or bytes it cannot decode
        return source.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


def parse(source: str) -> ast.Module | None:
    """The module's syntax tree, or None where it does not parse (or nests past what the parser takes)."""
    try:
        with AST_LOCK:
            return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def bound_names(source: str | ast.Module) -> tuple[frozenset[str], frozenset[str]] | None:
    """The names `source` binds and the attributes it assigns, which a copy can rename at will (None: it does
    not parse)."""
    tree = parse(source) if isinstance(source, str) else source
    if tree is None:
        return None
    names, attributes = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
            attributes.add(node.name)  # a method is called as an attribute
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            attributes.add(node.attr)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.Global | ast.Nonlocal):
            names.update(node.names)
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            names.add(node.name)
    return frozenset(names), frozenset(attributes)


@functools.lru_cache(maxsize=64)
def normalise(source: bytes | str, names_of: bytes | str | None = None) -> Tokens:
    """`source`'s tokens, as the module's docstring says, with the names that `names_of` binds (default: `source`)
    taken as its own. Kept for the last texts read (Tokens cannot change): the copy check and the similarity digest
    read each module of a grading alike."""
    text = read_source(source)
    tree = parse(text)
    if tree is not None:
        try:
            simple = simplify(tree)
            other = None if names_of is None else parse(read_source(names_of))
            bound = bound_names(simple) if names_of is None else other and bound_names(simplify(other))
            return _from_tree(simple, bound)
        except (RecursionError, MemoryError, ValueError, tokenize.TokenError, SyntaxError):
            pass  # a tree too deep to walk: read as tokens
    return _from_tokens(text)


# -- 2. what does not run or does nothing --------------------------------------------------------------------

def constant(node: ast.AST) -> tuple[bool, Any]:
    """(True, its value) where `node` is an expression whose value is known without running anything (literals,
    and arithmetic, comparisons and boolean logic on them, within small magnitudes), else (False, None)."""
    if isinstance(node, ast.Constant):
        return True, node.value
    if isinstance(node, ast.Tuple):
        items = [constant(e) for e in node.elts]
        return (True, tuple(v for _, v in items)) if all(k for k, _ in items) else (False, None)
    if isinstance(node, ast.UnaryOp):
        known, value = constant(node.operand)
        if known and isinstance(node.op, ast.Not):
            return True, not value
        if known and _number(value) and not isinstance(node.op, ast.Invert):
            return True, -value if isinstance(node.op, ast.USub) else +value
        return False, None
    if isinstance(node, ast.BoolOp):
        items = [constant(v) for v in node.values]
        if not all(k for k, _ in items):
            return False, None
        values = [v for _, v in items]
        for value in values[:-1]:
            if bool(value) == isinstance(node.op, ast.Or):
                return True, value
        return True, values[-1]
    if isinstance(node, ast.Compare):
        items = [constant(v) for v in (node.left, *node.comparators)]
        if not all(k for k, _ in items) or not all(_plain(v) for _, v in items):
            return False, None
        values = [v for _, v in items]
        try:
            return True, all(_COMPARE[type(op)](a, b) for op, a, b in zip(node.ops, values, values[1:], strict=False))
        except (TypeError, KeyError):
            return False, None
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        (ka, a), (kb, b) = constant(node.left), constant(node.right)
        if ka and kb and isinstance(node.op, ast.Add) and type(a) is type(b) and isinstance(a, str | bytes):
            return (True, a + b) if len(a) + len(b) < LARGE_TEXT else (False, None)
        if not (ka and kb and _number(a) and _number(b)) or isinstance(node.op, ast.Pow) and abs(b) > 64:
            return False, None
        try:
            value = _ARITHMETIC[type(node.op)](a, b)
        except (ArithmeticError, ValueError):
            return False, None
        return (True, value) if _number(value) else (False, None)
    return False, None


def _number(value) -> bool:
    return isinstance(value, int | float) and abs(value) < LARGE


def _plain(value) -> bool:
    return value is None or isinstance(value, bool | int | float | str | bytes) or \
        isinstance(value, tuple) and all(map(_plain, value))


_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
            ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
            ast.In: lambda a, b: operator.contains(b, a), ast.NotIn: lambda a, b: not operator.contains(b, a)}
_ARITHMETIC = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
               ast.Mod: operator.mod, ast.Div: operator.truediv, ast.Pow: operator.pow}


def pure(node: ast.AST) -> bool:
    """Whether evaluating the expression `node` calls nothing the code wrote (literals, names, attributes, operators
    on them, displays; no call, no await, no yield, no walrus)."""
    return not any(isinstance(n, ast.Call | ast.Await | ast.Yield | ast.YieldFrom | ast.NamedExpr)
                   for n in ast.walk(node))


class Simplify(ast.NodeTransformer):
    """The first passes of step 2, node by node: constant conditionals, `x += y`, annotations, unread defaulted
    parameters."""

    def visit_IfExp(self, node):
        self.generic_visit(node)
        known, value = constant(node.test)
        return (node.body if value else node.orelse) if known else node

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        ends = isinstance(node.op, ast.Or)  # the value that ends an `or` is truthy, an `and`'s falsy
        values = []
        for i, item in enumerate(node.values):
            known, value = constant(item)
            if known and i < len(node.values) - 1:
                if bool(value) == ends:
                    values.append(item)
                    break
                continue  # passed over: changes nothing
            values.append(item)
        return values[0] if len(values) == 1 else ast.copy_location(ast.BoolOp(node.op, values), node)

    def visit_If(self, node):
        self.generic_visit(node)
        known, value = constant(node.test)
        return (node.body if value else node.orelse) if known else node

    def visit_While(self, node):
        self.generic_visit(node)
        known, value = constant(node.test)
        return node.orelse if known and not value else node

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        read = copy.deepcopy(node.target)
        read.ctx = ast.Load()
        value = ast.copy_location(ast.BinOp(read, node.op, node.value), node)
        return ast.copy_location(ast.Assign([node.target], value), node)

    def visit_AnnAssign(self, node):
        self.generic_visit(node)
        if node.value is None:
            return None
        return ast.copy_location(ast.Assign([node.target], node.value), node)

    def visit_arg(self, node):
        node.annotation = None
        return node

    def visit_FunctionDef(self, node):
        self.generic_visit(node)
        node.returns = None
        _drop_unread_parameters(node.args, _loaded(node.body))
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node):
        self.generic_visit(node)
        _drop_unread_parameters(node.args, _loaded([node.body]))
        return node


def _loaded(nodes: list[ast.AST]) -> set[str]:
    """The names read (or deleted, or declared global or nonlocal) anywhere in `nodes`."""
    found = set()
    for root in nodes:
        for n in ast.walk(root):
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store):
                found.add(n.id)
            elif isinstance(n, ast.Global | ast.Nonlocal):
                found.update(n.names)
    return found


def _drop_unread_parameters(args: ast.arguments, read: set[str]) -> None:
    """Take out the parameters with a default that the body never reads, and an unread *args or **kwargs: a caller
    never has to pass them, so adding them changes nothing."""
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    kept = [(a, d) for a, d in zip(positional, defaults, strict=True) if d is None or a.arg in read]
    posonly = {id(a) for a in args.posonlyargs}
    args.posonlyargs = [a for a, _ in kept if id(a) in posonly]
    args.args = [a for a, _ in kept if id(a) not in posonly]
    args.defaults = [d for _, d in kept if d is not None]
    pairs = [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None or a.arg in read]
    args.kwonlyargs, args.kw_defaults = [a for a, _ in pairs], [d for _, d in pairs]
    if args.vararg is not None and args.vararg.arg not in read:
        args.vararg = None
    if args.kwarg is not None and args.kwarg.arg not in read:
        args.kwarg = None


def simplify(tree: ast.Module) -> ast.Module:
    """A copy of `tree` with what does not run or does nothing taken out (the module's docstring, step 2)."""
    tree = Simplify().visit(copy.deepcopy(tree))
    _prune(tree)
    for _ in range(FIXPOINT):
        if not _drop_dead_stores(tree):
            break
        _prune(tree)
    return tree


def _bodies(tree: ast.AST):
    """Every statement list of `tree` (a node and the name of its field)."""
    for node in ast.walk(tree):
        for name in BLOCKS:
            body = getattr(node, name, None)
            if isinstance(body, list) and (not body or isinstance(body[0], ast.stmt)):
                yield node, name


def _prune(tree: ast.AST) -> None:
    """In every statement list: the statements after one that leaves it (return, raise, break, continue), `pass`,
    and expression statements that call nothing (docstrings among them)."""
    for node, name in list(_bodies(tree)):
        kept = []
        for statement in getattr(node, name):
            if isinstance(statement, ast.Pass) or isinstance(statement, ast.Expr) and pure(statement.value):
                continue
            kept.append(statement)
            if isinstance(statement, ast.Raise | ast.Break | ast.Continue) or \
                    isinstance(statement, ast.Return) and not isinstance(node, ast.Module):  # (a compile error there)
                break
        setattr(node, name, kept)


def _drop_dead_stores(tree: ast.Module) -> bool:
    """Take out, from the module's and its functions' bodies (not a class's: its names are attributes), each
    assignment whose targets are names that nothing in the module reads. Whether any was taken out."""
    read = _loaded([tree])
    class_bodies = {id(n.body) for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    dropped = False
    for node, name in list(_bodies(tree)):
        body = getattr(node, name)
        if id(body) in class_bodies:
            continue
        kept = [s for s in body if not _dead_store(s, read)]
        if len(kept) < len(body):
            setattr(node, name, kept)
            dropped = True
    return dropped


def _dead_store(statement: ast.stmt, read: set[str]) -> bool:
    if not isinstance(statement, ast.Assign):
        return False
    names = [n for t in statement.targets for n in ast.walk(t)]
    stored = [n.id for n in names if isinstance(n, ast.Name)]
    only_names = all(isinstance(n, ast.Name | ast.Tuple | ast.List | ast.Starred | ast.expr_context) for n in names)
    return only_names and bool(stored) and not any(s in read or s.startswith("__") for s in stored)


# -- 3. tokens -----------------------------------------------------------------------------------------------

def statements(tree: ast.Module) -> list[tuple[str, int, int]]:
    """Each statement of `tree` in order, a compound one's header apart from its blocks: (its text written anew,
    its first line, its last line in the source). Imports are left out."""
    found: list[tuple[str, int, int]] = []
    _walk_statements(tree.body, found)
    return found


def _walk_statements(body: list[ast.stmt], found: list) -> None:
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            continue
        blocks = [name for name in BLOCKS if isinstance(getattr(node, name, None), list)]
        if not blocks:
            found.append((ast.unparse(node), node.lineno, node.end_lineno))
            continue
        header = copy.copy(node)
        for name in blocks:
            setattr(header, name, [])
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        last = max([node.lineno] + [getattr(n, "end_lineno", 0) or 0 for n in ast.walk(header) if n is not header])
        found.append((ast.unparse(header), first, last))
        for name in blocks:
            inner = getattr(node, name)
            if inner and name in MARKERS:
                found.append((MARKERS[name] + ":", inner[0].lineno, inner[0].lineno))
            if name in ("handlers", "cases"):
                for part in inner:  # an except clause or a case: a header of its own, then its body
                    _walk_statements([_as_statement(part)], found)
            else:
                _walk_statements(inner, found)


def _as_statement(part: Any) -> ast.stmt:
    """An except clause or a match case, with the line attributes a statement has (a case has none)."""
    if not hasattr(part, "lineno"):
        first = part.pattern
        part.lineno, part.end_lineno = first.lineno, (part.body[-1].end_lineno if part.body else first.end_lineno)
    return part


def _from_tree(tree: ast.Module, bound) -> Tokens:
    names, attributes = bound or (frozenset(), frozenset())
    parts = statements(tree)
    text: list[str] = []
    first: list[int] = []
    last: list[int] = []
    starts: list[int] = []
    for code, line_a, line_b in parts:
        starts.append(len(text))
        for kind, string, after_dot in _raw_tokens(code):
            token = _token(kind, string, after_dot, names, attributes, parsed=True)
            if token is not None:
                text.append(token)
                first.append(line_a)
                last.append(line_b)
        if starts[-1] == len(text):
            starts.pop()
    return Tokens(tuple(text), tuple(first), tuple(last), tuple(starts))


def _raw_tokens(code: str):
    """(type, string, whether it follows a dot) of the tokens of one statement's text."""
    previous = ""
    for tok in tokenize.generate_tokens(io.StringIO(code + "\n").readline):
        if tok.type in _LAYOUT:
            continue
        yield tok.type, tok.string, previous == "."
        previous = tok.string


def _token(kind: int, string: str, after_dot: bool, names: frozenset, attributes: frozenset,
           parsed: bool) -> str | None:
    if kind == tokenize.STRING or kind in _FSTRING:
        return "S"
    if kind == tokenize.NUMBER:
        return "N"
    if kind == tokenize.OP:
        return string
    if kind == tokenize.NAME:
        if keyword.iskeyword(string):
            return string
        kept = string not in attributes if after_dot else string in BUILTINS and string not in names
        return string if parsed and kept else "V"
    return None


_LAYOUT = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING,
           tokenize.ENDMARKER, getattr(tokenize, "TYPE_COMMENT", -1)}
_FSTRING = {getattr(tokenize, name, -1) for name in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END")}


def as_tokens(source: bytes | str) -> Tokens:
    """`source` read as a module that does not parse is (`_from_tokens`), whether it parses or not."""
    return _from_tokens(read_source(source))


def _from_tokens(source: str) -> Tokens:
    """A module that does not parse: tokenize's tokens up to the first error, every name `V`, layout, docstrings
    (a statement that is a string alone) and import statements left out."""
    raw: list[tokenize.TokenInfo] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type not in (tokenize.COMMENT, tokenize.NL):
                raw.append(tok)
    except (tokenize.TokenError, IndentationError, SyntaxError):  # the tokens before the error
        pass
    text: list[str] = []
    first: list[int] = []
    last: list[int] = []
    starts: list[int] = []
    i, begins = 0, True
    while i < len(raw):
        tok = raw[i]
        if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER) or tok.type == tokenize.OP and tok.string == ";":
            i, begins = i + 1, True
            continue
        if tok.type in _LAYOUT:
            i += 1
            continue
        if begins and tok.type == tokenize.NAME and tok.string in ("import", "from"):
            while i < len(raw) and raw[i].type not in (tokenize.NEWLINE, tokenize.ENDMARKER):
                i += 1
            continue
        if begins and tok.type == tokenize.STRING and (i + 1 == len(raw) or raw[i + 1].type == tokenize.NEWLINE):
            i += 1  # a docstring
            continue
        if begins:
            starts.append(len(text))
        begins = False
        token = _token(tok.type, tok.string, False, frozenset(), frozenset(), parsed=False)
        if token is not None:
            text.append(token)
            first.append(tok.start[0])
            last.append(tok.end[0])
        i += 1
    return Tokens(tuple(text), tuple(first), tuple(last), tuple(starts))
