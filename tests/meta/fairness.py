"""What a slip costs, graded as `grade` grades it: a problem module (the reference with catalogued mistakes planted,
or any file) graded by the grader's command line (`resource-grader grade --problem P`, the meta-tests' course
secret, fingerprints off), and its points read row by row from results.json.

    python -m tests.meta.fairness gradient_accumulation --mistake one_over_k
    python -m tests.meta.fairness tensors --file my_tensors.py
    python -m tests.meta.fairness benchmarking --mistake sample_std --mistake warmup_timed   # one grading each

Each grading prints the problem's score and the rows that lost points (earned / worth, and how many of their tests
passed): a row that lost points while every test of it passed lost them to a gate. The honest corpus
(tests/meta/honest/, tests/meta/test_honest.py) is graded the same way.
"""

import argparse
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
    parser.add_argument("problem")
    parser.add_argument("--mistake", action="append", default=[],
                        help="a catalogued mistake (tests/mistakes/<problem>.py) planted in the reference: one grading "
                             "each (repeatable)")
    parser.add_argument("--file", action="append", default=[], type=Path, help="a module to grade (repeatable)")
    options = parser.parse_args(argv)
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
