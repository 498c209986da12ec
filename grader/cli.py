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
import os
import signal
import sys
from pathlib import Path

from grader import INSTALLED_COPY, has_reference, registry
from grader.grading import EXIT_STATUS, grade_submission, printable
from grader.harness import sandbox
from grader.harness.cputime import WALL_FACTOR
from grader.job import MODES, Job, Settings, fingerprinter_available, resolve
from grader.runner import GRADESCOPE_TIMEOUT, Limits, kill_tree
from grader.seed import SecretError
from grader.submission import SubmissionError

GRADESCOPE_RESULTS = Path("/autograder/results/results.json")


def _default_results_path() -> Path:
    return GRADESCOPE_RESULTS if GRADESCOPE_RESULTS.parent.is_dir() else Path("results.json")


def _stop_leaving_nothing(signum, _frame) -> None:
    """SIGTERM (a scheduler's stop, a TA's `kill`) on grade or batch: every process the grader started (pytest,
    the workers, the fingerprints') killed, every open sandbox torn down (its uid's processes, its mount, its
    folders), then exit. Gradings that finished have their results already; those cut short have none."""
    kill_tree(os.getpid(), spare_root=True)
    for box in list(sandbox.OPEN):
        box.teardown()
    os._exit(128 + signum)


STAFF_USAGE = """
Course staff (not in the student release):

    resource-grader release OUT          the student repository (grader/staff/release.py)
    resource-grader gradescope OUT.zip   Gradescope's autograder (grader/staff/gradescope.py)
    resource-grader compare SUB --problem P   SUB against the reference, function by function, and the
                                         catalogued mistakes it matches (grader/staff/compare.py)
"""


def add_worker_options(command, defaults: Limits | None = None) -> None:
    """The options of the worker that runs a submission's code, declared here once for every command that starts
    one (grade, batch, compare): its limit per call, its memory, its sandbox."""
    defaults = defaults or Limits()
    command.add_argument("--call-timeout", type=float, default=defaults.call_seconds,
                         help="seconds of the worker's CPU time per call into the submission (wall-clock "
                              f"backstop: {WALL_FACTOR} times as long)")
    command.add_argument("--memory-mb", type=int, default=defaults.worker_memory_mb,
                         help="address-space limit of the worker")
    add_sandbox_options(command)


def add_sandbox_options(command) -> None:
    """--sandbox and --no-sandbox, the same for every command that runs a submission (and for doctor)."""
    command.add_argument("--sandbox", choices=MODES, default="auto",
                         help="auto: every layer this machine allows (see `resource-grader doctor`); user: the "
                              "separate-user layer alone; none: no sandbox")
    command.add_argument("--no-sandbox", dest="sandbox", action="store_const", const="none",
                         help="the same as --sandbox none")


def grade(submission: Path, out: Path, settings: Settings) -> int:
    if not settings.layers.sandboxed:
        print(settings.layers.describe())
    outcome = grade_submission(submission, out, settings,
                               on_problem=lambda line: print(line, file=sys.stderr, flush=True))
    for line in outcome.operator:  # the grader's own lines, for whoever runs it: never in the results
        print(f"resource-grader [{submission}]: {printable(line)}", file=sys.stderr)
    print(outcome.table())
    print(f"\nresults written to {out}")
    return EXIT_STATUS[outcome.status]


def _add_common(command, defaults: Limits) -> None:
    command.add_argument("--problem", action="append", help="grade only this problem (repeatable)")
    command.add_argument("--time-limit", type=float, default=defaults.submission_seconds,
                         help="seconds (wall clock) for one submission's whole run: stopped there, what was graded "
                              f"kept (default {defaults.submission_seconds:g}: a margin under Gradescope's "
                              f"{GRADESCOPE_TIMEOUT:g} s)")
    command.add_argument("--test-timeout", type=float, default=defaults.test_seconds,
                         help="seconds of the worker's CPU time for the calls of one test (wall-clock backstop: "
                              f"{WALL_FACTOR} times as long)")
    add_worker_options(command, defaults)
    command.add_argument("--secret-file", type=Path, default=None,
                         help="the course secret that seeds the generated inputs (default: $RA_GRADING_SECRET_FILE, "
                              "else $RA_GRADING_SECRET)")


# course staff's commands, not in the student release: command -> its module (with add_parser and run)
STAFF_COMMANDS = {"release": "grader.staff.release", "gradescope": "grader.staff.gradescope",
                  "compare": "grader.staff.compare"}


def staff_commands() -> dict[str, str]:
    """STAFF_COMMANDS where this installation has course staff's tools (grader/staff/, which the student release
    withholds as a unit), else none."""
    return STAFF_COMMANDS if importlib.util.find_spec("grader.staff") is not None else {}


def parser_of(staff: dict[str, str]) -> argparse.ArgumentParser:
    """The command line: grade, batch, doctor, and `staff`'s commands (command -> its module)."""
    parser = argparse.ArgumentParser(prog="resource-grader", description=__doc__ + STAFF_USAGE * bool(staff),
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
    b.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)),
                   help="submissions graded at once on this machine, each in a CPU share of cores / jobs (default: "
                        "one per core this process may use; more only shrinks each share); with --scheduler, the "
                        "cluster's workers decide")
    b.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="grade on the running Dask cluster whose scheduler is at ADDRESS (tcp://HOST:PORT, "
                        "tls://...; needs the `cluster` extra); every worker reads the course secret itself")
    b.add_argument("--retries", type=int, default=2,
                   help="on this machine: how often a grading whose worker died is given to another (a "
                        "cluster: its scheduler's distributed.scheduler.allowed-failures)")
    b.add_argument("--regrade", action="store_true",
                   help="grade every submission again, even those whose results in OUT are for the same "
                        "submission, grader and options")
    b.add_argument("--similarity-base", type=Path, default=None, metavar="DIR",
                   help="past years' submissions or known solutions (each a sub-folder or .zip of DIR) that every "
                        "submission is compared with for copies between students (never with each other)")
    b.add_argument("--insecure-cluster", action="store_true",
                   help="allow workers whose gradings can reach the network (no namespaces layer) on a cluster "
                        "that listens on plain TCP")
    for command in (g, b):
        _add_common(command, Limits())
        # accepted everywhere, shown only where there are fingerprints (not in the student release)
        command.add_argument("--no-fingerprints", dest="fingerprints", action="store_false",
                             help="do not name the catalogued mistakes a failed problem's answers match (they "
                                  "run its functions a second time, in a sandbox, on compare's inputs)"
                             if fingerprinter_available() else argparse.SUPPRESS)
    d = commands.add_parser("doctor", help="which sandbox layers this machine allows, and why not the others")
    add_sandbox_options(d)
    for module in staff.values():  # course staff's commands: not in the student release
        importlib.import_module(module).add_parser(commands)
    return parser


def main(argv=None) -> int:
    staff = staff_commands()
    parser = parser_of(staff)
    options = parser.parse_args(argv)
    if options.command == "doctor":
        from grader.harness import doctor

        print(doctor.report(options.sandbox))
        return 0
    if options.command in ("release", "gradescope") and INSTALLED_COPY:
        print(f"resource-grader {options.command}: builds from the repository (its README, kit and grader), which "
              "a non-editable install does not carry: run it from a clone, installed with `pip install -e .`",
              file=sys.stderr)
        return 2
    if options.command in staff:
        return importlib.import_module(staff[options.command]).run(options)
    unknown = [p for p in options.problem or [] if p not in registry.BY_ID]
    if unknown:
        parser.error(f"unknown problem(s) {unknown}; known: {', '.join(registry.BY_ID)}")
    # Without the reference (the student release) there is no official grade to protect: always local.
    local = getattr(options, "local", False) or (options.command == "grade" and not has_reference())
    job = Job(Limits(options.time_limit, options.test_timeout, options.call_timeout, options.memory_mb),
              tuple(options.problem) if options.problem else None, options.sandbox, options.fingerprints,
              seeded=not local, secret_file=str(options.secret_file.absolute()) if options.secret_file else None,
              plain_tcp=getattr(options, "insecure_cluster", False))
    if options.sandbox == "user" and not sandbox.detect("user").sandboxed:
        parser.error(f"--sandbox user: the user layer is not available here: {sandbox.detect('user').why_not['user']}")
    try:
        settings = resolve(job)
    except SecretError as exc:
        print(f"resource-grader {options.command}: {exc}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _stop_leaving_nothing)
    if options.command == "grade":
        return grade(options.submission, options.out or _default_results_path(), settings)
    if options.jobs < 1 or options.retries < 0:
        parser.error("--jobs must be at least 1, --retries at least 0")
    # with --scheduler the workers grade, and each refuses to without a sandbox (grader/batch/identity.py)
    layers = settings.layers
    if not layers.sandboxed and options.sandbox != "none" and options.scheduler is None:
        print(f"resource-grader batch: refusing to run other people's code without a sandbox. {layers.describe()}.\n"
              "Run `resource-grader doctor` for what is missing, or pass --no-sandbox to grade without one.",
              file=sys.stderr)
        return 2
    cores = len(os.sched_getaffinity(0))
    if options.scheduler is None and options.jobs > cores:
        print(f"resource-grader batch: --jobs {options.jobs} on {cores} cores: each grading gets "
              f"{cores / options.jobs:.2g} of a CPU, and the class is graded no faster than with --jobs {cores}",
              file=sys.stderr)
    from grader.batch.engine import ClusterError
    from grader.batch.run import batch

    try:
        return batch(options.folder, options.out, job, settings, jobs=options.jobs, scheduler=options.scheduler,
                     retries=options.retries, regrade=options.regrade, similarity_base=options.similarity_base)
    except (SubmissionError, ClusterError) as exc:
        print(f"resource-grader batch: {exc}", file=sys.stderr)
        return 2

if __name__ == "__main__":
    sys.exit(main())
