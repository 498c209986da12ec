"""resource-grader: grade submissions of the resource-accounting assignment.

    resource-grader grade [SUBMISSION]   a folder or a zip (default: the current folder); prints the score
                                         table and writes Gradescope's results.json, whatever happens
"""

import argparse
import json
import sys
import tempfile
import time
import traceback
from pathlib import Path

from grader import registry
from grader.runner import Limits, run_tests
from grader.scoring import results_json, score_run, table
from grader.submission import SubmissionError, build_workspace

GRADESCOPE_RESULTS = Path("/autograder/results/results.json")


def _default_results_path() -> Path:
    return GRADESCOPE_RESULTS if GRADESCOPE_RESULTS.parent.is_dir() else Path("results.json")


def grade(submission: Path, out: Path, limits: Limits, problems: list[str] | None) -> int:
    """Grade one submission; results.json is written in every case. Returns the exit status."""
    start = time.monotonic()
    notes: list[str] = []
    scores = []
    try:
        with tempfile.TemporaryDirectory(prefix="ra-grade-") as tmp:
            workspace = build_workspace(submission, Path(tmp))
            markers = " or ".join(problems) if problems else None
            run = run_tests(workspace.root, limits, markers=markers)
            scores = score_run(run)
            missing = [m for m in workspace.missing if m in {p.id for p in scores}]
            if missing:
                notes.append("Not in the submission (graded as the untouched stub): "
                             + ", ".join(f"{m}.py" for m in missing))
            if run.timed_out:
                notes.append(f"The submission's time limit ({limits.submission_seconds:g} s) was reached; "
                             "tests that had not run count as failed.")
            if not run.collected:
                notes.append("The test suite did not start; its output:\n" + run.log[-3000:])
        status = 0
    except SubmissionError as exc:
        notes.append(f"The submission could not be read: {exc}")
        status = 2
    except Exception:  # the grader's own failure must still leave a results.json
        notes.append("The grader failed:\n" + traceback.format_exc())
        status = 3
    text = table(scores, notes)
    print(text)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results_json(scores, seconds=time.monotonic() - start, output=text), indent=1))
    print(f"\nresults written to {out}")
    return status


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="resource-grader", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    g = commands.add_parser("grade", help="grade one submission (a folder or a zip)")
    g.add_argument("submission", nargs="?", default=".", type=Path)
    g.add_argument("--out", type=Path, default=None,
                   help="results.json path (default: Gradescope's, else ./results.json)")
    g.add_argument("--problem", action="append", help="grade only this problem (repeatable)")
    defaults = Limits()
    g.add_argument("--time-limit", type=float, default=defaults.submission_seconds, help="seconds for the whole run")
    g.add_argument("--test-timeout", type=float, default=defaults.test_seconds, help="seconds per test")
    g.add_argument("--call-timeout", type=float, default=defaults.call_seconds,
                   help="seconds per call into the submission")
    g.add_argument("--memory-mb", type=int, default=defaults.worker_memory_mb, help="address-space limit of the worker")
    options = parser.parse_args(argv)
    if options.command == "grade":
        unknown = [p for p in options.problem or [] if p not in registry.BY_ID]
        if unknown:
            parser.error(f"unknown problem(s) {unknown}; known: {', '.join(registry.BY_ID)}")
        limits = Limits(options.time_limit, options.test_timeout, options.call_timeout, options.memory_mb)
        return grade(options.submission, options.out or _default_results_path(), limits, options.problem)
    return 2


if __name__ == "__main__":
    sys.exit(main())
