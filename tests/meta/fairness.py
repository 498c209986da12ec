"""What a slip costs, graded as `grade` grades it: a problem module (the reference with catalogued mistakes planted,
or any file) graded by the grader's command line (`resource-grader grade --problem P`, the meta-tests' course
secret, fingerprints off), and its points read row by row from results.json.

    python -m tests.meta.fairness gradient_accumulation --mistake one_over_k
    python -m tests.meta.fairness tensors --file my_tensors.py
    python -m tests.meta.fairness benchmarking --mistake sample_std --mistake warmup_timed   # one grading each
    python -m tests.meta.fairness --honest [NAME ...]   # the honest corpus: each case and its slips

Each grading prints the problem's score and the rows that lost points (earned / worth, and how many of their tests
passed): a row that lost points while every test of it passed lost them to a gate. The honest corpus
(tests/meta/honest/, tests/meta/test_honest.py) is graded the same way.
"""

import argparse
import ast
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.meta.suite import ROOT, grader_env


@dataclass(frozen=True)
class Row:
    name: str
    score: float
    points: float
    tests: dict  # pytest item -> status

    @property
    def lost(self) -> float:
        return round(self.points - self.score, 6)

    @property
    def failed(self) -> list[str]:
        return [name for name, status in self.tests.items() if status != "passed"]


def grade(problem: str, source: str, timeout: float = 900) -> dict[str, Row]:
    """`source` as the submission's `<problem>.py`, graded on that problem alone: its rows by name."""
    with tempfile.TemporaryDirectory(prefix="ra-fairness-") as tmp:
        folder = Path(tmp) / "submission"
        folder.mkdir()
        (folder / f"{problem}.py").write_text(source)
        out = Path(tmp) / "results.json"
        done = subprocess.run([sys.executable, "-m", "grader", "grade", str(folder), "--problem", problem, "--out",
                               str(out), "--no-fingerprints"], cwd=ROOT, env=grader_env(), capture_output=True,
                              timeout=timeout, check=False)
        if not out.exists():
            raise RuntimeError(f"the grader wrote no results (exit {done.returncode}):\n"
                               f"{done.stdout.decode(errors='replace')[-3000:]}{done.stderr.decode(errors='replace')[-3000:]}")
        results = json.loads(out.read_text())
    rows = {}
    for test in results["tests"]:
        name = test["name"].split(": ", 1)[1]
        rows[name] = Row(name, test["score"], test["max_score"], test["extra_data"]["tests"])
    return rows


HONEST = ROOT / "tests" / "meta" / "honest"


@dataclass(frozen=True)
class Case:
    """A module of the honest corpus (tests/meta/honest/), as written or with one slip: what it must score at least,
    and the rows it may lose points in (any other row must earn in full)."""

    name: str
    problem: str
    source: str
    score: float
    may_lose: tuple[str, ...]


def _constant(tree: ast.Module, name: str, default=None):
    """The value of the module's top-level `name = ...`: a literal, or an expression of the literals and names of
    the module's earlier such constants (the corpus's own text: no call is made, no builtin is there)."""
    known = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if any(isinstance(n, ast.Call) for n in ast.walk(node.value)):
                continue
            try:
                known[node.targets[0].id] = eval(compile(ast.Expression(node.value), name, "eval"),
                                                 {"__builtins__": {}}, dict(known))
            except NameError:
                continue
    return known.get(name, default)


def _without(text: str, tree: ast.Module, names: tuple[str, ...]) -> str:
    """`text` with its top-level assignments to `names` cut out."""
    lines = text.splitlines(keepends=True)
    for node in reversed(tree.body):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) in names for t in node.targets):
            del lines[node.lineno - 1:node.end_lineno]
    return "".join(lines)


def honest_cases() -> list[Case]:
    """Every case of the corpus: each module with a CASE ({"problem", "score", "may_lose"}), then each of its SLIPS
    (name -> (text, the text replacing it, the rows the slip may cost), or ((text, replacement), ..., the rows)
    for a slip of several edits), its score what the rows it may cost leave. The module is graded without what it
    says of itself (CASE, SLIPS, and the constants named in SAYS)."""
    from grader.registry import BY_ID

    cases = []
    for path in sorted(HONEST.glob("*.py")):
        text = path.read_text()
        tree = ast.parse(text)
        case = _constant(tree, "CASE")
        if case is None:
            continue
        source = _without(text, tree, ("CASE", "SLIPS", *_constant(tree, "SAYS", ())))  # not what it says of itself
        may_lose = tuple(case.get("may_lose", ()))
        cases.append(Case(path.stem, case["problem"], source, case["score"], may_lose))
        points = {b.name: b.points for b in BY_ID[case["problem"]].behaviours}
        for slip, entry in _constant(tree, "SLIPS", {}).items():
            *edits, costs = entry if isinstance(entry[0], tuple) else ((entry[0], entry[1]), entry[2])
            slipped = source
            for old, new in edits:
                assert slipped.count(old) == 1, f"{path.name}: slip {slip}: {old!r} occurs {slipped.count(old)} times"
                slipped = slipped.replace(old, new)
            lost = tuple(dict.fromkeys((*may_lose, *costs)))
            cases.append(Case(f"{path.stem}:{slip}", case["problem"], slipped,
                              case["score"] - sum(points[row] for row in costs), lost))
    return cases


def unfair(case: Case, rows: dict[str, Row]) -> list[str]:
    """What is wrong with a grading of `case`: a row it may not lose that lost points, a score under its own."""
    faults = [f"{r.name}: {r.score:.4g} of {r.points:g} ({len(r.failed)} of {len(r.tests)} tests failed"
              f"{': a gate' if not r.failed else ''})" for r in rows.values()
              if r.lost > 1e-9 and r.name not in case.may_lose]
    score = sum(r.score for r in rows.values())
    if score < case.score - 1e-6:
        faults.append(f"scored {score:.4g}, under the {case.score:.4g} it must reach")
    return faults


def report(rows: dict[str, Row]) -> str:
    """The score, then each row that lost points: earned / worth, tests passed, and "(gate)" where every test of it
    passed."""
    total, out_of = sum(r.score for r in rows.values()), sum(r.points for r in rows.values())
    lines = [f"score {total:.4g} / {out_of:g} (lost {out_of - total:.4g})"]
    for r in rows.values():
        if r.lost > 1e-9:
            passed = len(r.tests) - len(r.failed)
            gate = "  (gate: every test passed)" if not r.failed else ""
            lines.append(f"    {r.name}: {r.score:.4g} / {r.points:g}, {passed}/{len(r.tests)} tests passed{gate}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("problem", nargs="?")
    parser.add_argument("--honest", nargs="*", metavar="NAME",
                        help="grade the honest corpus's cases (those whose name starts with a NAME; all without)")
    parser.add_argument("--mistake", action="append", default=[],
                        help="a catalogued mistake (tests/mistakes/<problem>.py) planted in the reference: one grading "
                             "each (repeatable)")
    parser.add_argument("--file", action="append", default=[], type=Path, help="a module to grade (repeatable)")
    options = parser.parse_args(argv)
    if options.honest is not None:
        bad = 0
        for case in honest_cases():
            if options.honest and not case.name.startswith(tuple(options.honest)):
                continue
            rows = grade(case.problem, case.source)
            faults = unfair(case, rows)
            bad += bool(faults)
            print(f"{case.name}: {report(rows)}" + "".join(f"\n    UNFAIR: {f}" for f in faults), flush=True)
        return 1 if bad else 0
    if not options.problem:
        parser.error("a problem, or --honest")
    from tests.mistakes import planted_source

    cases = [(f"{options.problem}:{m}", planted_source(options.problem, [m])) for m in options.mistake]
    cases += [(str(path), path.read_text()) for path in options.file]
    if not cases:
        cases = [("reference", (ROOT / "reference" / f"{options.problem}.py").read_text())]
    for name, source in cases:
        print(f"{name}: {report(grade(options.problem, source))}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
