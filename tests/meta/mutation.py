"""Run each catalogued mistake against the problem's oracle tests and say whether it was caught.

    python -m tests.meta.mutation                 # every problem's catalog, a table
    python -m tests.meta.mutation --problem flops
    python -m tests.meta.mutation --json FILE     # for tests/meta/test_mistakes.py
    python -m tests.meta.mutation --profile grade --grading-seed 7   # under a grading seed, as the grader runs

Each caught mistake also records `examples`: the catching test's first failing example, counted from 1 (its
explicit examples included; 0 for a test that is not generated). Over several grading seeds, that is the data
the grading budget of examples is calibrated from (grader/harness/plugin.py).

A mistake is caught when the problem's tests, without the differential ones (the student release's
tests must catch it on their own), fail with the mistake swapped into the reference. All runs share one
process (pytest.main in a loop), so torch is imported once.
"""

import argparse
import contextlib
import inspect
import io
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from grader.harness.report import read_test_records
from grader.registry import PROBLEMS
from tests.mistakes import catalog

ROOT = Path(__file__).resolve().parents[2]


class NamingTestsFirst:
    """A pytest plugin: the tests whose source names a function the mistake replaces run first, the others
    after them, each group in file order. Whether a mistake is caught (some test fails) does not depend on
    the order; how long it takes to find out does, with -x: a mistake is mostly caught by a test of the
    function it replaces, and its problem's other tests, which pass, no longer run before it."""

    def __init__(self, mistake):
        self.names = tuple(mistake.replaces)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items):
        items.sort(key=lambda item: not any(name in _source(item) for name in self.names))


def _source(item) -> str:
    try:
        return inspect.getsource(item.obj)
    except (AttributeError, OSError, TypeError):
        return ""


def run_mistake(mistake, profile: str, grading_seed: int | None = None, naming_first: bool = False) -> dict:
    """Run the problem's oracle tests on the reference with `mistake` swapped in; stop at the first failure
    (with `naming_first`, the tests that name a function it replaces run first: NamingTestsFirst)."""
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as report:
        args = [f"tests/test_{mistake.problem}.py", "--impl", "reference",
                "--mutant", f"{mistake.problem}:{mistake.id}",
                "-m", f"{mistake.problem} and not differential", "-x", "-q", "--tb=no", "--no-header",
                f"--hypothesis-profile={profile}", f"--report={report.name}", f"--rootdir={ROOT}"]
        if grading_seed is not None:
            args.append(f"--grading-seed={grading_seed}")
        with contextlib.redirect_stdout(io.StringIO()):
            code = pytest.main(args, plugins=[NamingTestsFirst(mistake)] if naming_first else [])
        records = read_test_records(report.name)
    failed = [r for r in records if r["outcome"] == "failed"]
    return {"problem": mistake.problem, "id": mistake.id, "description": mistake.description,
            "caught": code == pytest.ExitCode.TESTS_FAILED and bool(failed), "exit_code": int(code),
            "caught_by": failed[0]["nodeid"].split("::")[-1] if failed else None,
            "examples": failed[0].get("first_failing_example", 0) if failed else None}


def _seed_option(options) -> list[str]:
    return [] if options.grading_seed is None else ["--grading-seed", str(options.grading_seed)]


def _in_parallel(options, problems: list[str]) -> list[dict]:
    """Run the catalog in `options.jobs` child processes (each imports torch once) and merge their results."""
    with tempfile.TemporaryDirectory() as tmp:
        children = []
        for k in range(options.jobs):
            out = Path(tmp) / f"{k}.json"
            command = [sys.executable, "-m", "tests.meta.mutation", "--jobs", "1", "--shard", f"{k}/{options.jobs}",
                       "--profile", options.profile, *_seed_option(options), "--json", str(out),
                       *["--naming-first"] * options.naming_first, *[f"--problem={p}" for p in problems]]
            children.append((subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL), out))
        results = []
        for child, out in children:
            child.wait()
            results += json.loads(out.read_text()) if out.exists() else []
        return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problem", action="append", help="only these problems (repeatable)")
    parser.add_argument("--profile", default="mutation", help="hypothesis profile (default: mutation, 10 examples)")
    parser.add_argument("--grading-seed", type=int, default=None, metavar="N",
                        help="draw every generated test's inputs from N, as the grader does (default: the profile's)")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--jobs", type=int, default=2, help="processes to spread the mistakes over (default 2)")
    parser.add_argument("--naming-first", action="store_true",
                        help="run the tests that name a replaced function first: the same verdicts, sooner (the test "
                             "that caught a mistake and its example are then not those of the file's order, which "
                             "the grading budgets are calibrated from)")
    parser.add_argument("--shard", default="0/1", help=argparse.SUPPRESS)  # K/N: this process runs every N-th
    options = parser.parse_args(argv)
    problems = options.problem or [p.id for p in PROBLEMS]
    mistakes = [m for p in problems for m in catalog(p)]
    if options.jobs > 1:
        expected = mistakes
        results = _in_parallel(options, problems)
    else:
        k, n = map(int, options.shard.split("/"))
        expected = mistakes[k::n]
        results = [run_mistake(m, options.profile, options.grading_seed, options.naming_first) for m in expected]
    ran = {(r["problem"], r["id"]) for r in results}
    results += [{"problem": m.problem, "id": m.id, "description": m.description, "caught": False, "exit_code": -1,
                 "caught_by": None} for m in expected if (m.problem, m.id) not in ran]  # a child that crashed
    for r in results:
        verdict = (f"caught by {r['caught_by']} (example {r['examples']})" if r["caught"]
                   else f"NOT CAUGHT (pytest exit {r['exit_code']})")
        print(f"{r['problem']:>24}:{r['id']:<28} {verdict}")
    print(f"{sum(r['caught'] for r in results)}/{len(results)} mistakes caught")
    if options.json:
        Path(options.json).write_text(json.dumps(results, indent=1))
    return 0 if all(r["caught"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
