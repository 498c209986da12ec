"""The meta-tests' subprocesses, limited by the CPU they use and ended with everything they started.

`run(command, cpu_seconds=...)` is `subprocess.run` for a command that starts processes of its own (a grading, the
catalogue's shards): it runs in a session of its own with a temporary folder of its own (TMPDIR), its limit is
CPU seconds of its whole tree as the kernel counts them (a cgroup where this process may make one, else /proc),
with a wall-clock backstop WALL_FACTOR times longer for a tree that waits without computing; at either, and
if this process is interrupted, the whole process group and every process below the command are killed and the
folder removed. A busy machine slows the command, never fails it: only the CPU it used decides.

`stop_group(pgid)` asks a process group to stop (SIGTERM, so that what it holds is released: a Dask nanny's
worker and its semaphores) and kills what is left of it.

A meta-test's own time limit (pytest-timeout's `timeout`: its mark's, else pyproject's) is CPU seconds of the test's
process tree too (`set_cpu_timer`, tests/meta/conftest.py), with the same backstop; at either, every process the
test started is killed, and the process groups they lead.
"""

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from grader.harness.cgroups import CpuAccount
from grader.harness.cputime import CpuClock
from grader.runner import _descendants, kill_tree

WALL_FACTOR = 10  # a backstop far beyond any run's cost: 10 wall seconds for each CPU second allowed
POLL_SECONDS = 0.5


class CpuTimeout(subprocess.TimeoutExpired):
    """The command's tree used its CPU seconds (or, waiting, its wall-clock backstop)."""

    def __init__(self, command, cpu_seconds: float, used: float, why: str, output=None, stderr=None):
        super().__init__(command, cpu_seconds, output, stderr)
        self.used, self.why = used, why

    def __str__(self) -> str:
        return f"{self.cmd!r} was stopped after {self.used:.0f} CPU-seconds of its whole tree: {self.why}"


def run(command: list[str], *, cpu_seconds: float, input: bytes | str | None = None, capture_output: bool = False,
        check: bool = False, env: dict | None = None, **popen) -> subprocess.CompletedProcess:
    """`subprocess.run(command, ...)`, limited by `cpu_seconds` of its whole tree (and a wall-clock backstop
    WALL_FACTOR times longer) instead of a `timeout`: past it the whole tree is killed and CpuTimeout raised."""
    if capture_output:
        popen.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if input is not None:
        popen["stdin"] = subprocess.PIPE
    scratch = Path(tempfile.mkdtemp(prefix="ra-meta-run-"))
    account = CpuAccount()
    env = {**(os.environ if env is None else env), "TMPDIR": str(scratch)}
    process = subprocess.Popen(command, env=env, start_new_session=True, preexec_fn=account.join, **popen)
    clock = None if account.kind else CpuClock(process.pid)
    try:
        backstop = time.monotonic() + WALL_FACTOR * cpu_seconds
        pending = input
        while True:
            try:
                output, errors = process.communicate(pending, timeout=POLL_SECONDS)
                break
            except subprocess.TimeoutExpired:
                pending = None  # communicate() keeps what it has not sent yet
            used = account.seconds() if account.kind else clock.read(full=True)
            if used > cpu_seconds or time.monotonic() > backstop:
                why = (f"past its limit of {cpu_seconds:g}" if used > cpu_seconds else
                       f"still running {WALL_FACTOR * cpu_seconds:g} s of wall-clock time after it started")
                end_tree(process)
                output, errors = process.communicate()
                raise CpuTimeout(command, cpu_seconds, used, why, output, errors)
    finally:
        end_tree(process)
        if clock is not None:
            clock.close()
        account.close()
        shutil.rmtree(scratch, ignore_errors=True)
    if check and process.returncode:
        raise subprocess.CalledProcessError(process.returncode, command, output, errors)
    return subprocess.CompletedProcess(command, process.returncode, output, errors)


def end_tree(process: subprocess.Popen) -> None:
    """Kill `process` (the leader of its own session), its process group and every process below it, then reap it."""
    if process.poll() is None or group_members(process.pid):
        kill_tree(process.pid)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def end_below(root: int) -> None:
    """Kill every process below `root`, and the process groups they lead (their members that left the tree too)."""
    below = running_below(root)
    kill_tree(root, spare_root=True)
    for pid in below:
        for member in group_members(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(member, signal.SIGKILL)


def running_below(root: int) -> set[int]:
    """The processes below `root` that still run (a zombie, exited and not yet reaped, runs nothing)."""
    return {pid for pid in _descendants(root) - {root} if _state(pid) not in ("Z", None)}


def _state(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2:].split()[0]


def group_members(pgid: int) -> set[int]:
    """The live processes of the process group `pgid` (those reparented to init included)."""
    members = set()
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.add(int(entry))
    return members


def stop_group(pgid: int, grace_cpu_seconds: float = 5.0) -> None:
    """SIGTERM to the process group `pgid`, then SIGKILL to what is left of it once it has used
    `grace_cpu_seconds` of CPU stopping, or WALL_FACTOR times that of wall-clock time has passed."""
    members = group_members(pgid)
    clocks = {pid: CpuClock(pid) for pid in members}
    try:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGTERM)
        start = {pid: clock.read() for pid, clock in clocks.items()}
        backstop = time.monotonic() + WALL_FACTOR * grace_cpu_seconds
        while group_members(pgid) and time.monotonic() < backstop:
            if sum(clock.read() - start[pid] for pid, clock in clocks.items()) > grace_cpu_seconds:
                break
            time.sleep(0.05)
    finally:
        for clock in clocks.values():
            clock.close()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def set_cpu_timer(item, seconds: float) -> None:
    """Fail the test `item` (pytest's way: an exception raised in the main thread, as pytest-timeout's signal method
    does) once this process and those below it have used `seconds` of CPU since now, or WALL_FACTOR times that of
    wall-clock time has passed; `item.cancel_timeout()` stops the watch."""
    clock, stop = CpuClock(os.getpid()), threading.Event()
    start, backstop, main = clock.read(full=True), time.monotonic() + WALL_FACTOR * seconds, threading.get_ident()
    why = []

    def expire(signum, frame):
        __tracebackhide__ = True
        end_below(os.getpid())  # what the test started ends with it, not left to run on
        pytest.fail(f"this meta-test stopped: {why[0]}", pytrace=False)

    def watch() -> None:
        while not stop.wait(POLL_SECONDS * 2):
            used = clock.read(full=True) - start
            if used > seconds or time.monotonic() > backstop:
                why.append(f"its process tree used {used:.0f} of its {seconds:g} CPU-seconds" if used > seconds else
                           f"{WALL_FACTOR * seconds:g} s of wall-clock time passed (it used {used:.0f} CPU-seconds)")
                signal.pthread_kill(main, signal.SIGALRM)
                return

    def cancel() -> None:
        stop.set()
        thread.join()
        clock.close()
        signal.signal(signal.SIGALRM, signal.SIG_DFL)

    signal.signal(signal.SIGALRM, expire)
    item.cancel_timeout = cancel
    thread = threading.Thread(target=watch, name=f"cpu timer {item.nodeid}", daemon=True)
    thread.start()
