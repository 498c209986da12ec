"""Copies of an oracle or of the reference in a submitted module, found past renaming and reformatting.

Runs in the grader's process on the problem modules as the submission gave them (never in the worker), after
MOSS (Schleimer, Wilkerson, Aiken, "Winnowing: local algorithms for document fingerprinting", SIGMOD 2003):

1. tokens     Python's `tokenize`, with layout (comments, blank lines, indentation, `;`, a trailing comma),
              docstrings and import statements dropped; every literal is `N` (numbers) or `S` (strings); every
              name is `V` (the module's own, or one that a pasted part takes from its source), and so is every
              attribute the module assigns or defines as a method. What it cannot rename without breaking the
              code stays: keywords, builtins, the attributes of torch's and other modules' objects. A renamed
              copy reads the same, and two independent solutions that share only a shape of code (`V = V * V`)
              are less alike than they would be with every name one token.
2. k-grams    a hash of every K consecutive tokens.
3. winnowing  of every W consecutive k-gram hashes the smallest (the rightmost on ties) is a fingerprint: any
              run of K + W - 1 tokens shared with a source is found, whatever else the module holds.
4. statements the hash of each statement of MIN_STATEMENT tokens or more (a compound statement's header alone),
              and the most of them found in one source in the same order on both sides: code inserted between
              copied statements (a dead store after each) breaks the k-grams that span two statements, but
              leaves every copied statement whole and in its order.

A module's fingerprints that also occur in its untouched stub (the given signatures and code) are not counted. A
module is a copy of a source when at least MIN_MATCHED of its remaining fingerprints are k-grams of the source, and
they are MIN_SHARE of them or one run of MIN_RUN in the same order on both sides (a part copied into code of the
student's own); or when MIN_IN_ORDER of its statements are one source's in its order (a part, padded), or
MIN_IN_ORDER_SHARE of that source's own statements (the whole of it, padded). The sources: the oracles of its
problem (grader/registry.py's ORACLES, every file of a package, read from the installed packages without importing
them) taken together, or the reference's module of its problem (skipped where there is none: the student release).
The evidence names the source files and the line ranges that match on both sides, for course staff (results.json's
extra_data).

A copy can also be carried as data: compressed and encoded into a literal, decoded and compiled at import. So a
module that calls what runs code given as text (`exec`, `eval`, `compile`) or decodes or decompresses data
(`DECODING`), or holds a literal of OPAQUE_CHARACTERS or more without spaces, is evidence by itself
(`carried_as_data`); and each literal that long is decoded as a copy would be (base64, base85, ascii85, hex; then
zlib, lzma, bz2, where that works) and what comes out as text is checked as a module of its own.
"""

import ast
import bisect
import builtins
import functools
import hashlib
import importlib.util
import io
import itertools
import keyword
import sys
import tokenize
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from grader import OFFICIAL_ROOT, has_reference, kept, registry
from grader.sources import AST_LOCK

K = 12  # tokens per k-gram
W = 8  # k-grams per window: every run of K + W - 1 = 19 shared tokens is seen
# The thresholds, calibrated by tests/meta/test_copycheck.py (`python -m tests.meta.test_copycheck` prints the
# table) on 317 honest comparisons and 104 copies. Honest: the stubs (no fingerprint of their own); the
# reference against the oracles (at most 16%: adamw, 18 fingerprints, runs of 4); the sample submission against
# the reference (45%, 48 fingerprints, a run of 11: it was written from the reference); each catalogued mistake
# written below its stub, against the reference and the oracles (at most 71%, of 7 fingerprints; at most 17
# matched, 47%, with a run of 14: shared_step_counter, whose step() is torch's optimizer idiom). Copies, renamed,
# reformatted, reordered (functions, and independent assignments) or re-emitted token by token: the reference
# and every oracle file at least 66% (the reference's adamw reordered); a part of an oracle below the stub at
# least 80%; below the reference's own module 14% to 48%, in runs of 43 to 100.
MIN_MATCHED = 20  # fingerprints found in the source, at the least: a few short functions alike are not a copy
MIN_SHARE = 0.55  # of the module's own fingerprints found in the source: the module is a copy ...
MIN_RUN = 28  # ... or this many in one run, in order on both sides (15 to 20 lines): a part of it is
# Padding: a copy with code inserted between its statements (a dead store after each) breaks every k-gram that
# spans two statements, but leaves each copied statement whole. So, beside the fingerprints: the statements of
# at least MIN_STATEMENT tokens (shorter ones, "V = V + N", are any code's), and the most of a module's found in
# one source in the same order on both sides, whatever lies between them (calibrated as above).
# Honest code: at most 10 statements in order (the sample against the reference it was written from; 7 against the
# oracles), at most 27% of the source's own (the stub's left out). Padded copies (a dead statement of 25 tokens
# after every statement, renamed): a whole module at least 74% of its source's; 120 lines of an oracle pasted
# below the stub 21 to 56 statements (60 lines below the reference's own module: 10 to 24, some missed).
MIN_STATEMENT = 8
MIN_IN_ORDER = 16  # statements of one source in its order: a part of it, whatever code lies between them ...
MIN_IN_ORDER_SHARE = 0.5  # ... or this share of the source's own statements (its stub's left out), ...
MIN_IN_ORDER_WHOLE = 8  # ... at least this many: the whole of it
HELPERS = {"adamw": ("torch.optim.optimizer",)}  # the oracles' own helpers, which a copy takes with them
MAX_BYTES = 200_000  # a module read in about a second; larger ones go to a person (a submission may send 1 MB each)
SPANS = 5  # matched spans named per source in the evidence

BUILTINS = frozenset(dir(builtins))
_LAYOUT = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING,
           tokenize.ENDMARKER, getattr(tokenize, "TYPE_COMMENT", -1)}
_FSTRING = {getattr(tokenize, name, -1) for name in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END")}


@dataclass(frozen=True)
class Tokens:
    """A module's normalised tokens and the line each starts and ends on."""

    text: tuple[str, ...]
    first: tuple[int, ...]
    last: tuple[int, ...]
    statements: tuple[int, ...] = ()  # where each statement (a compound one's header) starts in `text`


def bound_names(source: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """The names `source` binds and the attributes it assigns, which a copy can rename at will (None: it does
    not parse)."""
    try:
        with AST_LOCK:
            tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # read as tokens alone
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


def normalise(source: str, names_of: str | None = None) -> Tokens:
    """`source`'s tokens, as the module's docstring says (up to the first error, where it does not tokenize), with
    the names that `names_of` binds (default: `source`) taken as its own."""
    bound = bound_names(source if names_of is None else names_of)
    names, attributes = bound or (frozenset(), frozenset())
    raw: list[tokenize.TokenInfo] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type not in (tokenize.COMMENT, tokenize.NL):
                raw.append(tok)
    except (tokenize.TokenError, IndentationError, SyntaxError):  # the tokens before the error
        pass
    text, first, last, statements = [], [], [], []
    i, starts = 0, True
    while i < len(raw):
        tok = raw[i]
        kind, string = tok.type, tok.string
        if _ends_statement(tok):
            i, starts = i + 1, True
            continue
        if kind in _LAYOUT:
            i += 1
            continue
        if starts and kind == tokenize.NAME and string in ("import", "from"):
            while i < len(raw) and not _ends_statement(raw[i]):
                i += 1
            continue
        if kind == tokenize.STRING or kind in _FSTRING:  # a run of literals is one (implicit concatenation)
            j = i
            while j < len(raw) and (raw[j].type == tokenize.STRING or raw[j].type in _FSTRING):
                j += 1
            if not (starts and (j == len(raw) or _ends_statement(raw[j]))):  # else a docstring: a comment
                if starts:
                    statements.append(len(text))
                text.append("S"), first.append(tok.start[0]), last.append(raw[j - 1].end[0])
            i, starts = j, False
            continue
        if starts:
            statements.append(len(text))
        starts = False
        if kind == tokenize.OP:
            if string in ")]}" and text[-1:] == [","]:  # a trailing comma is layout
                text.pop(), first.pop(), last.pop()
            token = string
        elif kind == tokenize.NAME:
            token = string if keyword.iskeyword(string) or _kept(string, text[-1:] == ["."], names, attributes,
                                                                  bound is not None) else "V"
        elif kind == tokenize.NUMBER:
            token = "N"
        else:
            i += 1
            continue
        text.append(token), first.append(tok.start[0]), last.append(tok.end[0])
        i += 1
    return Tokens(tuple(text), tuple(first), tuple(last), tuple(statements))


def _kept(name: str, attribute: bool, names: frozenset[str], attributes: frozenset[str], parsed: bool) -> bool:
    """Whether a name stays as it is: an attribute the module does not assign, or a builtin it does not bind
    (every other name is the module's own, or one it takes from a source it copied)."""
    if not parsed:
        return False
    return name not in attributes if attribute else name in BUILTINS and name not in names


def _ends_statement(tok: tokenize.TokenInfo) -> bool:
    return tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER) or (tok.type == tokenize.OP and tok.string == ";")


def kgrams(tokens: Tokens) -> list[int]:
    """The hash of every K consecutive tokens (stable across processes: tokens are hashed by crc32)."""
    codes = [zlib.crc32(t.encode()) for t in tokens.text]
    return [hash(tuple(codes[i:i + K])) for i in range(len(codes) - K + 1)]


def statement_hashes(tokens: Tokens) -> list[int]:
    """The hash of each statement (a compound one's header) of at least MIN_STATEMENT tokens, in order: code
    inserted between copied statements leaves every copied one whole."""
    return [h for h, _, _ in statements_with_lines(tokens)]


def statements_with_lines(tokens: Tokens) -> list[tuple[int, int, int]]:
    """`statement_hashes`, each with the lines its statement starts and ends on: (hash, first, last)."""
    bounds = [*tokens.statements, len(tokens.text)]
    return [(hash(tuple(zlib.crc32(t.encode()) for t in tokens.text[a:b])), tokens.first[a], tokens.last[b - 1])
            for a, b in itertools.pairwise(bounds) if b - a >= MIN_STATEMENT]


def longest_in_order(found: list[list[int]]) -> int:
    """The most statements of a module found in a source in the same order on both sides: `found` holds, for each
    of the module's statements in its order, the positions of that statement in the source (a patience sort;
    each statement's positions taken from the last, so that one statement counts once)."""
    tails: list[int] = []
    for positions in found:
        for position in sorted(positions, reverse=True):
            i = bisect.bisect_left(tails, position)
            tails[i:i + 1] = [position]
    return len(tails)


def winnow(hashes: list[int]) -> dict[int, int]:
    """The fingerprints of a list of k-gram hashes: position -> hash, the rightmost minimum of each window of W
    (a module shorter than one window gives its minimum; a run of equal hashes, one)."""
    chosen: dict[int, int] = {}
    last = -1
    for start in range(max(1, len(hashes) - W + 1)):
        window = hashes[start:start + W]
        if not window:
            break
        low = min(window)
        if last >= start and hashes[last] == low:  # robust winnowing: a tie keeps the fingerprint already taken
            continue
        last = start + len(window) - 1 - window[::-1].index(low)
        chosen[last] = low
    return chosen


@dataclass
class Source:
    """A file a module may be a copy of: its name in the evidence, its tokens and where each k-gram occurs."""

    name: str
    tokens: Tokens
    where: dict[int, list[int]] = field(default_factory=dict)  # k-gram hash -> positions
    statements: dict[int, list[int]] = field(default_factory=dict)  # statement hash -> its places among them

    @classmethod
    def read(cls, name: str, text: str) -> "Source":
        tokens = normalise(text)
        where: dict[int, list[int]] = {}
        for position, h in enumerate(kgrams(tokens)):
            where.setdefault(h, []).append(position)
        statements: dict[int, list[int]] = {}
        for position, h in enumerate(statement_hashes(tokens)):
            statements.setdefault(h, []).append(position)
        return cls(name, tokens, where, statements)


@dataclass(frozen=True)
class Thresholds:
    """When a comparison is a copy: `matched` fingerprints at least, and `share` of them or one run of `run`; or
    padded: `in_order` statements in order, or `in_order_whole` and `in_order_share` of the smaller side's."""

    matched: int
    share: float
    run: int
    in_order: int
    in_order_share: float
    in_order_whole: int

    def padded(self, in_order: int, in_order_share: float) -> bool:
        return in_order >= self.in_order or (in_order >= self.in_order_whole and in_order_share >= self.in_order_share)

    def copied(self, matched: int, share: float, longest: int, in_order: int, in_order_share: float) -> bool:
        return matched >= self.matched and (share >= self.share or longest >= self.run) or \
            self.padded(in_order, in_order_share)


COPY = Thresholds(MIN_MATCHED, MIN_SHARE, MIN_RUN, MIN_IN_ORDER, MIN_IN_ORDER_SHARE, MIN_IN_ORDER_WHOLE)


@dataclass
class Match:
    """A module's fingerprints found in a group of sources (the oracles of its problem, or the reference)."""

    problem: str
    against: str  # "oracle" or "reference"
    own: int  # the module's fingerprints, the stub's left out
    matched: int
    longest: int  # fingerprints in the longest run matched in one source
    spans: list[str]
    in_order: int = 0  # the most statements found in one source in its order, whatever code lies between them
    in_order_source: str = ""
    in_order_share: float = 0.0  # of that source's statements (its stub's left out)

    @property
    def padded_copy(self) -> bool:
        return COPY.padded(self.in_order, self.in_order_share)

    @property
    def share(self) -> float:
        return self.matched / self.own if self.own else 0.0

    @property
    def copied(self) -> bool:
        return COPY.copied(self.matched, self.share, self.longest, self.in_order, self.in_order_share)

    def evidence(self) -> str:
        padded = (f"; {self.in_order} of its statements ({self.in_order_share:.0%} of {self.in_order_source}'s) are "
                  "that source's, in the same order, whatever code lies between them" if self.padded_copy else "")
        return (f"[copy] {self.problem}.py: {self.matched} of its {self.own} fingerprints ({self.share:.0%}) are "
                f"in the {self.against}'s source (renaming and layout ignored){padded}: " + "; ".join(self.spans))


def compare(module: str, tokens: Tokens, fingerprints: dict[int, int], sources: list[Source], problem: str,
            against: str, statements: list[int] = (), given: frozenset[int] = frozenset()) -> Match:
    """The submitted `module` (its tokens, fingerprints and `statement_hashes`, the stub's, `given`, left out)
    against `sources`."""
    found: dict[str, list[tuple[int, int]]] = {}  # source -> (module position, source position)
    matched = 0
    for position, h in sorted(fingerprints.items()):
        hit = False
        for source in sources:
            if h in source.where:
                pairs = found.setdefault(source.name, [])
                pairs.append((position, continued_at(source.where[h], pairs[-1][1] if pairs else -1)))
                hit = True
        matched += hit
    spans, longest = [], 0
    for source in sources:
        runs = matched_runs(found.get(source.name, []))
        longest = max([longest] + [r[4] for r in runs])
        for a, b, c, d, n in runs[:SPANS]:
            spans.append(f"{module}.py lines {tokens.first[a]}-{tokens.last[b + K - 1]} ~ {source.name} lines "
                         f"{source.tokens.first[c]}-{source.tokens.last[d + K - 1]} ({n} fingerprints)")
    in_order, source = max(((longest_in_order([s.statements[h] for h in statements if h in s.statements]), s)
                            for s in sources), key=lambda found: found[0], default=(0, None))
    own = sum(len(places) for h, places in source.statements.items() if h not in given) if source else 0
    return Match(problem, against, len(fingerprints), matched, longest, spans, in_order,
                 source.name if source else "", in_order / own if own else 0.0)


def continued_at(positions: list[int], after: int) -> int:
    """Where a k-gram found at `positions` of a source continues a run that reached `after` there (the first
    one after it, so that a run follows repeated code in order), else its first position."""
    i = bisect.bisect_right(positions, after)
    return positions[i] if i < len(positions) and positions[i] - after <= 4 * (K + W) else positions[0]


def matched_runs(pairs: list[tuple[int, int]]) -> list[tuple[int, int, int, int, int]]:
    """Matched fingerprints (module position, source position) grouped into runs that are close on both sides:
    (module start, module end, source start, source end, fingerprints), the longest first."""
    runs: list[list] = []
    for mine, theirs in pairs:
        run = runs[-1] if runs else None
        if run and mine - run[1] <= K + W and 0 <= theirs - run[3] <= 4 * (K + W):
            run[1], run[3], run[4] = mine, theirs, run[4] + 1
        else:
            runs.append([mine, mine, theirs, theirs, 1])
    return sorted((tuple(r) for r in runs), key=lambda r: -r[4])


def _module_files(name: str) -> list[Path]:
    """The source files of module or package `name`, found without importing it or its parents (importing
    torch costs the grader's process seconds and hundreds of MiB); [] for a compiled kernel or a missing one."""
    top, *rest = name.split(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return []
    if spec is None or spec.origin is None:
        return []
    base = Path(spec.origin).parent if spec.submodule_search_locations else Path(spec.origin)
    if not rest:
        return sorted(base.rglob("*.py")) if base.is_dir() else [base]
    path = base.joinpath(*rest)
    if path.is_dir() and (path / "__init__.py").exists():
        return sorted(path.rglob("*.py"))
    return [path.with_suffix(".py")] if path.with_suffix(".py").is_file() else []


@functools.cache
def oracle_sources(problem: str) -> tuple[Source, ...]:
    """The oracles of `problem` (and their helpers), read once per grader process."""
    names = (*registry.ORACLES.get(problem, ()), *HELPERS.get(problem, ()))
    files = dict.fromkeys(f for n in names for f in _module_files(n))
    return _sources([(_shown(f), f) for f in files])


def _sources(files: list[tuple[str, Path]]) -> tuple[Source, ...]:
    """The `files` (their names in the evidence, their paths) read as sources, kept on disk between runs
    (grader/kept.py) under a digest of their bytes, this module's and Python's version: reading them again took a
    grading 0.6 s of its CPU."""
    texts = [(name, path.read_bytes()) for name, path in files]
    digest = hashlib.sha256(sys.version.encode() + b"\0" + Path(__file__).read_bytes())
    for name, data in texts:
        digest.update(b"\0" + name.encode() + b"\0" + data)
    file = kept.folder("copycheck") / f"{digest.hexdigest()[:32]}.pickle"
    sources = kept.load(file)
    if sources is None:
        sources = tuple(Source.read(name, data.decode("utf-8", errors="replace")) for name, data in texts)
        kept.store(file, sources)
    return sources


def _shown(path: Path) -> str:
    """An installed file's name from its top-level package on (torch/optim/adam.py)."""
    parts = path.parts
    for i in range(len(parts) - 1, 0, -1):
        if parts[i - 1] in ("site-packages", "dist-packages"):
            return "/".join(parts[i:])
    return "/".join(parts[-3:])


@functools.cache
def reference_source(module: str) -> tuple[Source, ...]:
    path = OFFICIAL_ROOT / "reference" / f"{module}.py"
    return _sources([(f"reference/{module}.py", path)]) if has_reference() and path.exists() else ()


@functools.cache
def stub_kgrams(module: str) -> frozenset[int]:
    stub = stub_source(module)
    return frozenset(kgrams(normalise(stub.decode("utf-8", errors="replace")))) if stub else frozenset()


@functools.cache
def stub_statements(module: str) -> frozenset[int]:
    stub = stub_source(module)
    return frozenset(statement_hashes(normalise(stub.decode("utf-8", errors="replace")))) if stub else frozenset()


def check(module: str, source: bytes | str) -> list[Match]:
    """The submitted `module` against its problem's oracles and its reference: every comparison made."""
    problem = next(p.id for p in registry.PROBLEMS if p.module == module)
    text = source.decode("utf-8", errors="replace") if isinstance(source, bytes) else source
    tokens = normalise(text)
    stub = stub_kgrams(module)
    fingerprints = {p: h for p, h in winnow(kgrams(tokens)).items() if h not in stub}
    given = stub_statements(module)
    statements = [h for h in statement_hashes(tokens) if h not in given]
    matches = []
    for against, sources in (("oracle", oracle_sources(problem)), ("reference", reference_source(module))):
        if sources:
            matches.append(compare(module, tokens, fingerprints, list(sources), problem, against, statements, given))
    return matches


RUNS_TEXT = frozenset({"exec", "eval", "compile"})  # builtins that run code given as text
DECODING = frozenset({"b64decode", "b85decode", "a85decode", "b32decode", "b16decode", "decodebytes",
                      "standard_b64decode", "urlsafe_b64decode", "decompress", "a2b_base64", "a2b_hex", "unhexlify",
                      "CodeType", "FunctionType"})  # attributes that turn data into code, or into its text
OPAQUE_CHARACTERS = 2000  # a literal this long is decoded; without spaces, it is evidence (the stubs' docstrings,
# up to 5,244 characters, are prose: a sixth spaces)


def carried_as_data(module: str, text: str) -> list[str]:
    """What of `module` runs or decodes code given as data, or could hold it: evidence for a person by itself, and
    the copy check of each large literal decoded."""
    try:
        with AST_LOCK:
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    names, attributes = bound_names(text) or (frozenset(), frozenset())
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else None
            attribute = node.func.attr if isinstance(node.func, ast.Attribute) else None
            owner = node.func.value.id if attribute and isinstance(node.func.value, ast.Name) else None
            if name in RUNS_TEXT and name not in names or attribute in DECODING and attribute not in attributes \
                    or attribute == "loads" and owner in ("marshal", "pickle"):
                lines.append(f"[data] {module}.py line {node.lineno}: calls {name or attribute}, which runs or decodes "
                             "code given as data (no solution needs it)")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str | bytes) and \
                len(node.value) >= OPAQUE_CHARACTERS:
            spaces = sum(c in b" \n\t" for c in (node.value.encode("utf-8", "replace") if isinstance(
                node.value, str) else node.value))
            if spaces < len(node.value) / 100:  # prose and code are a sixth spaces; encoded data has none
                lines.append(f"[data] {module}.py line {node.lineno}: a literal of {len(node.value)} characters "
                             "without a space: data, not text")
            lines += [f"{m.evidence()} (decoded from the literal at line {node.lineno})"
                      for decoded in _decoded(node.value) for m in check(module, decoded) if m.copied]
    return lines


def _decoded(value: str | bytes) -> list[str]:
    """`value` decoded as a copy carried in a literal would be: every text that comes out of base64, base85, ascii85
    or hex, followed by nothing or by zlib, lzma or bz2."""
    import base64
    import binascii
    import bz2
    import lzma

    data = value.encode("latin-1", "replace") if isinstance(value, str) else value
    found = []
    for decode in (base64.b64decode, base64.b85decode, base64.a85decode, binascii.unhexlify, bytes):
        try:
            raw = decode(data)
        except (ValueError, TypeError):
            continue
        for expand in (bytes, zlib.decompress, lzma.decompress, bz2.decompress):
            try:
                found.append(expand(raw).decode("utf-8"))
            except (ValueError, TypeError, OSError, EOFError, lzma.LZMAError, zlib.error):
                continue
    return found


def evidence(modules: dict[str, bytes]) -> list[str]:
    """One line of evidence per copy among the submitted `modules` (name -> source), and one per module too large
    to read in the time it may take. Every module is read but the untouched stubs: one whose functions all
    raise NotImplementedError can still hold a copy at its top level (graded as not started, it may pass)."""
    lines = []
    for name, source in modules.items():
        if source == stub_source(name):
            continue
        if len(source) > MAX_BYTES:
            lines.append(f"[copy] {name}.py: {len(source)} bytes, over the {MAX_BYTES} the copy check reads "
                         "(the reference's largest module is 25 kB): not compared, for a person to look at")
            continue
        lines += [m.evidence() for m in check(name, source) if m.copied]
        lines += carried_as_data(name, source.decode("utf-8", errors="replace"))
    return lines


@functools.cache
def stub_source(module: str) -> bytes | None:
    """The untouched stub of `module` as the official tree gives it (None: there is none)."""
    path = OFFICIAL_ROOT / "assignment" / f"{module}.py"
    return path.read_bytes() if path.exists() else None
