"""Run the official tests on a workspace, isolated, and read back what each test did."""

import contextlib
import ctypes
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast, get_type_hints

from grader import kept
from grader.harness import boundary
from grader.harness.cputime import WALL_FACTOR
from grader.harness.protocol import json_kinds
from grader.harness.record import Collected, CollectedTest, Finished, ReportRecord

OUTCOMES = ("passed", "failed", "skipped")
NORMAL_EXITS = (0, 1)  # pytest: all passed, some failed


# A grading's processes compute on one thread each, unless the grader's environment says otherwise (the worker
# on as many as the test process: grader/harness/sandbox.py PASSED_ENV). A grading is judged by CPU time and runs
# on a core or less, where the numerics libraries' idle threads only spin (OpenMP's and OpenBLAS's waits took 7%
# of a grading's CPU on 2 cores), and a batch runs gradings side by side.
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
GRADESCOPE_TIMEOUT = 600.0  # Gradescope's default: the container is killed then, with no results.json
MARGIN = 60.0  # for what comes before and after the run: the interpreter's start, teardown, writing the results
SHARE_MARGIN = 15.0  # of the run's seconds, not shared among the problems: pytest's start, a last test's overrun


@dataclass(frozen=True)
class Limits:
    """The limits of one grading. A test's and a call's limits are seconds of the worker's own CPU time (its
    whole process tree: grader/harness/client.py), each with a wall-clock backstop WALL_FACTOR times larger; the
    submission's is wall-clock time, the run stopped there and what was graded kept."""

    submission_seconds: float = GRADESCOPE_TIMEOUT - MARGIN  # the whole run
    test_seconds: float = 60.0  # the calls of one test together (the backstop: pytest-timeout)
    call_seconds: float = 10.0  # one call into the code under test
    worker_memory_mb: int = 3072  # address space of the worker (torch alone maps ~0.6 GiB)
    test_memory_mb: int = 4096  # address space of the test process (a full grading peaks at ~1 GiB)
    fingerprint_seconds: float = 120.0  # the second run, on compare's inputs, of the problems failed


@dataclass
class RunResult:
    collected: list[CollectedTest] = field(default_factory=list)
    records: dict[str, ReportRecord] = field(default_factory=dict)
    seconds: float = 0.0
    timed_out: bool = False
    exit_code: int | None = None
    log: str = ""
    report_faults: list[str] = field(default_factory=list)  # why the report cannot be trusted; empty when it can
    evidence: list[str] = field(default_factory=list)  # what the worker's guard reported, "[test] what"
    ran_out: dict[str, str] = field(default_factory=dict)  # what ran out of time (client.Worker.timed_out): how


def run_tests(workspace: Path, limits: Limits, *, markers: str | None = None, profile: str = "grade",
              sandbox: Path | None = None, seed: int | None = None, seconds: float | None = None,
              cpu_share=None, on_problem=None) -> RunResult:
    """pytest on the workspace's official tests against its `assignment/`, in isolated mode (in the sandbox
    that `sandbox`, a grader.harness.sandbox spec file, describes), every generated test seeded from `seed` (None:
    the profile's fixed inputs), for at most `seconds` (default: the submission's limit): then every process
    of the run is killed and the report read as it is. With `cpu_share` (grader/batch/cpushare.py) the run and its
    worker get that share of the CPUs. With `on_problem`, it is called as `on_problem(problem, collected,
    records)` once every test of a problem has finished (`Progress`), while the run goes on. The report is
    written into the workspace, which the code under test can neither read nor write when it is sandboxed."""
    report = workspace / "report.jsonl"
    options = [*(f"-p{plugin}" for plugin in PLUGINS),
               "--impl", "assignment", "--isolated", f"--hypothesis-profile={profile}", f"--report={report}",
               "-q", "--tb=no", "--no-header", "-p", "no:cacheprovider", "-p", "no:logging",
               "-p", "no:unraisableexception", "--assert=plain",
               f"--timeout={WALL_FACTOR * limits.test_seconds:g}", f"--test-cpu-timeout={limits.test_seconds:g}",
               f"--call-timeout={limits.call_seconds:g}", f"--worker-memory-mb={limits.worker_memory_mb}",
               f"--test-memory-mb={limits.test_memory_mb}"]
    if sandbox:
        options.append(f"--sandbox={sandbox}")
    if seed is not None:
        options.append(f"--grading-seed={seed}")
    run_seconds = limits.submission_seconds if seconds is None else max(seconds, 1)
    # each problem's share of the run (grader/harness/time_limit.py), ending before the run is stopped
    options.append(f"--run-seconds={max(run_seconds - SHARE_MARGIN, 1):g}")
    if markers:
        options += ["-m", markers]
    env = ONE_THREAD | {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "HYPOTHESIS", "RA_GRADING"))}
    # the options travel in the environment, which only this user can read, not on the command line
    env.update(PYTHONPATH=boundary.python_path(workspace), PYTHONDONTWRITEBYTECODE="1",
               PYTEST_ADDOPTS=shlex.join(options), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    env.update(hypothesis_storage())
    result = RunResult()
    start = time.monotonic()
    deadline = start + run_seconds
    progress = Progress(report, on_problem) if on_problem else None
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen([sys.executable, "-m", "pytest", "tests"], cwd=workspace, env=env,
                                   stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
                                   preexec_fn=die_with_parent(os.getpid()))
        try:
            if cpu_share is not None:
                cpu_share.add(process.pid)  # before pytest starts the worker, which inherits it
            while process.poll() is None:
                if time.monotonic() >= deadline:
                    kill_tree(process.pid)
                    process.wait()
                    result.timed_out = True
                    break
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=min(PROGRESS_SECONDS, max(deadline - time.monotonic(), 0.01)))
                if progress:
                    progress.read()
        finally:  # the grader interrupted (Ctrl-C): pytest, in a session of its own, must not outlive it
            if process.poll() is None:
                kill_tree(process.pid)
                process.wait()
        result.seconds = time.monotonic() - start
        result.exit_code = process.returncode
        output.seek(max(0, output.seek(0, os.SEEK_END) - LOG_BYTES))
        result.log = output.read().decode(errors="replace")[-LOG_BYTES:]
    read_report(report, result)
    return result


# --assert=plain: the official asserts carry the course's message (tests/meta/test_consistency.py), which is all a
# failure shows (plugin.py cuts pytest's explanation after it); rewriting every test module's asserts at each start
# took 0.35 s of CPU. no:logging: no test logs, and capturing the logs of each phase of each test took 0.2 s.
# no:unraisableexception: it turns an exception no one could catch (in a finalizer) into a warning no grade reads, and
# collects the garbage five times over as the run ends to find the last ones (0.16 s).
# (Those figures, and the next, are CPU seconds of one test process, profiled in 2026-12 on torch 2.13.)
# The plugins the run needs, loaded by name (PYTEST_DISABLE_PLUGIN_AUTOLOAD): pytest rewrites the assertions of
# every module of a distribution that declares a plugin, so that each start parsed and compiled all of hypothesis
# and jaxtyping again (about 90 modules, their bytecode unused: 0.5 s of a test process's 2 s start).
PLUGINS = ("_hypothesis_pytestplugin", "pytest_timeout")
PROGRESS_SECONDS = 0.5  # how often the report is read for progress while the run goes on
LOG_BYTES = 20_000  # the end of pytest's output kept for the operator


def hypothesis_storage() -> dict[str, str]:
    """Where a grading's test process lets hypothesis keep what it computes once for any run, its tables of Unicode
    (1.5 s of CPU in every grading's fresh workspace): the grader's own folder (grader/kept.py). Nothing of a
    grading is kept there: every grading profile has no example database (grader/profiles.py)."""
    folder = kept.private_folder("hypothesis")
    return {"HYPOTHESIS_STORAGE_DIRECTORY": str(folder)} if folder else {}


class Progress:
    """The report read as the run writes it (grader/harness/report.py flushes a line per finished test):
    `on_problem(problem, collected, records)` is called once, as soon as every collected test of that problem
    has its record. For showing progress only: `read_report` alone decides what the run's results are."""

    def __init__(self, report: Path, on_problem):
        self.report, self.on_problem = report, on_problem
        self.offset, self.partial = 0, b""
        self.collected: dict[str, list[dict]] = {}
        self.records: dict[str, dict[str, dict]] = {}
        self.shown: set[str] = set()

    def read(self) -> None:
        try:
            with open(self.report, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return
        self.offset += len(data)
        *lines, self.partial = (self.partial + data).split(b"\n")
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if not isinstance(record, dict):
                continue
            if isinstance(record.get("collected"), list):
                for test in filter(lambda c: isinstance(c, dict) and c.get("problem"), record["collected"]):
                    self.collected.setdefault(test["problem"], []).append(test)
            elif record.get("problem") in self.collected:
                self.records.setdefault(record["problem"], {})[str(record.get("nodeid"))] = record
        for problem, tests in self.collected.items():
            records = self.records.get(problem, {})
            if problem not in self.shown and all(t.get("nodeid") in records for t in tests):
                self.shown.add(problem)
                self.on_problem(problem, tests, records)


def die_with_parent(parent: int):
    """For Popen's preexec_fn: the child is SIGKILLed by the kernel when the thread that started it ends, so
    that a grader killed outright (SIGKILL, a Dask worker lost) leaves no pytest grading on; pytest's workers
    die with it (bwrap's --die-with-parent, or setpriv's --pdeathsig under the user layer alone). `parent`:
    the starter's pid, read before the fork: had it died already, the child exits at once."""
    prctl = _LIBC.prctl

    def child() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return child


PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)


def kill_tree(root: int, *, spare_root: bool = False) -> None:
    """SIGKILL `root` and every process below it (the worker is in a session of its own): first all stopped,
    until a search finds no new one (a stopped process starts nothing more), then all killed. `spare_root`:
    `root` itself is left alone (a grader clearing up below itself)."""
    spared = {root} if spare_root else set()
    stopped = set(spared)
    while found := _descendants(root) - stopped:
        for pid in found:
            _signal(pid, signal.SIGSTOP)
        stopped |= found
    for pid in stopped - spared:
        _signal(pid, signal.SIGKILL)


def _descendants(root: int) -> set[int]:
    """`root` and the live processes below it."""
    children: dict[int, list[int]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        children.setdefault(int(stat[stat.rfind(")") + 2:].split()[1]), []).append(int(entry))
    tree: set[int] = set()
    todo = [root]
    while todo:
        pid = todo.pop()
        if pid not in tree:
            tree.add(pid)
            todo += children.get(pid, [])
    return tree


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def read_report(report: Path, result: RunResult) -> None:
    """Fill `result` from the report, and list in `result.report_faults` everything that makes it inconsistent:
    a report that is not exactly one `collected` line, then at most one record per collected test, then
    (unless the run was cut at the time limit) the `finished` line of a normal pytest exit."""
    faults = result.report_faults
    if not result.timed_out and result.exit_code not in NORMAL_EXITS:
        faults.append(f"pytest exited with code {result.exit_code}")
    lines = report.read_text(encoding="utf-8", errors="replace").splitlines() if report.exists() else []
    finished: int | None = None
    collected_ids: set[str] = set()
    for number, line in enumerate(lines, start=1):
        try:
            record = json.loads(line)
        except ValueError:
            faults.append(f"report line {number} is not JSON")
            continue
        if not isinstance(record, dict):
            faults.append(f"report line {number} is not a record")
        elif finished is not None:
            faults.append(f"report line {number} comes after the run finished")
        elif "collected" in record:
            why = malformed(record, Collected) or next(
                (f"a test {why}" for test in record["collected"] if (why := malformed(test, CollectedTest))), None)
            if number != 1 or why:
                faults.append(f"report line {number}: a second, misplaced or malformed list of collected tests"
                              + (f" ({why})" if why else ""))
            else:
                result.collected = cast(Collected, record)["collected"]
                collected_ids = {test["nodeid"] for test in result.collected}
        elif "finished" in record:
            if why := malformed(record, Finished):
                faults.append(f"report line {number}: a malformed end of the run ({why})")
                continue
            finished = cast(Finished, record)["finished"]
        elif record.get("outcome") == "error":
            faults.append(f"the official tests did not load: {record.get('nodeid')}: {record.get('message')}")
        else:
            _check_record(record, number, result, collected_ids)
    if not lines:
        faults.append("the run left no report")
    elif finished is None and not result.timed_out:
        faults.append("the report ends before the run finished")
    elif finished is not None and finished not in NORMAL_EXITS:
        faults.append(f"pytest finished with status {finished}")


def malformed(record: object, kind: Any = ReportRecord) -> str | None:
    """What in a report's line does not fit its type `kind` (a TypedDict of record.py: not an object, a field
    missing, unknown, or of another type), or None."""
    if not isinstance(record, dict):
        return f"a {type(record).__name__}, not an object"
    hints = get_type_hints(kind)
    missing = [name for name in hints if name in kind.__required_keys__ and name not in record]
    if missing:
        return f"no {missing[0]}"
    for name, value in record.items():
        if name not in hints:
            return f"an unknown field {name!r}"
        kinds = json_kinds(hints[name])
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):  # true is no count
            return f"{name} is a {type(value).__name__}"
    return None


def _check_record(record: dict, number: int, result: RunResult, collected_ids: set) -> None:
    nodeid = record.get("nodeid")
    if nodeid not in collected_ids:
        result.report_faults.append(f"report line {number}: a record for {nodeid!r}, which was not collected")
    elif nodeid in result.records:
        result.report_faults.append(f"report line {number}: a second record for {nodeid!r}")
    elif record.get("outcome") not in OUTCOMES or (why := malformed(record)):
        result.report_faults.append(f"report line {number}: a malformed record for {nodeid!r}"
                                    + (f" ({why})" if record.get("outcome") in OUTCOMES else ""))
    else:
        result.records[str(nodeid)] = cast(ReportRecord, record)  # malformed() found it one
        result.ran_out.update({k: v for k, v in record.get("ran_out", {}).items()
                               if isinstance(k, str) and isinstance(v, str)})
        name = str(nodeid).split("::", 1)[-1]
        seen = {line.split("] ", 1)[-1] for line in result.evidence}
        result.evidence += [f"[{name}] {text}" for text in map(str, record.get("evidence", [])) if text not in seen]
