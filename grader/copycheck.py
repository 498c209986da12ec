"""Copies of an oracle or of the reference in a submitted module, found past renaming, reformatting and code that
does nothing.

Runs on the problem modules as the submission gave them, never in the worker, and in a box of its own when it grades
(grader/harness/analysis.py: its limits and the grading's deadline), after MOSS (Schleimer, Wilkerson, Aiken,
"Winnowing: local algorithms for document fingerprinting", SIGMOD 2003):

1. tokens     what of the module runs (grader/normalised.py: read as Python reads it, what does not run or does
              nothing taken out, written anew), with docstrings and imports left out; every literal is `N` or `S`;
              every name is `V` (the module's own, or one that a pasted part takes from its source), and so is every
              attribute the module assigns or defines as a method. What it cannot rename without breaking the code
              stays: keywords, builtins, the attributes of torch's and other modules' objects. A renamed copy reads
              the same, and two independent solutions that share only a shape of code (`V = V * V`) are less alike
              than they would be with every name one token. Each token keeps the lines of its statement.
2. k-grams    a hash of every K consecutive tokens.
3. winnowing  of every W consecutive k-gram hashes the smallest (the rightmost on ties) is a fingerprint: any
              run of K + W - 1 tokens shared with a source is found, whatever else the module holds.
4. statements the hash of each statement of MIN_STATEMENT tokens or more (a compound statement's header alone),
              and the most of them found in one source in the same order on both sides: code inserted between
              copied statements that step 1 cannot see through breaks the k-grams that span two statements, but
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

A copy can also be carried as data, and decoded by any call at all: what counts is the module's payload by its size
(`payload`), and what its literals decode to, checked as a module of its own (`carried_as_data`). Which calls a
module makes, and what its names spell, are no evidence: honest code evals short formulas and pickles plain data.
"""

import ast
import bisect
import collections
import functools
import hashlib
import importlib.util
import io
import itertools
import sys
import tokenize
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from grader import OFFICIAL_ROOT, has_reference, kept, normalised, registry
from grader.normalised import Tokens, bound_names, normalise, parse, read_source  # noqa: F401 - the copy check's

K = 12  # tokens per k-gram
W = 8  # k-grams per window: every run of K + W - 1 = 19 shared tokens is seen
# The thresholds, calibrated by tests/meta/test_copycheck.py (`python -m tests.meta.test_copycheck` prints the
# table) on 317 honest comparisons and 198 copies. Honest: the stubs (no fingerprint of their own); the
# reference against the oracles (at most 20%: 23 fingerprints, runs of 4); the sample submission against the
# reference (51%, 57 fingerprints, a run of 10: it was written from the reference); each catalogued mistake written
# below its stub, against the reference and the oracles (at most 86%, of 7 fingerprints; at most 21 matched, 58%,
# with a run of 14: shared_step_counter, whose step() is torch's optimizer idiom). Copies, renamed, reformatted,
# reordered (functions, and independent assignments) or re-emitted token by token: the reference and every oracle
# file at least 75% (the reference's flops reordered); a part of an oracle below the reference's own module in runs
# of 44 to 248.
MIN_MATCHED = 22  # fingerprints found in the source, at the least: a few short functions alike are not a copy
MIN_SHARE = 0.62  # of the module's own fingerprints found in the source: the module is a copy ...
MIN_RUN = 28  # ... or this many in one run, in order on both sides (15 to 20 lines): a part of it is
# Padding: a copy with code inserted between its statements that still does something (a store that is read, a
# call) breaks every k-gram that spans two statements, but leaves each copied statement whole. So, beside the
# fingerprints: the statements of at least MIN_STATEMENT tokens (shorter ones, "V = V + N", are any code's), and the
# most of a module's found in one source in the same order on both sides, whatever lies between them (calibrated as
# above). Honest code: at most 11 statements in order (the sample against the reference it was written from; 8
# against the oracles), at most 29% of the source's own (the stub's left out). Padded copies (a dead statement of 25
# tokens after every statement, renamed; and each statement changed in what does nothing, with bare CR line ends): a
# whole module at least 93% of its source's; 120 lines of an oracle pasted below the stub 19 to 56 statements.
MIN_STATEMENT = 8
MIN_IN_ORDER = 17  # statements of one source in its order: a part of it, whatever code lies between them ...
MIN_IN_ORDER_SHARE = 0.55  # ... or this share of the source's own statements (its stub's left out), ...
MIN_IN_ORDER_WHOLE = 8  # ... at least this many: the whole of it
HELPERS = {"adamw": ("torch.optim.optimizer",)}  # the oracles' own helpers, which a copy takes with them
MAX_BYTES = 200_000  # a module read in about a second; larger ones go to a person (a submission may send 1 MB each)
SPANS = 5  # matched spans named per source in the evidence

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
    def read(cls, name: str, text: bytes | str) -> "Source":
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


def _oracle_files(problem: str) -> list[tuple[str, Path]]:
    """The files of the oracles of `problem` and of their helpers: (its name in the evidence, its path)."""
    names = (*registry.ORACLES.get(problem, ()), *HELPERS.get(problem, ()))
    return [(_shown(f), f) for f in dict.fromkeys(f for n in names for f in _module_files(n))]


def _reference_files(module: str) -> list[tuple[str, Path]]:
    path = OFFICIAL_ROOT / "reference" / f"{module}.py"
    return [(f"reference/{module}.py", path)] if has_reference() and path.exists() else []


def _stub_files(module: str) -> list[tuple[str, Path]]:
    path = OFFICIAL_ROOT / "assignment" / f"{module}.py"
    return [(f"assignment/{module}.py", path)] if path.exists() else []


@functools.cache
def oracle_sources(problem: str) -> tuple[Source, ...]:
    """The oracles of `problem` (and their helpers), read once per grader process."""
    return _kept(_oracle_files(problem), _read_sources)


@functools.cache
def reference_source(module: str) -> tuple[Source, ...]:
    files = _reference_files(module)
    return _kept(files, _read_sources) if files else ()


def _read_sources(texts: list[tuple[str, bytes]]) -> tuple[Source, ...]:
    return tuple(Source.read(name, data) for name, data in texts)


def _kept(files: list[tuple[str, Path]], compute, *, read: bool = True):
    """`compute` of the `files`' texts ([(name, bytes)]), kept on disk between runs (grader/kept.py) under a digest of
    them, of this module's and normalised.py's source and of Python's version, so that a stale one is never read:
    reading the oracles again took a grading a second of its CPU. Not `read`: only computed and kept where it is not
    yet (None is returned where it is)."""
    texts = [(name, path.read_bytes()) for name, path in files]
    digest = hashlib.sha256(sys.version.encode() + b"\0" + Path(__file__).read_bytes()
                            + Path(normalised.__file__).read_bytes() + b"\0" + compute.__name__.encode())
    for name, data in texts:
        digest.update(b"\0" + name.encode() + b"\0" + data)
    file = kept.folder("copycheck") / f"{digest.hexdigest()[:32]}.pickle"
    if read:
        value = kept.load(file)
        if value is not None:
            return value
    elif file.exists():
        return None
    value = compute(texts)
    kept.store(file, value)
    return value


def keep(modules: Iterable[str]) -> None:
    """What the copy check of `modules` compares them with (their problems' oracles, the reference's modules and the
    untouched stubs), computed and kept on disk where it is not yet. The grader's own process does it before the
    analysis box starts (grader/analysis.py): the box may write no file, so what it computed would be computed again
    at every grading."""
    for module in modules:
        if module not in registry.BY_MODULE:
            continue
        for files, compute in ((_oracle_files(registry.BY_MODULE[module].id), _read_sources),
                               (_reference_files(module), _read_sources), (_stub_files(module), _stub_hashes)):
            if files:
                _kept(files, compute, read=False)


def _shown(path: Path) -> str:
    """An installed file's name from its top-level package on (torch/optim/adam.py)."""
    parts = path.parts
    for i in range(len(parts) - 1, 0, -1):
        if parts[i - 1] in ("site-packages", "dist-packages"):
            return "/".join(parts[i:])
    return "/".join(parts[-3:])


def stub_readings(module: str) -> list[Tokens]:
    """The untouched stub of `module` read both ways a submission can be read (what runs, and plain tokens: a
    submission that does not parse is read so), so that its code counts for nothing either way."""
    stub = stub_source(module)
    return _readings(stub) if stub else []


def _readings(stub: bytes) -> list[Tokens]:
    return [normalise(stub), normalised.as_tokens(stub)]


def _stub_hashes(texts: list[tuple[str, bytes]]) -> tuple[frozenset[int], frozenset[int]]:
    """The k-grams and the statement hashes of a stub's readings ([(name, its bytes)])."""
    readings = [tokens for _, stub in texts for tokens in _readings(stub)]
    return (frozenset(h for tokens in readings for h in kgrams(tokens)),
            frozenset(h for tokens in readings for h in statement_hashes(tokens)))


@functools.cache
def _stub_kept(module: str) -> tuple[frozenset[int], frozenset[int]]:
    files = _stub_files(module)
    return _kept(files, _stub_hashes) if files else (frozenset(), frozenset())


def stub_kgrams(module: str) -> frozenset[int]:
    return _stub_kept(module)[0]


def stub_statements(module: str) -> frozenset[int]:
    return _stub_kept(module)[1]


def check(module: str, source: bytes | str) -> list[Match]:
    """The submitted `module` against its problem's oracles and its reference: every comparison made."""
    problem = registry.BY_MODULE[module].id
    tokens = normalise(source)
    stub = stub_kgrams(module)
    fingerprints = {p: h for p, h in winnow(kgrams(tokens)).items() if h not in stub}
    given = stub_statements(module)
    statements = [h for h in statement_hashes(tokens) if h not in given]
    matches = []
    for against, sources in (("oracle", oracle_sources(problem)), ("reference", reference_source(module))):
        if sources:
            matches.append(compare(module, tokens, fingerprints, list(sources), problem, against, statements, given))
    return matches


# -- code carried as data ----------------------------------------------------------------------------------------

# A copy can also be carried as data: encoded (base64, hex, a tuple of byte values), compressed or archived, split over
# many literals, and turned back into code by any call at all (a codec, a loop of its own, importlib reading a file it
# wrote). So what counts is the payload, whatever decodes it (`payload`): the characters of the module's literals
# (strings and bytes, f-strings' parts), of the numbers in its collections and of its long numbers, the stub's own
# left out; of its docstrings where it reads its documentation (`__doc__`), and of its docstrings and comments where
# it can read its own source (`reads_own_source`). Past PAYLOAD_CHARACTERS it is evidence by itself. What could hide
# a copy is also decoded as one would decode it (`decodings`, every output bounded: a compression bomb stops at
# DECODED_BYTES) and what comes out as text is checked as a module of its own.
# Honest code (docstrings aside): at most 1,969 characters (the reference's mini_einops, its error messages and
# patterns); the honest corpus 326. An oracle's source carried whole: 7,376 to 75,752 characters as text, 2,186 to
# 20,642 compressed (tests/meta/test_copycheck.py checks both sides).
PAYLOAD_CHARACTERS = 5000
LONG_NUMBER = 20  # digits: a number this long is data, wherever it stands
DECODED_FROM = 256  # characters: a literal this long (or all of a module's strings joined, or its numbers as bytes)
DECODED_BYTES = MAX_BYTES  # is decoded, each decoding giving at most this much ...
DECODINGS = 12  # ... and this many decodings of a module checked at most
SOURCE_READERS = ("builtins.open", "builtins.__import__", "builtins.globals", "builtins.vars", "builtins.compile",
                  "builtins.exec", "builtins.eval", "io", "os", "pathlib", "inspect", "linecache", "traceback",
                  "tokenize", "importlib", "pkgutil", "runpy", "zipimport", "codecs", "glob", "sys.modules",
                  "sys._getframe", "sys.path", "sys.argv")
SOURCE_ATTRIBUTES = frozenset({"co_filename", "f_code", "f_globals", "__globals__", "__code__", "tb_frame", "gi_frame",
                               "f_back", "__file__", "__spec__", "__loader__", "__cached__", "get_source", "get_data",
                               "read_text", "read_bytes", "open"})
OWN_NAMES = frozenset({"__file__", "__spec__", "__loader__", "__cached__", "__builtins__", "__package__"})


def reads_own_source(tree: ast.Module) -> bool:
    """Whether the module can read its own file (and so its comments): it names its file or spec, reaches frames or
    code objects, or something that opens, finds or loads files (resolved through its imports: grader/reach.py)."""
    from grader import reach

    if any(isinstance(n, ast.Name) and n.id in OWN_NAMES for n in ast.walk(tree)):
        return True
    return any(r.name.rpartition(".")[2] in SOURCE_ATTRIBUTES for r in reach.references(tree)) or \
        bool(reach.reaches(tree, SOURCE_READERS))


def _literals(tree: ast.Module | None, docstrings: bool) -> collections.Counter:
    """The module's payload-carrying literals, each as text (its size is its length): strings and bytes (docstrings
    too, with `docstrings`), the numbers of its collections, its long numbers."""
    found: collections.Counter = collections.Counter()
    if tree is None:
        return found
    documentation = set() if docstrings else {
        id(n.body[0].value) for n in ast.walk(tree)
        if isinstance(n, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n.body
        and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    in_collection = {id(e) for n in ast.walk(tree) if isinstance(n, ast.List | ast.Tuple | ast.Set | ast.Dict)
                     for e in ([*n.keys, *n.values] if isinstance(n, ast.Dict) else n.elts) if e is not None}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or id(node) in documentation:
            continue
        value = node.value
        if isinstance(value, str | bytes):
            found[value] += 1
        elif isinstance(value, int | float | complex) and not isinstance(value, bool):
            text = repr(value)
            if id(node) in in_collection or len(text) >= LONG_NUMBER:
                found[f"\0{text}"] += 1  # apart from a string of the same characters
    return found


def _comments(text: str) -> collections.Counter:
    found: collections.Counter = collections.Counter()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                found[tok.string] += 1
    except (tokenize.TokenError, SyntaxError):
        pass
    return found


@dataclass(frozen=True)
class Payload:
    """What a module carries as data beyond its stub: the characters, and whether its docstrings and comments are
    among them (it can read its own source)."""

    characters: int
    comments: bool

    @property
    def evidence(self) -> bool:
        return self.characters > PAYLOAD_CHARACTERS


def payload(module: str, source: bytes | str) -> Payload:
    """The opaque payload of the submitted `module` (see above); nothing for a module that does not parse (it cannot
    run: its copy check reads its tokens)."""
    text = read_source(source)
    tree = parse(text)
    if tree is None:
        return Payload(0, False)
    stub = stub_source(module)
    stub_text = read_source(stub) if stub else ""
    stub_tree = parse(stub_text) if stub else None
    comments = reads_own_source(tree)
    docstrings = comments or any(isinstance(n, ast.Name) and n.id == "__doc__" or isinstance(n, ast.Attribute)
                                 and n.attr == "__doc__" for n in ast.walk(tree))
    extra = _literals(tree, docstrings) - _literals(stub_tree, docstrings)
    size = sum((len(value) - (value[:1] == "\0")) * n for value, n in extra.items())
    if comments:
        size += sum(len(c) * n for c, n in (_comments(text) - _comments(stub_text)).items())
    return Payload(size, comments)


def decodings(source: bytes | str) -> list[str]:
    """What of `source` could be a module carried as data, decoded as a copy would be (at most DECODINGS texts, each
    at most DECODED_BYTES): each literal of DECODED_FROM characters or more, all its strings joined in order, and its
    numbers in collections as bytes; each as it is, or from base64, base85, ascii85 or hex; then as it is, or
    expanded from zlib, lzma, bz2 or a zip archive's members."""
    tree = parse(read_source(source))
    if tree is None:
        return []
    strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str | bytes)]
    candidates = [v.encode("latin-1", "replace") if isinstance(v, str) else v for v in strings
                  if len(v) >= DECODED_FROM]
    joined = "".join(v for v in strings if isinstance(v, str))
    if len(joined) >= DECODED_FROM:
        candidates.append(joined.encode("latin-1", "replace"))
    for node in ast.walk(tree):
        if isinstance(node, ast.List | ast.Tuple | ast.Set) and len(node.elts) >= DECODED_FROM:
            values = [e.value for e in node.elts if isinstance(e, ast.Constant) and type(e.value) is int]
            if len(values) == len(node.elts) and all(0 <= v < 256 for v in values):
                candidates.append(bytes(values))
    found: list[str] = []
    for data in candidates:
        for text in _decoded(data):
            if text not in found:
                found.append(text)
            if len(found) >= DECODINGS:
                return found
    return found


def _decoded(data: bytes) -> list[str]:
    """Every text (UTF-8, at most DECODED_BYTES) that comes out of `data` read as base64, base85, ascii85, hex or
    itself, followed by nothing or by zlib, lzma, bz2 or a zip archive."""
    import base64
    import binascii

    found = []
    for decode in (bytes, base64.b64decode, base64.b85decode, base64.a85decode, binascii.unhexlify):
        try:
            raw = decode(data)
        except (ValueError, TypeError):
            continue
        for expanded in (raw[:DECODED_BYTES], *_expanded(raw)):
            try:
                found.append(expanded.decode("utf-8"))
            except UnicodeDecodeError:
                continue
    return found


def _expanded(raw: bytes) -> list[bytes]:
    """`raw` decompressed by each of zlib, lzma, bz2 where that works, and the members of a zip archive: each output
    cut at DECODED_BYTES, however much the input would give."""
    import bz2
    import lzma
    import zipfile

    found = []
    for make in (lambda: zlib.decompressobj(), lambda: zlib.decompressobj(zlib.MAX_WBITS | 32), lzma.LZMADecompressor,
                 bz2.BZ2Decompressor):
        try:
            out = make().decompress(raw, DECODED_BYTES)
        except (ValueError, OSError, EOFError, lzma.LZMAError, zlib.error):
            continue
        if out:
            found.append(out)
    if raw[:2] == b"PK":
        try:
            with zipfile.ZipFile(io.BytesIO(raw)) as archive:
                for info in archive.infolist()[:DECODINGS]:
                    with archive.open(info) as member:
                        found.append(member.read(DECODED_BYTES))
        except (zipfile.BadZipFile, ValueError, OSError, EOFError, NotImplementedError, RuntimeError):
            pass
    return found


def carried_as_data(module: str, source: bytes | str) -> list[str]:
    """The evidence of data carried by `module`: its payload past PAYLOAD_CHARACTERS, and each copy found in what its
    literals decode to."""
    lines = []
    carried = payload(module, source)
    if carried.evidence:
        comments = "; its docstrings and comments: it can read its own source" if carried.comments else ""
        lines.append(f"[data] {module}.py: {carried.characters} characters of literals beyond the stub's (strings, "
                     f"bytes, numbers in collections{comments}), over the {PAYLOAD_CHARACTERS} any solution needs: a "
                     "payload, whatever decodes it (for a person to look at)")
    for text in decodings(source):
        lines += [f"{m.evidence()} (decoded from its literals)" for m in check(module, text) if m.copied]
    return lines


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
        lines += carried_as_data(name, source)
    return lines


@functools.cache
def stub_source(module: str) -> bytes | None:
    """The untouched stub of `module` as the official tree gives it (None: there is none)."""
    files = _stub_files(module)
    return files[0][1].read_bytes() if files else None
