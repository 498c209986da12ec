"""Benchmark the suite and the grader (figures printed, never asserted):

    python -m grader.staff.bench              # or: make bench
    python -m grader.staff.bench --grade-only # only the grading of a full submission
    python -m grader.staff.bench --overhead   # only what running the code under test in a worker costs
    python -m grader.staff.bench --make-test  # only the phases of `make test` and `make slow` (what CI runs)
    python -m grader.staff.bench --make-test --record   # the same, written into the README's figures
    python -m grader.staff.bench --make-test --under-load [--record]   # `make test` on a busy machine, on purpose
    python -m grader.staff.bench --pytest tests/meta/test_grader.py --meta -n 0   # one pytest command's figures

1. the default suite's wall time on the reference and on the untouched stubs (2 cores here), and the stub
   suite: a student's first `pytest` on the untouched stubs (no hypothesis database yet), the median of 3
   runs; the target is under 10 s on 2 cores (issue 13);
2. the grader on a full, correct submission (a copy of the reference's modules), on one core as on
   Gradescope's default worker: wall time, score, and the peak memory of the grading's whole process tree;
3. the same on a submission that fails every problem compare has inputs for, each with one catalogued mistake
   planted (tests/mistakes' planted_source), with the fingerprints that name them (twice: compare's answers
   computed by the first grading, then kept for the second, as on Gradescope after setup.sh) and without;
4. with --overhead: each problem's tests on the reference under the grading profile, in-process and through
   the grader's worker (`--isolated`, no sandbox), in CPU seconds of the whole process tree: the difference is
   what the worker costs (its start, torch's import in it, the round trips, the guard);
5. with --make-test: each target `make test` runs (the Makefile's `test:` line), its wall and CPU seconds, then
   the slow tier CI runs after it (`make slow`), each with where its CPU went: per test file and per fixture
   (grader/staff/ledger.py); with --record, in the README's paragraph of figures (only where every phase passed);
6. with --make-test --under-load: `make test` alone (not the slow tier) with every core kept busy by a process that
   spins, in a cgroup of their own beside the measured tree's (their CPU is printed, never counted in its figures):
   the check must pass on a busy machine, and its figures go into the README beside the idle ones;
7. with --pytest ARGS: one pytest command (`--pytest tests/meta/test_grader.py --meta -n 0`), its wall and CPU
   seconds and where they went, as --make-test prints them: a file's cost before and after a change.

Memory is reported two ways. PSS (proportional set size) splits each shared page among the processes that
map it, so the sum over the tree counts every page once: that is what a container's memory limit (a
cgroup) charges. RSS counts shared pages (libtorch's code, mapped by both the test process and the worker)
once per process: an upper bound.
"""

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from grader import OFFICIAL_ROOT, registry
from grader.harness import cgroups
from grader.staff import ledger

GRADESCOPE_MEMORY_MIB = 768e6 / 2**20  # Gradescope's default instance: 768 MB


class Run(NamedTuple):
    wall: float  # seconds
    cpu: float  # seconds, user and system, of the command and every process it waited for
    code: int  # its exit status


def run_timed(command: list[str], env: dict[str, str] | None = None, output=subprocess.DEVNULL) -> Run:
    """Run `command` in the official tree, its output (stdout and stderr) to `output`; its CPU seconds are those of
    its whole process tree, sandboxed workers included, where a cgroup can count them (ACCOUNTING)."""
    before, start = os.times(), time.monotonic()
    with cgroups.CpuAccount() as account:
        done = subprocess.run(command, cwd=OFFICIAL_ROOT, stdout=output, stderr=subprocess.STDOUT, check=False,
                              env=env, preexec_fn=account.join)
        counted = account.seconds()
    after = os.times()
    waited = after.children_user - before.children_user + after.children_system - before.children_system
    return Run(time.monotonic() - start, waited if counted is None else counted, done.returncode)


def accounting() -> str:
    """How the CPU seconds printed are counted here, and the load the machine had."""
    with cgroups.CpuAccount() as account:
        how = (f"CPU counted by the kernel for the whole process tree ({account.kind})" if account.kind else
               "CPU of the processes waited for (no cgroup to count in here: the sandboxed workers are missed)")
    return (f"{how}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; the fixed workload took "
            f"{machine_speed():.2f} CPU-s")


def machine_speed() -> float:
    """CPU seconds of a fixed piece of work in this process (a loop of Python, then hashing 128 MiB: about half a
    second), printed beside the figures: the same work costs more CPU seconds on a slower machine, or on a virtual
    machine whose host is busy (1.4 times as many on this project's 2-core machine within an hour in 2026-12), and
    so do they."""
    start = time.process_time()
    total = 0
    for i in range(8_000_000):
        total += i % 7
    hashlib.sha256(bytes(128 << 20)).digest()
    return time.process_time() - start


def timed(command: list[str], env: dict[str, str] | None = None) -> float:
    return run_timed(command, env).wall


def stub_suite_seconds(runs: int = 3) -> float:
    """A student's first run: `pytest` (the students' command: default options, their code in-process) on the
    untouched stubs, each run with an empty hypothesis database of its own; the median of `runs`."""
    times = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="ra-bench-hypothesis-") as storage:
            env = {**os.environ, "HYPOTHESIS_STORAGE_DIRECTORY": storage}
            env.pop("HYPOTHESIS_PROFILE", None)
            times.append(timed([sys.executable, "-m", "pytest"], env))
    return sorted(times)[len(times) // 2]


def cpu_seconds(command: list[str]) -> float:
    return run_timed(command).cpu


def worker_overhead() -> None:
    """Print, per problem, its tests' CPU seconds on the reference in-process and through the worker."""
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--impl", "reference",
              "--hypothesis-profile=grade"]
    print(f"{'problem':<26} {'in-process':>10} {'worker':>8} {'overhead':>9}   (CPU seconds, pytest's start included)")
    totals = [0.0, 0.0]
    for problem in registry.PROBLEMS:
        tests = f"tests/test_{problem.id}.py"
        local, isolated = cpu_seconds(pytest + [tests]), cpu_seconds(pytest + ["--isolated", tests])
        totals = [totals[0] + local, totals[1] + isolated]
        print(f"{problem.id:<26} {local:10.1f} {isolated:8.1f} {isolated - local:9.1f}")
    print(f"{'total':<26} {totals[0]:10.1f} {totals[1]:8.1f} {totals[1] - totals[0]:9.1f}")


def make_test_phases() -> list[str]:
    """The targets `make test` runs, in order: the Makefile's `test:` line."""
    line = next(line for line in (OFFICIAL_ROOT / "Makefile").read_text().splitlines() if line.startswith("test:"))
    return line.split(":", 1)[1].split()


def make_test(record: bool = False, under_load: bool = False) -> None:
    """Print each phase of `make test` (the README's test command), then `make slow` (the slow tier, which CI runs
    after it): wall and CPU seconds, exit status; each phase's output is kept in a log file. With `record`, the
    figures go into the README's paragraph of them, where every phase passed. With `under_load`, `make test` alone,
    every core kept busy (`busy_cores`), its figures in the README's paragraph for a busy machine."""
    logs = Path(tempfile.mkdtemp(prefix="ra-bench-make-test-"))
    load, speed = os.getloadavg()[0], machine_speed()
    print(f"{'make test':<12} {'wall':>6} {'CPU':>6} {'exit':>4}   (seconds; {os.cpu_count()} cores, load "
          f"{load:.1f} before; the phases' output in {logs})")
    with busy_cores(os.cpu_count() if under_load else 0) as busy:
        phases = {phase: _make(phase, logs) for phase in make_test_phases()}
        hogged = busy.seconds() if under_load else None
    wall, cpu = sum(run.wall for run in phases.values()), sum(run.cpu for run in phases.values())
    print(f"{'total':<12} {wall:6.0f} {cpu:6.0f}")
    if under_load:
        print(f"the {os.cpu_count()} busy processes beside it got {hogged:.0f} CPU-s (not counted above)")
        runs, paragraph = list(phases.values()), ci_figures(phases, None, (load, speed), busy=hogged)
        begin, end = LOADED_BEGIN, LOADED_END
    else:
        slow = _make("slow", logs)
        print(f"{'CI in all':<12} {wall + slow.wall:6.0f} {cpu + slow.cpu:6.0f}   (make test, then make slow)")
        runs, paragraph = [*phases.values(), slow], ci_figures(phases, slow, (load, speed))
        begin, end = CI_BEGIN, CI_END
    if not record:
        return
    if any(run.code for run in runs):
        raise SystemExit("a phase failed: its figures are not recorded")
    readme = OFFICIAL_ROOT / "README.md"
    readme.write_text(with_block(readme.read_text(), begin, end, f"\n{paragraph}\n", readme.name))
    print(f"recorded in {readme.name}")


@contextlib.contextmanager
def busy_cores(count: int):
    """`count` processes that spin until the block ends (or this process does: they stop once orphaned), all in one
    CPU account of their own (a cgroup beside the measured tree's, never inside it): a machine kept busy on purpose.
    Yields that account."""
    spin = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    pass"
    with cgroups.CpuAccount() as account:
        spinning = [subprocess.Popen([sys.executable, "-c", spin], stdin=subprocess.DEVNULL,
                                     preexec_fn=account.join) for _ in range(count)]
        try:
            yield account
        finally:
            for process in spinning:
                process.kill()
                process.wait()


CI_BEGIN = "<!-- make-test figures: written by `python -m grader.staff.bench --make-test --record`, not by hand -->"
CI_END = "<!-- end of make-test figures -->"
LOADED_BEGIN = ("<!-- make-test figures on a busy machine: written by `python -m grader.staff.bench --make-test "
                "--under-load --record`, not by hand -->")
LOADED_END = "<!-- end of make-test figures on a busy machine -->"


def ci_figures(phases: dict[str, Run], slow: Run | None, before: tuple[float, float],
               busy: float | None = None) -> str:
    """The README's paragraph of figures: `make test` by phase (wall and CPU seconds), then `make slow` (None: not
    run); `before`: the load average and `machine_speed` before the run (and the speed again now); `busy`: the CPU
    seconds that the processes kept spinning beside it got."""
    load, speed = before
    wall, cpu = sum(run.wall for run in phases.values()), sum(run.cpu for run in phases.values())
    each = ", ".join(f"{phase} {run.wall:.0f} s and {run.cpu:.0f} s of CPU" for phase, run in phases.items())
    with cgroups.CpuAccount() as account:
        counted = "the whole process tree's" if account.kind else "the processes waited for only"
    text = (f"Measured {time.strftime('%Y-%m-%d')} on {os.cpu_count()} cores (load {load:.1f} before; a fixed "
            f"workload, `bench.machine_speed`, took {speed:.2f} CPU-s before and {machine_speed():.2f} after), CPU "
            f"{counted}: `make test` {wall:.0f} s and {cpu:.0f} s of CPU ({each})")
    if busy is not None:
        return (text + f", with {os.cpu_count()} processes spinning beside it the whole time (they got {busy:.0f} s "
                "of CPU, not counted): every phase passed.")
    return text + (f", then `make slow` {slow.wall:.0f} s ({slow.cpu:.0f} s of CPU): {wall + slow.wall:.0f} s for CI "
                   "in all.")


def _make(target: str, logs: Path):
    """Run `make target`, its output in a log file; print its figures, then where its CPU went (grader/staff/ledger.py:
    per test file and per fixture)."""
    folder = logs / f"{target}-ledger"
    folder.mkdir()
    with open(logs / f"{target}.log", "wb") as log:
        run = run_timed(["make", target], env={**os.environ, **ledger.environment(folder)}, output=log)
    print(f"{target:<12} {run.wall:6.0f} {run.cpu:6.0f} {run.code:4d}   (load {os.getloadavg()[0]:.1f} as it ended)",
          flush=True)
    records = ledger.read(folder)
    if records:
        print(ledger.tables(records, run.cpu), flush=True)
    return run


def pytest_run(arguments: list[str]) -> None:
    """One pytest command's figures, per test file and per fixture (as `_make` prints a target's)."""
    with tempfile.TemporaryDirectory(prefix="ra-bench-pytest-") as folder:
        env = {**os.environ, **ledger.environment(Path(folder))}
        run = run_timed([sys.executable, "-m", "pytest", *arguments], env=env, output=None)
        print(f"pytest {' '.join(arguments)}: {run.wall:.0f} s, {run.cpu:.1f} s of CPU, exit {run.code} "
              f"(load {os.getloadavg()[0]:.1f} as it ended)", flush=True)
        records = ledger.read(Path(folder))
        if records:
            print(ledger.tables(records, run.cpu), "", ledger.tests_table(records), sep="\n", flush=True)
    if run.code:
        sys.exit(run.code)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m grader.staff.bench")
    parser.add_argument("--grade-only", action="store_true", help="skip the suite's timings")
    parser.add_argument("--record", action="store_true",
                        help=f"write the gradings' figures to {FIGURES.relative_to(OFFICIAL_ROOT)} and their "
                             "table in docs/graders.md; with --make-test, its figures in README.md")
    parser.add_argument("--overhead", action="store_true", help="only the worker's cost, per problem")
    parser.add_argument("--make-test", action="store_true",
                        help="only the phases of `make test`, then `make slow` (CI's run)")
    parser.add_argument("--under-load", action="store_true",
                        help="with --make-test: `make test` alone, with one process spinning per core beside it")
    parser.add_argument("--pytest", nargs=argparse.REMAINDER, metavar="ARGS",
                        help="only this pytest command (the rest of the line), per file and per fixture")
    options = parser.parse_args(argv)
    print(accounting())
    if options.pytest is not None:
        return pytest_run(options.pytest)
    if options.overhead:
        return worker_overhead()
    if options.make_test:
        return make_test(options.record, options.under_load)
    if options.under_load:
        parser.error("--under-load goes with --make-test")
    if not options.grade_only:
        pytest = [sys.executable, "-m", "pytest", "-q"]
        print(f"suite, reference, in-process:  {timed(pytest + ['--impl', 'reference']):6.1f} s")
        print(f"suite, reference, isolated:    {timed(pytest + ['--impl', 'reference', '--isolated']):6.1f} s")
        print(f"suite, untouched stubs:        {timed(pytest + ['--impl', 'assignment']):6.1f} s")
        print(f"stub suite: {stub_suite_seconds():.1f} s (a student's first `pytest` on the untouched stubs, "
              f"median of 3; target under 10 s on 2 cores; load {os.getloadavg()[0]:.1f})")
    one_core = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    where = ", one core" if one_core else ""
    gradings = []

    def measure(what: str, modules: dict[str, str], flags: list[str] = (), once: bool = False) -> None:
        measured = grade_measured(modules, one_core, flags)
        report(what + where, measured)
        gradings.append(figures_of(what, *measured) | ({"once": True} if once else {}))

    modules = {p.module: (OFFICIAL_ROOT / "reference" / f"{p.module}.py").read_text() for p in registry.PROBLEMS}
    measure("a full correct submission", modules)
    planted = planted_mistakes()
    print(f"\nplanted: {', '.join(f'{p}:{m}' for p, m in planted.items())}")
    from tests.mistakes import planted_source

    modules.update({problem: planted_source(problem, [mistake]) for problem, mistake in planted.items()})
    with kept_answers_in(tempfile.mkdtemp(prefix="ra-bench-answers-")):  # empty: the first grading computes them
        measure(f"one catalogued mistake in each of {len(planted)} problems, with its fingerprints, compare's "
                "answers computed (none kept yet)", modules, once=True)
        measure("the same, compare's answers kept (by the grading before)", modules)
    measure("the same, `--no-fingerprints`", modules, ["--no-fingerprints"])
    if options.record:
        figures = {"measured": time.strftime("%Y-%m-%d"), "where": machine(bool(one_core)), "gradings": gradings}
        FIGURES.write_text(json.dumps(figures, indent=1) + "\n")
        FIGURES_PAGE.write_text(with_figures(FIGURES_PAGE.read_text(), figures))
        print(f"\nrecorded in {FIGURES.relative_to(OFFICIAL_ROOT)} and {FIGURES_PAGE.relative_to(OFFICIAL_ROOT)}")


@contextlib.contextmanager
def kept_answers_in(folder: str):
    """The gradings inside keep compare's answers in `folder` (grader/fingerprints/cache.py), removed after."""
    before = os.environ.get("RA_COMPARE_CACHE")
    os.environ["RA_COMPARE_CACHE"] = folder
    try:
        yield
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if before is None:
            del os.environ["RA_COMPARE_CACHE"]
        else:
            os.environ["RA_COMPARE_CACHE"] = before


# -- the recorded figures, and docs/graders.md's table -----------------------------------------------------

FIGURES = Path(__file__).with_name("figures.json")
FIGURES_PAGE = OFFICIAL_ROOT / "docs" / "graders.md"  # where the table of the figures is
BEGIN = "<!-- figures: written by `python -m grader.staff.bench --grade-only --record`, not by hand -->"
END = "<!-- end of figures -->"


def figures_of(what: str, peak: "Peak", results: dict) -> dict:
    """One grading's figures, as recorded."""
    staff = results.get("extra_data", {})
    return {"what": what, "seconds": round(peak.seconds, 1),
            "cpu_seconds": None if peak.cpu is None else round(peak.cpu, 1),
            "pss_mib": round(peak.pss), "rss_mib": round(peak.rss),
            "score": results.get("score"), "examples": sum(staff.get("examples_per_problem", {}).values()),
            "seconds_per_problem": staff.get("seconds_per_problem", {}),
            "examples_per_problem": staff.get("examples_per_problem", {})}


def machine(one_core: bool) -> str:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), "an unnamed CPU")
    return (f"{'one core of ' if one_core else ''}a {os.cpu_count()}-core machine ({model}), "
            f"load {os.getloadavg()[0]:.1f} at the end, a fixed workload (`bench.machine_speed`) "
            f"{machine_speed():.2f} CPU-s")


def figures_table(figures: dict) -> str:
    """The figures' block in docs/graders.md: the gradings, then each problem's share of the correct submission's
    grading."""
    lines = [BEGIN, "", f"Measured {figures['measured']} on {figures['where']}; CPU seconds are the whole grading "
             "tree's (the sandboxed workers included), peak memory its summed PSS (what a container's limit charges) "
             "and summed RSS.", "",
             "| grading | seconds | CPU seconds | peak PSS | peak RSS | examples | score |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for g in figures["gradings"]:
        cpu = "—" if g.get("cpu_seconds") is None else f"{g['cpu_seconds']:.1f}"
        lines.append(f"| {g['what']} | {g['seconds']:.1f} | {cpu} | {g['pss_mib']} MiB | {g['rss_mib']} MiB | "
                     f"{g['examples']} | {g['score']:g} |")
    correct = figures["gradings"][0]
    lines += ["", class_time(figures)]
    lines += ["", f"Each problem's tests in the first ({correct['what']}), its worker's start included:", "",
              "| problem | seconds | examples |", "| --- | ---: | ---: |"]
    for problem, seconds in sorted(correct["seconds_per_problem"].items(), key=lambda item: -item[1]):
        lines.append(f"| {problem} | {seconds:.1f} | {correct['examples_per_problem'].get(problem, 0)} |")
    return "\n".join(lines + ["", END])


CLASS, CORES = 600, 40  # the class and the cluster that docs/graders.md's Slurm example grades


def class_time(figures: dict) -> str:
    """What grading a class of CLASS costs, from the CPU seconds measured: in all, and on CORES cores. A grading
    that computed compare's answers (`once`) pays what a class pays once, not per submission: it is not a grading's
    figure, and what it cost over the same grading with the answers kept is added once."""
    each = [g["cpu_seconds"] for g in figures["gradings"] if g.get("cpu_seconds") is not None and not g.get("once")]
    if not each:
        return "(no CPU seconds were counted in this measurement: no cgroup to count in)"
    low, high = min(each), max(each)
    once = [g for g in figures["gradings"] if g.get("once") and g.get("cpu_seconds") is not None]
    kept = [g["cpu_seconds"] for g in figures["gradings"][figures["gradings"].index(once[0]) + 1:][:1]] if once else []
    extra = max(0.0, once[0]["cpu_seconds"] - kept[0]) if once and kept else 0.0
    first = (f", and once {extra:.1f} CPU seconds for compare's answers (the first grading that needs them "
             "computes and keeps them)") if extra else ""
    return (f"A class of {CLASS} costs {(CLASS * low + extra) / 3600:.1f} to {(CLASS * high + extra) / 3600:.1f} "
            f"CPU-hours by these gradings ({low:.1f} to {high:.1f} CPU seconds each{first}): on {CORES} cores kept "
            f"busy, {(CLASS * low + extra) / CORES / 60:.0f} to {(CLASS * high + extra) / CORES / 60:.0f} minutes.")


def with_figures(page: str, figures: dict) -> str:
    """docs/graders.md's text `page` with its figures block replaced by `figures_table(figures)`."""
    return with_block(page, BEGIN, END, figures_table(figures).removeprefix(BEGIN).removesuffix(END), FIGURES_PAGE.name)


def with_block(text: str, begin: str, end: str, block: str, name: str) -> str:
    """`text` with what lies between its lines `begin` and `end` replaced by `block`."""
    head, found, rest = text.partition(begin)
    if not found or end not in rest:
        raise SystemExit(f"{name} has no block of figures ({begin} ... {end}) to write")
    return head + begin + block + end + rest.split(end, 1)[1]


def planted_mistakes() -> dict[str, str]:
    """problem -> the first catalogued mistake of it that compare can name (its functions all comparable)."""
    from grader import fingerprints
    from grader.fingerprints import inputs
    from tests.mistakes import catalog

    planted = {}
    for problem in fingerprints.compare_inputs_problems():
        comparable = {n for e in inputs.entries(problem) for n in e.names}
        found = next((m.id for m in catalog(problem) if set(m.replaces) <= comparable), None)
        if found:
            planted[problem] = found
    return planted


def grade_measured(modules: dict[str, str], prefix: list[str], options: list[str] = ()) -> tuple["Peak", dict]:
    """`resource-grader grade --local` on a submission of `modules` (name -> source), measured: (peak, the
    results.json it wrote, or {} where it wrote none)."""
    with tempfile.TemporaryDirectory(prefix="ra-bench-") as tmp:
        submission = Path(tmp, "submission")
        submission.mkdir()
        for name, source in modules.items():
            (submission / f"{name}.py").write_text(source)
        out = Path(tmp, "results.json")
        peak = run_measured(prefix + [sys.executable, "-m", "grader", "grade", str(submission), "--out", str(out),
                                      "--local", *options])
        return peak, json.loads(out.read_text()) if out.exists() else {}


def report(what: str, measured: tuple["Peak", dict]) -> None:
    peak, results = measured
    staff = results.get("extra_data", {})
    seconds, examples = staff.get("seconds_per_problem", {}), staff.get("examples_per_problem", {})
    cpu = "" if peak.cpu is None else f" ({peak.cpu:.1f} CPU-s of the whole tree)"
    print(f"{what}: {peak.seconds:6.1f} s{cpu}, score {results.get('score', 'none: no results.json')}, "
          f"{sum(examples.values())} examples")
    print(f"  peak memory of the whole grading tree: {peak.pss:.0f} MiB PSS (what a container counts; "
          f"Gradescope's default is {GRADESCOPE_MEMORY_MIB:.0f} MiB), {peak.rss:.0f} MiB summed RSS")
    print("  the largest that one process of each kind reached (at different moments: they do not add up to the "
          "tree's peak):")
    for name, (pss, rss) in sorted(peak.by_process.items(), key=lambda item: -item[1][0]):
        print(f"    {name:<36} peak {pss:4.0f} MiB PSS, {rss:4.0f} MiB RSS")
    print("  seconds and examples of each problem's tests (its worker's start included; the rest of the wall time is "
          "the grader's and pytest's own, and the fingerprints):")
    for problem in sorted(seconds, key=lambda p: -seconds[p]):
        print(f"    {problem:<26} {seconds[problem]:6.1f} s {examples.get(problem, 0):6d} examples")


@dataclass
class Peak:
    seconds: float = 0.0
    pss: float = 0.0  # MiB, the largest sum over the tree at one moment
    rss: float = 0.0
    by_process: dict[str, tuple[float, float]] = field(default_factory=dict)  # kind -> the largest (PSS, RSS)
    cpu: float | None = None  # seconds of the whole tree, where a cgroup counts them


KINDS = [("grader.harness.worker", "worker (the submission's code)"), ("pytest", "test process (pytest)"),
         ("grader", "grader")]
WRAPPERS = ("bwrap", "setpriv", "prlimit")  # grader/harness/sandbox.py's, whose command lines hold the worker's


def _kind(pid: int) -> str | None:
    """What a process of the grading is, from its command line (a fork, such as uids.kill_uid's child, has
    its parent's). None where it has none: gone, a zombie not yet reaped (it holds no memory), or in the
    instant of an exec, before the new command line is written (the next sample, 50 ms later, counts it)."""
    try:
        text = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None
    program = os.path.basename(text.split(" ", 1)[0])
    if program in WRAPPERS:
        return f"{program} (sandbox wrapper)"
    return next((kind for marker, kind in KINDS if marker in text), program or None)


def _memory(pid: int) -> tuple[float, float]:
    """(PSS, RSS) of one process in MiB; zeros once it is gone."""
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0.0, 0.0
    values = {key: int(rest.split()[0]) / 1024 for key, rest in
              (line.split(":", 1) for line in rollup.splitlines()[1:])}
    return values.get("Pss", 0.0), values.get("Rss", 0.0)


def run_measured(command: list[str]) -> Peak:
    """Run `command`, sampling its process tree every 50 ms, and counting its CPU seconds (`run_timed`)."""
    peak, start = Peak(), time.monotonic()
    account = cgroups.CpuAccount()
    process = subprocess.Popen(command, cwd=OFFICIAL_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               preexec_fn=account.join)
    while process.poll() is None:
        total_pss = total_rss = 0.0
        for pid in cgroups.descendants(process.pid):  # the grader, pytest, bwrap, setpriv, the workers
            kind = _kind(pid)
            if kind is None:  # exited, or exec'ing: nothing to count now
                continue
            pss, rss = _memory(pid)
            total_pss, total_rss = total_pss + pss, total_rss + rss
            old = peak.by_process.get(kind, (0.0, 0.0))
            peak.by_process[kind] = (max(old[0], pss), max(old[1], rss))
        peak.pss, peak.rss = max(peak.pss, total_pss), max(peak.rss, total_rss)
        time.sleep(0.05)
    peak.seconds = time.monotonic() - start
    peak.cpu = account.seconds()
    account.close()
    return peak


if __name__ == "__main__":
    main()
