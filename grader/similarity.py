"""Copies between students: every pair of a batch's submissions compared per problem module, for course staff.

The copy check's tokens and winnowing (grader/copycheck.py: names, literals and layout ignored) serve here too:

1. each grading returns its submission's similarity digest (`digest`): per module it gives, the winnowed k-gram
   hashes with where each stands (its token position, its first and last line) and the hashes of its statements
   with their lines, the untouched stub's k-grams and statements left out (copycheck.stub_kgrams, stub_statements).
   It is hashes and line numbers, never the source: a submission's code travels once, to its grading;
2. where the results are gathered (`compare_class`), an index from each winnowed hash to the submissions that hold
   it finds the pairs that share any; a hash held by more than COMMON_SHARE of the class (and more than
   COMMON_AT_LEAST submissions) is what the class writes alike and counts for nothing, as in MOSS. The cost grows
   with the pairs that share something, not with the square of the class;
3. a pair that shares at least MIN_SHARED hashes is compared as the copy check compares a module with a source:
   the share of the smaller side's hashes the other holds, the longest run of them in the same order on both
   sides, and the most statements of one found in the other in the same order whatever code lies between them
   (padding). Reported (`Pair.similar`) past the calibrated thresholds below, with the matched line ranges on
   both sides;
4. three or more submissions joined by reported pairs on one problem are a cluster (one source shared).

A base (`--similarity-base`: past years' submissions, known public solutions) is indexed beside the class: a class
submission is compared with it, its members never with each other. Nothing here changes a score or reaches
results.json.
"""

import itertools
from dataclasses import dataclass, field
from pathlib import Path

from grader import copycheck, registry
from grader.submission import SubmissionError, read_modules

# The thresholds, calibrated by tests/meta/test_similarity.py (`python -m tests.meta.test_similarity` prints the
# table) on four seeded classes of 44 (41,564 honest pairs of modules, 60 planted), each module read as the copy
# check reads it (what runs: grader/normalised.py). Honest: the stub with catalogued mistakes of the student's own
# choice and functions of their own, in an order of their own (a long mistake is one student's; short ones are
# shared, as students converge on them), the honest adamw of tests/meta/honest/ against the reference's: at most
# 19 hashes shared, 28% of the smaller side's, runs of 19, 6 statements in order. Copies of the reference's module
# by another student: renamed, commented, re-emitted token by token (100%), reordered (79% to 87%), a function of
# another student's swapped in (97%), lines pasted below code of their own (54% to 58%, runs of 57), padded with a
# dead statement after each (95%: the dead statements are read through), and taken whole, reordered, padded,
# changed in what does nothing and written with bare CR line ends (65%, runs of 37): none missed, no honest pair
# reported. MIN_RUN is 40, not the copy check's 28: in tests/benchmarks/similarity.py's class of 600, its first 150
# and 300 hold one dense 10-line mistake written alike by a dozen students and more (below the common share), runs
# of 28 to 30.
COMMON_SHARE = 0.1  # a hash held by more than this share of the class is what the class writes alike ...
COMMON_AT_LEAST = 4  # ... where that is more than this many submissions: a cluster of four is found in any class
MIN_SHARED = 20  # hashes shared, at the least: a few short functions written alike are not a copy
MIN_SHARE = 0.5  # of the smaller side's own hashes found in the other: one holds the other ...
MIN_RUN = 40  # ... or this many in one run in the same order on both sides (25 to 30 lines): a part was copied
MIN_IN_ORDER = 16  # statements of one in the other's order, whatever lies between them: a padded part ...
MIN_IN_ORDER_SHARE = 0.5  # ... or this share of the smaller side's statements, ...
MIN_IN_ORDER_WHOLE = 7  # ... at least this many (honest pairs: at most 6): the whole of it, padded
SPANS = 5  # matched line ranges named per pair
BETWEEN_STUDENTS = copycheck.Thresholds(MIN_SHARED, MIN_SHARE, MIN_RUN, MIN_IN_ORDER, MIN_IN_ORDER_SHARE,
                                        MIN_IN_ORDER_WHOLE)


@dataclass(frozen=True)
class ModuleDigest:
    """One module of one submission: winnowed hash -> where it stands, (token position, first line, last line),
    in order; its statements' (hash, first line, last line), in order. The stub's are left out."""

    winnowed: dict[int, list[tuple[int, int, int]]]
    statements: list[tuple[int, int, int]]

    @classmethod
    def from_data(cls, data: dict) -> "ModuleDigest":
        winnowed: dict[int, list[tuple[int, int, int]]] = {}
        for position, h, first, last in data["winnowed"]:
            winnowed.setdefault(h, []).append((position, first, last))
        return cls(winnowed, [tuple(s) for s in data["statements"]])


def module_digest(module: str, text: bytes | str) -> dict:
    """The similarity digest of the submitted `module`'s source `text` (as plain data, for JSON), read as the copy
    check reads it (grader/normalised.py: what runs, with the lines it stands on in the source)."""
    tokens = copycheck.normalise(text)
    stub, given = _given(module, text)
    winnowed = [[position, h, tokens.first[position], tokens.last[position + copycheck.K - 1]]
                for position, h in sorted(copycheck.winnow(copycheck.kgrams(tokens)).items()) if h not in stub]
    statements = [list(s) for s in copycheck.statements_with_lines(tokens) if s[0] not in given]
    return {"winnowed": winnowed, "statements": statements}


def _given(module: str, text: bytes | str) -> tuple[frozenset[int], frozenset[int]]:
    """The stub's k-grams and statements, as the stub reads and as it reads within the submitted `text`: code that
    binds a name the stub uses (a builtin), or does not parse (every name is then one token), reads the stub's
    code otherwise, which two submissions alike in that would otherwise share."""
    kgrams, statements = copycheck.stub_kgrams(module), copycheck.stub_statements(module)
    stub = copycheck.stub_source(module)
    if stub is None:
        return kgrams, statements
    tokens = copycheck.normalise(stub, names_of=text)
    return kgrams | frozenset(copycheck.kgrams(tokens)), statements | frozenset(copycheck.statement_hashes(tokens))


def digest(modules: dict[str, bytes]) -> dict[str, dict]:
    """The similarity digest of a submission's problem `modules` (name -> source): module -> `module_digest`. An
    untouched stub and a module over copycheck.MAX_BYTES (the copy check flags it for a person) are left out."""
    found = {}
    for name, source in modules.items():
        if len(source) > copycheck.MAX_BYTES or source == copycheck.stub_source(name):
            continue
        found[name] = module_digest(name, source)
    return found


def base_digests(folder: Path, digest_of=None) -> dict[str, dict]:
    """The digests of a base's submissions (`--similarity-base`: each sub-folder or .zip of `folder`, found as a
    submission is): name -> `digest_of(modules)` (default `digest`; batch's: grader/analysis.py `digests`, in a
    box, a submission whose analysis is cut off left out). Raises SubmissionError, saying what is wrong, where
    `folder` is not a folder or none of it holds a problem module."""
    digest_of = digest_of or digest
    if not folder.is_dir():
        raise SubmissionError(f"--similarity-base {folder}: no such folder (past years' submissions or known "
                              "solutions, each a sub-folder or a .zip)")
    found = {}
    for entry in sorted(p for p in folder.iterdir() if p.is_dir() or p.suffix == ".zip"):
        try:
            found[entry.name] = digest_of(read_modules(entry)) or {}
        except (SubmissionError, OSError, ValueError) as exc:
            raise SubmissionError(f"--similarity-base {folder}: {entry.name} cannot be read ({exc})") from exc
    if not any(found.values()):
        modules = ", ".join(f"{p.module}.py" for p in registry.PROBLEMS)
        raise SubmissionError(f"--similarity-base {folder}: no sub-folder or .zip in it holds a problem module other "
                              f"than the stub (one of {modules})")
    return found


def thresholds() -> str:
    """How a pair is reported, in words (the report states it)."""
    return (f"a hash held by more than {COMMON_SHARE:.0%} of the class, and more than {COMMON_AT_LEAST} submissions, "
            f"is common; a pair is reported when it shares {MIN_SHARED} hashes or more and they are "
            f"{MIN_SHARE:.0%} of the smaller side's or {MIN_RUN} in one run in order, or when {MIN_IN_ORDER} "
            f"statements of one are the other's in its order ({MIN_IN_ORDER_WHOLE} or more and "
            f"{MIN_IN_ORDER_SHARE:.0%} of the smaller side's: padded)")


@dataclass(frozen=True)
class Span:
    """Lines `a_lines` of the first side's module match lines `b_lines` of the second's (`size` hashes in a run, or
    statements where a padded copy's k-grams are broken)."""

    a_lines: tuple[int, int]
    b_lines: tuple[int, int]
    size: int


@dataclass
class Pair:
    """Two submissions' `module` compared: `a` and `b` (b may be the base's, `from_base`), the hashes each holds
    (`a_own`, `b_own`: neither the stub's nor the class's common ones), those they share, the longest run in
    order, the statements (`a_statements`, `b_statements`) and the most of them in order on both sides."""

    problem: str
    module: str
    a: str
    b: str
    a_own: int
    b_own: int
    shared: int
    longest: int = 0
    a_statements: int = 0
    b_statements: int = 0
    in_order: int = 0
    spans: list[Span] = field(default_factory=list)
    from_base: bool = False
    cluster: int | None = None  # the index of its cluster in Similarity.clusters

    @property
    def share(self) -> float:
        smaller = min(self.a_own, self.b_own)
        return self.shared / smaller if smaller else 0.0

    @property
    def in_order_share(self) -> float:
        smaller = min(self.a_statements, self.b_statements)
        return self.in_order / smaller if smaller else 0.0

    @property
    def strength(self) -> float:
        """What the pairs are sorted by: the larger of `share` and `in_order_share` (1.0: one holds the other)."""
        return max(self.share, self.in_order_share)

    @property
    def padded(self) -> bool:
        return BETWEEN_STUDENTS.padded(self.in_order, self.in_order_share)

    @property
    def similar(self) -> bool:
        return BETWEEN_STUDENTS.copied(self.shared, self.share, self.longest, self.in_order, self.in_order_share)


@dataclass
class Cluster:
    """Three or more submissions joined by reported pairs on one problem."""

    problem: str
    members: list[str]


@dataclass
class Similarity:
    """What `compare_class` found: the reported pairs, strongest first; the clusters; per module, the submissions
    compared (`compared`) and the hashes left out as the class's common ones (`common`); `candidates`: the pairs
    that shared anything, which the index compared in full."""

    pairs: list[Pair] = field(default_factory=list)
    clusters: list[Cluster] = field(default_factory=list)
    compared: dict[str, int] = field(default_factory=dict)
    common: dict[str, int] = field(default_factory=dict)
    candidates: int = 0
    base: int = 0
    examined: list[Pair] = field(default_factory=list)  # with `every`: each pair that shares a hash, in full

    def similar_to(self, name: str) -> list[str]:
        """The others `name` is reported with, "other (problem)", strongest first (grades.csv's similar_to)."""
        return [f"{p.b if p.a == name else p.a} ({p.problem})" for p in self.pairs if name in (p.a, p.b)]


def compare_class(digests: dict[str, dict], base: dict[str, dict] | None = None, every: bool = False) -> Similarity:
    """Every pair of the class's submissions (`digests`: name -> `digest` data) compared per module, and each with
    the `base`'s (name -> digest data; reported as "base:<name>"): the pairs past the thresholds and the clusters.
    `every` (the calibration's): each pair that shares a hash compared in full and kept in `examined`."""
    found = Similarity(base=len(base or {}))
    problem_of = {p.module: p.id for p in registry.PROBLEMS}
    modules = sorted({m for d in [*digests.values(), *(base or {}).values()] for m in d})
    for module in modules:
        names = [n for n, d in digests.items() if module in d]
        base_names = [f"base:{n}" for n, d in (base or {}).items() if module in d]
        sides = [ModuleDigest.from_data(digests[n][module]) for n in names] + \
            [ModuleDigest.from_data((base or {})[n.removeprefix("base:")][module]) for n in base_names]
        found.compared[module] = len(names)
        common = _common(sides, len(names))
        found.common[module] = len(common)
        pairs = _sharing(sides, len(names), common)
        found.candidates += len(pairs)
        everyone = names + base_names
        for (i, j), shared in pairs.items():
            if shared < MIN_SHARED and not every and not _may_be_padded(sides[i], sides[j], common):
                continue
            pair = _compared(sides[i], sides[j], common, problem_of.get(module, module), module, everyone[i],
                             everyone[j])
            pair.from_base = j >= len(names)
            if every:
                found.examined.append(pair)
            if pair.similar:
                found.pairs.append(pair)
    found.pairs.sort(key=lambda p: (-p.strength, -p.shared, p.problem, p.a, p.b))
    found.clusters = _clusters(found.pairs)
    return found


def _common(sides: list[ModuleDigest], class_size: int) -> frozenset[int]:
    """The hashes (winnowed and statements) held by more than COMMON_SHARE of the class's submissions and more
    than COMMON_AT_LEAST of them (the base's count likewise among the base's)."""
    base_size = len(sides) - class_size
    counts: dict[int, list[int]] = {}
    for index, side in enumerate(sides):
        held = set(side.winnowed) | {h for h, _, _ in side.statements}
        for h in held:
            counts.setdefault(h, [0, 0])[index >= class_size] += 1
    return frozenset(h for h, (in_class, in_base) in counts.items()
                     if in_class > max(COMMON_AT_LEAST, COMMON_SHARE * class_size)
                     or in_base > max(COMMON_AT_LEAST, COMMON_SHARE * base_size))


def _sharing(sides: list[ModuleDigest], class_size: int, common: frozenset[int]) -> dict[tuple[int, int], int]:
    """(i, j) -> how many winnowed hashes sides i and j share (not common), for every pair that shares one or a
    statement, found through the index from hash to sides; no pair of two base sides."""
    index: dict[int, list[int]] = {}
    for i, side in enumerate(sides):
        for h in {*side.winnowed, *(s[0] for s in side.statements)}:
            if h not in common:
                index.setdefault(h, []).append(i)
    shared: dict[tuple[int, int], int] = {}
    for h, holders in index.items():
        in_class = [i for i in holders if i < class_size]
        others = itertools.product(in_class, [i for i in holders if i >= class_size])
        for pair in itertools.chain(itertools.combinations(in_class, 2), others):
            shared[pair] = shared.get(pair, 0) + (h in sides[pair[0]].winnowed)
    return shared


def _may_be_padded(a: ModuleDigest, b: ModuleDigest, common: frozenset[int]) -> bool:
    """Whether a and b share enough statements to be a padded copy (their k-grams broken by what lies between)."""
    held = {h for h, _, _ in b.statements}
    return sum(h in held and h not in common for h, _, _ in a.statements) >= MIN_IN_ORDER_WHOLE


def _compared(a: ModuleDigest, b: ModuleDigest, common: frozenset[int], problem: str, module: str, a_name: str,
              b_name: str) -> Pair:
    """Sides a and b compared in full: the shared hashes, their runs in order with their lines, the statements in
    order (copycheck's matched_runs and longest_in_order)."""
    b_positions = {h: [p for p, _, _ in places] for h, places in b.winnowed.items() if h not in common}
    b_lines = {p: (first, last) for places in b.winnowed.values() for p, first, last in places}
    a_lines = {p: (first, last) for places in a.winnowed.values() for p, first, last in places}
    matched: list[tuple[int, int]] = []
    for position, h in sorted((p, h) for h, places in a.winnowed.items() if h not in common for p, _, _ in places):
        if h in b_positions:
            matched.append((position, copycheck.continued_at(b_positions[h], matched[-1][1] if matched else -1)))
    runs = copycheck.matched_runs(matched)
    spans = [Span((a_lines[sa][0], a_lines[ea][1]), (b_lines[sb][0], b_lines[eb][1]), n)
             for sa, ea, sb, eb, n in runs[:SPANS]]
    a_statements = [s for s in a.statements if s[0] not in common]
    b_statements = [s for s in b.statements if s[0] not in common]
    b_places: dict[int, list[int]] = {}
    for place, (h, _, _) in enumerate(b_statements):
        b_places.setdefault(h, []).append(place)
    in_order = copycheck.longest_in_order([b_places[h] for h, _, _ in a_statements if h in b_places])
    a_own = sum(h not in common for h in a.winnowed)
    shared = sum(h in b_positions for h in a.winnowed if h not in common)
    pair = Pair(problem, module, a_name, b_name, a_own, len(b_positions), shared, runs[0][4] if runs else 0,
                len(a_statements), len(b_statements), in_order, spans)
    if pair.padded and pair.longest < MIN_RUN:  # k-grams broken by what lies between: the statements show it
        pair.spans = _statement_spans(a_statements, b_statements, b_places)
    return pair


def _statement_spans(a_statements: list[tuple[int, int, int]], b_statements: list[tuple[int, int, int]],
                     b_places: dict[int, list[int]]) -> list[Span]:
    """The statements a and b share, grouped into runs in order on both sides (as copycheck.matched_runs groups
    k-grams): their line ranges, the longest runs first."""
    matched: list[tuple[int, int]] = []
    for place, (h, _, _) in enumerate(a_statements):
        if h in b_places:
            matched.append((place, copycheck.continued_at(b_places[h], matched[-1][1] if matched else -1)))
    return [Span((a_statements[sa][1], a_statements[ea][2]), (b_statements[sb][1], b_statements[eb][2]), n)
            for sa, ea, sb, eb, n in copycheck.matched_runs(matched)[:SPANS]]


def _clusters(pairs: list[Pair]) -> list[Cluster]:
    """Per problem, the groups of three or more class submissions joined by reported pairs (the base's members
    join none); each pair in one is given its index."""
    parent: dict[tuple[str, str], tuple[str, str]] = {}

    def root(node):
        while parent.setdefault(node, node) != node:
            node = parent[node]
        return node

    for p in pairs:
        if not p.from_base:
            parent[root((p.problem, p.a))] = root((p.problem, p.b))
    groups: dict[tuple[str, str], list[str]] = {}
    for node in list(parent):
        groups.setdefault(root(node), []).append(node[1])
    clusters = []
    for (problem, _), members in sorted(groups.items()):
        if len(members) >= 3:
            clusters.append(Cluster(problem, sorted(members)))
            for p in pairs:
                if not p.from_base and p.problem == problem and p.a in members:
                    p.cluster = len(clusters) - 1
    return clusters
