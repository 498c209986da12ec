"""resource-grader: grade submissions of the resource-accounting assignment.

    resource-grader grade [SUBMISSION]   a folder or a zip (default: the current folder); prints the score
                                         table and writes Gradescope's results.json, whatever happens
    resource-grader batch FOLDER         every submission in FOLDER, in parallel: a results.json each and
                                         one CSV row each
"""

import argparse
import csv
import json
import os
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from grader import registry
from grader.runner import Limits, run_tests
from grader.scoring import ProblemScore, results_json, score_run, table
from grader.submission import SubmissionError, build_workspace

GRADESCOPE_RESULTS = Path("/autograder/results/results.json")


def _default_results_path() -> Path:
    return GRADESCOPE_RESULTS if GRADESCOPE_RESULTS.parent.is_dir() else Path("results.json")


@dataclass
class Graded:
    """One submission's outcome. `status`: ok, unreadable (the submission), error (the grader itself)."""

    submission: Path
    scores: list[ProblemScore]
    text: str
    status: str
    seconds: float


def grade_submission(submission: Path, out: Path, limits: Limits, problems: list[str] | None) -> Graded:
    """Grade one submission and write its results.json, in every case."""
    start = time.monotonic()
    notes: list[str] = []
    scores = []
    status = "ok"
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
    except SubmissionError as exc:
        notes.append(f"The submission could not be read: {exc}")
        status = "unreadable"
    except Exception:  # the grader's own failure must still leave a results.json
        notes.append("The grader failed:\n" + traceback.format_exc())
        status = "error"
    text = table(scores, notes)
    seconds = time.monotonic() - start
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results_json(scores, seconds=seconds, output=text), indent=1))
    return Graded(submission, scores, text, status, seconds)


EXIT_STATUS = {"ok": 0, "unreadable": 2, "error": 3}


def grade(submission: Path, out: Path, limits: Limits, problems: list[str] | None) -> int:
    graded = grade_submission(submission, out, limits, problems)
    print(graded.text)
    print(f"\nresults written to {out}")
    return EXIT_STATUS[graded.status]


def batch(folder: Path, out: Path, limits: Limits, problems: list[str] | None, jobs: int) -> int:
    """Grade every submission in `folder` (each sub-folder or .zip), `jobs` at a time: OUT/<name>/results.json
    each, and OUT/grades.csv with one row per submission (a status column, never an aborted batch)."""
    if not folder.is_dir():
        raise SubmissionError(f"{folder} is not a folder of submissions")
    submissions = sorted(p for p in folder.iterdir() if p.is_dir() or p.suffix == ".zip")
    if not submissions:
        raise SubmissionError(f"{folder} holds no submissions (sub-folders or .zip files)")
    out.mkdir(parents=True, exist_ok=True)
    ids = [p.id for p in registry.PROBLEMS if not problems or p.id in problems]
    rows = []
    with ThreadPoolExecutor(max_workers=jobs) as pool:  # each grading is its own processes; threads just wait
        futures = {pool.submit(grade_submission, s, out / s.stem / "results.json", limits, problems): s
                   for s in submissions}
        for done, future in enumerate(as_completed(futures), start=1):
            graded = future.result()
            by_id = {p.id: round(p.score, 2) for p in graded.scores}
            rows.append([graded.submission.name, graded.status, round(sum(by_id.values()), 2),
                         *[by_id.get(i, "") for i in ids], round(graded.seconds, 1)])
            print(f"\r[{done}/{len(submissions)}] {graded.submission.name:<40}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    with open(out / "grades.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["submission", "status", "total", *ids, "seconds"])
        writer.writerows(sorted(rows))
    print(f"{len(rows)} submissions graded; {out / 'grades.csv'}")
    return 0


def _add_common(command, defaults: Limits) -> None:
    command.add_argument("--problem", action="append", help="grade only this problem (repeatable)")
    command.add_argument("--time-limit", type=float, default=defaults.submission_seconds,
                         help="seconds for one submission's whole run")
    command.add_argument("--test-timeout", type=float, default=defaults.test_seconds, help="seconds per test")
    command.add_argument("--call-timeout", type=float, default=defaults.call_seconds,
                         help="seconds per call into the submission")
    command.add_argument("--memory-mb", type=int, default=defaults.worker_memory_mb,
                         help="address-space limit of the worker")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="resource-grader", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    g = commands.add_parser("grade", help="grade one submission (a folder or a zip)")
    g.add_argument("submission", nargs="?", default=".", type=Path)
    g.add_argument("--out", type=Path, default=None,
                   help="results.json path (default: Gradescope's, else ./results.json)")
    b = commands.add_parser("batch", help="grade a folder of submissions in parallel")
    b.add_argument("folder", type=Path)
    b.add_argument("--out", type=Path, default=Path("grades"), help="output folder (default: ./grades)")
    b.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2),
                   help="submissions graded at once (default: half the cores; each uses two processes)")
    for command in (g, b):
        _add_common(command, Limits())
    options = parser.parse_args(argv)
    unknown = [p for p in options.problem or [] if p not in registry.BY_ID]
    if unknown:
        parser.error(f"unknown problem(s) {unknown}; known: {', '.join(registry.BY_ID)}")
    limits = Limits(options.time_limit, options.test_timeout, options.call_timeout, options.memory_mb)
    if options.command == "grade":
        return grade(options.submission, options.out or _default_results_path(), limits, options.problem)
    if options.jobs < 1:
        parser.error("--jobs must be at least 1")
    try:
        return batch(options.folder, options.out, limits, options.problem, options.jobs)
    except SubmissionError as exc:
        print(f"resource-grader batch: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
