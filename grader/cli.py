"""resource-grader: grade submissions of the resource-accounting assignment.

    resource-grader grade [SUBMISSION]   a folder or a zip (default: the current folder); prints the score
                                         table and writes Gradescope's results.json, whatever happens
    resource-grader batch FOLDER         every submission in FOLDER, in parallel (on this machine, or on a
                                         Dask cluster with --scheduler): a results.json each, one CSV row each
    resource-grader doctor               which sandbox layers this machine allows, and why not the others

In the student release (no reference/) `grade` runs the local tests only, with the public inputs: the
official grade adds the differential tests, which compare a submission with the reference.

Student code runs in a sandbox (grader/harness/sandbox.py): a uid of its own when the grader is root, namespaces
where bubblewrap works. `batch` refuses to run without one unless --no-sandbox is given.
"""

import argparse
import importlib
import importlib.util
import json
import os
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from grader import INSTALLED_COPY, copycheck, has_reference, registry, scoring
from grader.harness import sandbox
from grader.harness.cputime import WALL_FACTOR
from grader.harness.sandbox import Layers, Sandbox
from grader.runner import GRADESCOPE_TIMEOUT, Limits, RunResult, kill_tree, run_tests
from grader.scoring import ProblemScore, known_mistakes, not_started, results_json, score_run, table
from grader.seed import SecretError, course_secret, grading_seed
from grader.submission import SubmissionError, build_workspace

GRADESCOPE_RESULTS = Path("/autograder/results/results.json")


def _default_results_path() -> Path:
    return GRADESCOPE_RESULTS if GRADESCOPE_RESULTS.parent.is_dir() else Path("results.json")


@dataclass
class Graded:
    """One submission's outcome. `status`: ok, review (scored, but the worker's guard saw it do what no solution
    needs, grader/harness/guard.py: for a person to look at, the evidence in its results.json), unreadable (the
    submission), error (the grader, or a run whose report cannot be trusted: for a person to look at, never a
    score)."""

    submission: Path
    scores: list[ProblemScore]
    text: str
    status: str
    seconds: float
    fingerprints: dict | None = None  # grader/compare.py's fingerprint result, where they ran
    untouched: frozenset[str] = frozenset()  # problems left as the stub (scoring.not_started): not started


GRADER_FAILED = ("The grader failed: a problem on the grading side, not in your code. Course staff can see "
                 "the details in the grader's log.")
LOCAL_MODE = ("Local grade: the public inputs (those of `pytest --hypothesis-profile=grade`). The official grade "
              "tries other generated inputs, drawn from a course secret and your submission.")
REVIEW = ("Flagged for review by course staff: while it was graded, this submission did something that no "
          "solution needs to do (such as reading an oracle's source or reaching into the grader). The score "
          "stands until they have looked.")
LOCAL_TESTS_ONLY = ("Local tests only: the official grade adds the differential tests, which compare your answers "
                    "with the reference solution (not in this repository), so it can be lower.")
NOTHING_UPLOADED = ("Nothing of your upload was graded: it holds none of the problem modules ({expected}: at its top, "
                    "under assignment/, or one folder down), so every problem is graded as the untouched stub. {found}")
SET_ASIDE = ("This grading run did not end the way a grading run ends, so it is set aside for course staff "
             "to look at; no score is given until then.")


def grade_submission(submission: Path, out: Path, limits: Limits, problems: list[str] | None, layers: Layers,
                     secret: bytes | None, fingerprints=None, cpu_share=None,
                     operator: list[str] | None = None, on_problem=None) -> Graded:
    """Grade one submission in a sandbox and write its results.json, in every case, once every process of
    the submission is dead. The generated tests draw their inputs from the course `secret` and the
    submission's modules (None: local mode, the public inputs). With `fingerprints` (grader/compare.py's
    Fingerprinter) the functions of each problem it failed then run again, in a sandbox of their own, on
    compare's inputs, and the catalogued mistakes their answers match are named beside the failures. What
    went wrong on the grader's side goes to the operator (stderr; with `operator`, a list, appended to it
    instead: batch's workers send it back to the coordinator), never into the student's results. The run
    stops when the submission's time limit is reached, counted from here; with `cpu_share`
    (grader/cpushare.py) it gets that share of the CPUs. `on_problem(line)` is given a line per problem as
    its tests finish (its score by the tests alone, and its seconds), while the run goes on."""
    start = time.monotonic()
    notes: list[str] = []
    scores = []
    status = "ok"
    evidence: list[str] = []
    to_print = operator is None
    operator = [] if operator is None else operator
    untouched: frozenset[str] = frozenset()
    missing: frozenset[str] = frozenset()
    broken: dict[str, str] = {}  # problem -> its module does not import, in one line
    lead: list[str] = []
    found = None
    run = None
    try:
        box = Sandbox(layers, limits.submission_seconds)
        with box:
            workspace = build_workspace(submission, box.private)
            box.expose(workspace.root)
            markers = " or ".join(problems) if problems else None
            if not has_reference():  # the student release: the differential tests would only skip
                markers = f"({markers}) and not differential" if markers else "not differential"
            modules = workspace.modules()  # read while the workspace exists: the sandbox removes it
            untouched = frozenset(name for name, source in modules.items() if not_started(source))
            broken = scoring.compile_errors({name: modules[name] for name in workspace.taken})
            seed = None if secret is None else grading_seed(secret, modules)
            run = run_tests(workspace.root, limits, markers=markers, sandbox=box.spec(), seed=seed,
                            seconds=limits.submission_seconds - (time.monotonic() - start), cpu_share=cpu_share,
                            on_problem=on_problem and (lambda *finished: on_problem(progress_line(*finished))))
        operator += box.problems
        if run.problems:
            status = "error"
            notes.append(SET_ASIDE)
            operator += run.problems + ["pytest's output:\n" + run.log[-3000:]]
        else:
            scores = score_run(run)
            graded = {p.id for p in scores}
            broken = {p: line for p, line in (scoring.import_errors(scores) | broken).items() if p in graded}
            missing = frozenset(m for m in workspace.missing if m in graded)
            if not workspace.taken:
                seen = ", ".join(workspace.seen[:8]) + (", ..." if len(workspace.seen) > 8 else "")
                lead.append(NOTHING_UPLOADED.format(
                    expected=", ".join(f"{p.id}.py" for p in registry.PROBLEMS),
                    found=f"It holds: {seen}." if seen else "It is empty (or holds no Python file)."))
            elif missing:
                notes.append("Not in the submission (graded as the untouched stub): "
                             + ", ".join(f"{m}.py" for m in sorted(missing)))
            operator += ["an error of the grading code, not the submission's: " + line
                         for line in scoring.grader_errors(scores)]
            if not has_reference():
                notes.append(LOCAL_TESTS_ONLY)
            elif secret is None:
                notes.append(LOCAL_MODE)
            evidence = run.evidence  # one line per distinct report (grader/runner.py)
            evidence = evidence + copycheck.evidence(modules)  # copies of an oracle or of the reference
            if evidence:
                status = "review"
                notes.append(REVIEW)
                operator += ["flagged for review: " + line for line in evidence]
            if run.timed_out:
                notes.append(f"The submission's time limit ({limits.submission_seconds:g} s) was reached; "
                             "tests that had not run count as failed.")
            elif fingerprints is not None:
                found = _fingerprint(fingerprints, submission, scores, untouched | set(broken), limits, start)
                operator += [f"fingerprints: {found['error']}"] * bool(found["error"])
                evidence += [f"[fingerprints] {line}" for line in found["review"]]
                operator += ["flagged for review while fingerprinted: " + line for line in found["review"]]
                if found["review"] and status == "ok":
                    status = "review"
                    notes.append(REVIEW)
    except SubmissionError as exc:
        notes.append(f"The submission could not be read: {exc}")
        status = "unreadable"
    except Exception:  # the grader's own failure must still leave a results.json
        notes.append(GRADER_FAILED)
        operator.append(traceback.format_exc())
        status = "error"
    known = known_mistakes(found)
    sections = dict(lead=lead, missing=missing, broken=broken)
    text = table(scores, notes, untouched, known, **sections)
    summary = table(scores, notes, untouched, known, failures=False, **sections)  # the failures are under the tests
    seconds = time.monotonic() - start
    write_atomically(out, json.dumps(results_json(scores, seconds=seconds, output=summary, review=evidence, known=known,
                                                  fingerprinted=_ran(found), broken=broken, missing=missing,
                                                  per_problem=figures_per_problem(run)), indent=1))
    for line in operator if to_print else ():
        print(f"resource-grader [{submission}]: {_printable(line)}", file=sys.stderr)
    return Graded(submission, scores, text, status, seconds, found, untouched)


def _stop_leaving_nothing(signum, _frame) -> None:
    """SIGTERM (a scheduler's stop, a TA's `kill`) on grade or batch: every process the grader started (pytest,
    the workers, the fingerprints') killed, every open sandbox torn down (its uid's processes, its mount, its
    folders), then exit. Gradings that finished have their results already; those cut short have none."""
    kill_tree(os.getpid(), spare_root=True)
    for box in list(sandbox.OPEN):
        box.teardown()
    os._exit(128 + signum)


def progress_line(problem: str, collected: list[dict], records: dict[str, dict]) -> str:
    """A problem whose tests have all finished, as `grade` shows it while the others run: its score by its
    tests alone (the final table may still set points aside: a module that does not import, a review) and
    the seconds its tests took."""
    scores = score_run(RunResult(collected=collected, records=records), [registry.BY_ID[problem]])
    seconds = sum_per_problem(records.values(), "duration").get(problem, 0.0)
    score = f"{scores[0].score:5.2f} / {scores[0].points:g} points" if scores else "no graded tests here"
    return f"{problem:<26} {score:<20} {seconds:6.1f} s"


def sum_per_problem(records, field: str) -> dict[str, float]:
    """Problem -> the sum of `field` over its tests' report records (a record without it counts 0)."""
    sums: dict[str, float] = {}
    for record in records:
        if record.get("problem"):
            sums[record["problem"]] = sums.get(record["problem"], 0.0) + float(record.get(field) or 0)
    return sums


def figures_per_problem(run: RunResult | None) -> dict[str, dict[str, float]]:
    """For course staff (results.json's extra_data): the seconds each problem's tests took, and the examples
    its generated tests ran."""
    records = run.records.values() if run else ()
    return {"seconds_per_problem": {p: round(v, 1) for p, v in sum_per_problem(records, "duration").items()},
            "examples_per_problem": {p: int(v) for p, v in sum_per_problem(records, "examples").items()}}


def _printable(text: str) -> str:
    """The operator's line with control characters escaped (a submission's evidence text must not fake log lines
    or move the terminal's cursor); the newlines of a traceback or of pytest's output stay."""
    return "".join(c if c == "\n" or c.isprintable() else ascii(c)[1:-1] for c in text)


def _ran(found: dict | None) -> dict | None:
    """For course staff (results.json's extra_data): what the fingerprints ran, where they ran something."""
    if not found or not (found["ran"] or found["error"]):
        return None
    return {"problems": found["ran"], "seconds": round(found["seconds"], 1), "timed_out": found["timed_out"],
            "error": bool(found["error"])}


FINGERPRINT_MIN_SECONDS = 30.0  # what must be left of the time limit to fingerprint at all


def _fingerprint(fingerprints, submission: Path, scores: list[ProblemScore], untouched: frozenset[str],
                 limits: Limits, start: float) -> dict:
    """The fingerprints of the problems the submission started: those it failed run again, within what is left
    of its time limit (at most limits.fingerprint_seconds; none where less than FINGERPRINT_MIN_SECONDS is
    left); those it passed count as agreeing."""
    started = [p for p in scores if p.id not in untouched]
    failed = [p.id for p in started if not all(t.passed for t in p.tests)]
    passed = [p.id for p in started if p.id not in failed]
    seconds = min(limits.fingerprint_seconds, limits.submission_seconds - (time.monotonic() - start))
    if seconds < FINGERPRINT_MIN_SECONDS:  # the catalogue's answers alone take longer: the limit would be passed
        failed = []
    return fingerprints(submission, failed, passed, seconds)


def write_atomically(path: Path, text: str) -> None:
    """Readers see the old file or the whole new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.partial")
    partial.write_text(text)
    os.replace(partial, path)


EXIT_STATUS = {"ok": 0, "unreadable": 2, "error": 3, "review": 4}
# course staff's commands, not in the student release: command -> module (add_parser, run)
KITS = {"release": "grader.release", "gradescope": "grader.gradescope", "compare": "grader.compare"}
STAFF_USAGE = """
Course staff (not in the student release):

    resource-grader release OUT          the student repository (grader/release.py)
    resource-grader gradescope OUT.zip   Gradescope's autograder (grader/gradescope.py)
    resource-grader compare SUB --problem P   SUB against the reference, function by function, and the
                                         catalogued mistakes it matches (grader/compare.py)
"""


def fingerprinter(problems: list[str] | None, layers: Layers, limits: Limits, *, up_front: bool = False):
    """grader/compare.py's Fingerprinter for `problems` (None: all), or, where there is no reference or no
    catalogue of mistakes (the student release), why there is none."""
    if not has_reference() or importlib.util.find_spec(KITS["compare"]) is None:
        return None, "they need the reference and the catalogue of mistakes (the course's tree)"
    compare = importlib.import_module(KITS["compare"])
    return compare.Fingerprinter(problems or [p.id for p in registry.PROBLEMS], layers, limits, up_front=up_front), None


def grade(submission: Path, out: Path, limits: Limits, problems: list[str] | None, layers: Layers,
          secret: bytes | None, fingerprints: bool = True) -> int:
    if not layers.sandboxed:
        print(layers.describe())
    found = fingerprinter(problems, layers, limits)[0] if fingerprints else None
    graded = grade_submission(submission, out, limits, problems, layers, secret, found,
                              on_problem=lambda line: print(line, file=sys.stderr, flush=True))
    print(graded.text)
    print(f"\nresults written to {out}")
    return EXIT_STATUS[graded.status]


def _add_common(command, defaults: Limits) -> None:
    command.add_argument("--problem", action="append", help="grade only this problem (repeatable)")
    command.add_argument("--time-limit", type=float, default=defaults.submission_seconds,
                         help="seconds (wall clock) for one submission's whole run: stopped there, what was graded "
                              f"kept (default {defaults.submission_seconds:g}: a margin under Gradescope's "
                              f"{GRADESCOPE_TIMEOUT:g} s)")
    command.add_argument("--test-timeout", type=float, default=defaults.test_seconds,
                         help="seconds of the worker's CPU time for the calls of one test (wall-clock backstop: "
                              f"{WALL_FACTOR} times as long)")
    command.add_argument("--call-timeout", type=float, default=defaults.call_seconds,
                         help="seconds of the worker's CPU time per call into the submission (wall-clock "
                              f"backstop: {WALL_FACTOR} times as long)")
    command.add_argument("--memory-mb", type=int, default=defaults.worker_memory_mb,
                         help="address-space limit of the worker")
    command.add_argument("--sandbox", choices=["auto", "user", "none"], default="auto",
                         help="auto: every layer this machine allows (see `resource-grader doctor`); user: the "
                              "separate-user layer alone; none: no sandbox")
    command.add_argument("--no-sandbox", dest="sandbox", action="store_const", const="none",
                         help="the same as --sandbox none")
    command.add_argument("--secret-file", type=Path, default=None,
                         help="the course secret that seeds the generated inputs (default: $RA_GRADING_SECRET_FILE, "
                              "else $RA_GRADING_SECRET)")


def main(argv=None) -> int:
    kits = {name: module for name, module in KITS.items() if importlib.util.find_spec(module) is not None}
    parser = argparse.ArgumentParser(prog="resource-grader", description=__doc__ + STAFF_USAGE * bool(kits),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    g = commands.add_parser("grade", help="grade one submission (a folder or a zip)")
    g.add_argument("submission", nargs="?", default=".", type=Path)
    g.add_argument("--out", type=Path, default=None,
                   help="results.json path (default: Gradescope's, else ./results.json)")
    g.add_argument("--local", action="store_true",
                   help="grade your own work without the course secret: the public inputs of "
                        "`pytest --hypothesis-profile=grade`")
    b = commands.add_parser("batch", help="grade a folder of submissions in parallel")
    b.add_argument("folder", type=Path)
    b.add_argument("--out", type=Path, default=Path("grades"), help="output folder (default: ./grades)")
    b.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) // 2),
                   help="submissions graded at once on this machine (default: half the cores; each uses two "
                        "processes); with --scheduler, the cluster's workers decide")
    b.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="grade on the running Dask cluster whose scheduler is at ADDRESS (tcp://HOST:PORT, "
                        "tls://...; needs the `cluster` extra); every worker reads the course secret itself")
    b.add_argument("--retries", type=int, default=2,
                   help="on this machine: how often a grading whose worker died is given to another (a "
                        "cluster: its scheduler's distributed.scheduler.allowed-failures)")
    b.add_argument("--regrade", action="store_true",
                   help="grade every submission again, even those whose results in OUT are for the same "
                        "submission, grader and options")
    b.add_argument("--insecure-cluster", action="store_true",
                   help="allow workers whose gradings can reach the network (no namespaces layer) on a cluster "
                        "that listens on plain TCP")
    for command in (g, b):
        _add_common(command, Limits())
        # accepted everywhere, shown only where there are fingerprints (not in the student release)
        command.add_argument("--no-fingerprints", dest="fingerprints", action="store_false",
                             help="do not name the catalogued mistakes a failed problem's answers match (they "
                                  "run its functions a second time, in a sandbox, on compare's inputs)"
                             if "compare" in kits and has_reference() else argparse.SUPPRESS)
    d = commands.add_parser("doctor", help="which sandbox layers this machine allows, and why not the others")
    d.add_argument("--sandbox", choices=["auto", "user", "none"], default="auto")
    for module in kits.values():  # course staff's commands: not in the student release
        importlib.import_module(module).add_parser(commands)
    options = parser.parse_args(argv)
    if options.command == "doctor":
        from grader.cluster import non_root_doctor

        print(sandbox.doctor(options.sandbox))
        print(non_root_doctor())
        return 0
    if options.command in ("release", "gradescope") and INSTALLED_COPY:
        print(f"resource-grader {options.command}: builds from the repository (its README, kit and grader), which "
              "a non-editable install does not carry: run it from a clone, installed with `pip install -e .`",
              file=sys.stderr)
        return 2
    if options.command in kits:
        return importlib.import_module(kits[options.command]).run(options)
    unknown = [p for p in options.problem or [] if p not in registry.BY_ID]
    if unknown:
        parser.error(f"unknown problem(s) {unknown}; known: {', '.join(registry.BY_ID)}")
    limits = Limits(options.time_limit, options.test_timeout, options.call_timeout, options.memory_mb)
    layers = sandbox.detect(options.sandbox)
    if options.sandbox == "user" and not layers.sandboxed:
        parser.error(f"--sandbox user: the user layer is not available here: {layers.why_not['user']}")
    # Without the reference (the student release) there is no official grade to protect: always local.
    local = getattr(options, "local", False) or (options.command == "grade" and not has_reference())
    try:
        secret = None if local else course_secret(options.secret_file)
    except SecretError as exc:
        print(f"resource-grader {options.command}: {exc}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _stop_leaving_nothing)
    if options.command == "grade":
        return grade(options.submission, options.out or _default_results_path(), limits, options.problem, layers,
                     secret, options.fingerprints)
    if options.jobs < 1 or options.retries < 0:
        parser.error("--jobs must be at least 1, --retries at least 0")
    # with --scheduler the workers grade, and each refuses to without a sandbox (grader/cluster.py)
    if not layers.sandboxed and options.sandbox != "none" and options.scheduler is None:
        print(f"resource-grader batch: refusing to run other people's code without a sandbox. {layers.describe()}.\n"
              "Run `resource-grader doctor` for what is missing, or pass --no-sandbox to grade without one.",
              file=sys.stderr)
        return 2
    from grader.batch import batch
    from grader.cluster import ClusterError

    try:
        return batch(options.folder, options.out, limits, options.problem, options.jobs, layers, secret,
                     options.fingerprints, mode=options.sandbox, scheduler=options.scheduler,
                     secret_file=options.secret_file, retries=options.retries, regrade=options.regrade,
                     insecure_cluster=options.insecure_cluster)
    except (SubmissionError, ClusterError) as exc:
        print(f"resource-grader batch: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
