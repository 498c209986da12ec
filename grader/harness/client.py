"""The test process's side of isolated mode: a worker process that runs the code under test.

`IsolatedPackage` looks like `LocalPackage` (`pkg.flops.matmul_flops(2, 3, 4)`, `pkg.run(scenario, ...)`) but every
call is sent to the worker as data, and every result comes back as data, decoded into fresh objects here. A call
that does not return within its time limit kills the worker (a fresh one starts for the next call), and the
function of the code under test it was stuck in (the innermost whose one call lasted through most of it, as the
worker said while it ran: grader/harness/running.py; else the function or scenario called, with the names it was
given: `documented.raised('tensors', 'view_result')`) is not called again in this run: the test's calls of it fail
at once, and in every later worker it raises at once wherever it is called from, its callers failing with its
message as they would if it were left unfinished. So an infinite loop costs one call's time limit per run, wherever
it is, not the time limit of every call that reaches it. A worker that dies while importing a module marks that
module broken, so later calls into it fail at once instead of restarting the worker again and again.

Time limits judge the code under test, not the machine: a call may use `call_timeout` seconds of the worker's
own CPU time (its whole process tree, read from /proc: grader/harness/cputime.py), and all the calls of one test
`test_cpu_seconds` together; a wall-clock backstop of WALL_FACTOR times the call's limit catches sleeps and
deadlocks, and time the worker spent runnable but waiting for a CPU moves it on (`_Limit`). So a slow or shared
CPU never costs a correct submission a point, and a starved call is never said to have waited or slept. The
worker volunteers for the kernel's OOM killer (oom_score_adj 1000, set before it runs any code), so that under a
container's memory limit the kernel kills it, not the test process; a worker killed that way is reported in words.
"""

import builtins
import collections
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

from grader.harness import absent, boundary, codec
from grader.harness.cputime import WALL_FACTOR, CpuClock, memory_allowance_mb
from grader.harness.forkserver import ForkedProcess, ForkServer, ServerGone, end_group
from grader.harness.protocol import (
    HEADER,
    MAX_MESSAGE,
    WORKER_NOTE,
    Event,
    ProtocolError,
    RemoteError,
    Reply,
    Request,
    frame,
    framed,
    parse,
)
from grader.harness.running import TOP_LEVEL
from grader.registry import IMPORTED_AHEAD, ORACLES, PROBLEM_MODULES, PROBLEMS, SHARED_WORLD, graded_with

MAX_EVIDENCE = 100  # reports kept per test
POLL_SECONDS = 0.25  # the longest wait between two readings of the worker's CPU clock near its limit
CPUS = os.cpu_count() or 1  # asked once: os.cpu_count() reads a file of /sys at each call
OOM_SCORE_ADJ = b"1000"  # the kernel's first choice when memory runs out
KILLED = (-signal.SIGKILL, 128 + signal.SIGKILL)  # SIGKILL, seen directly or through bwrap's exit status
# the problems whose workers a fork server serves (grader/harness/forkserver.py), a server for each group in turn:
# those whose oracles have no module, then those graded in one world (grader/registry.py SHARED_WORLD); in each,
# those for which the server imports modules ahead (grader/registry.py IMPORTED_AHEAD) last, so that it imports them
# only then (worker.import_ahead)
FORK_GROUPS = [sorted(group, key=lambda problem: problem in IMPORTED_AHEAD) for group in (
    [p.id for p in PROBLEMS if not absent.modules_of(ORACLES.get(p.id, ()))], list(SHARED_WORLD))]


def fork_group(problem: str | None) -> list[str]:
    """The problems whose workers are forked from the same server as `problem`'s; none where it has its own."""
    return next((group for group in FORK_GROUPS if problem in group), [])


def volunteer_for_oom() -> None:
    """In the worker's process before it starts (Popen's preexec_fn): the kernel kills it first when memory
    runs out. Set by a process with CAP_SYS_RESOURCE (a root grader) it is also the floor: the worker, its
    privileges dropped, cannot lower it again."""
    try:
        with open("/proc/self/oom_score_adj", "wb") as f:
            f.write(OOM_SCORE_ADJ)
    except OSError:
        pass


class _Limit:
    """The time one wait on the worker may take: `cpu` seconds of the worker's CPU time, or `wall` seconds of
    wall-clock time spent otherwise than waiting for a CPU, whichever runs out first. The CPU time counts from the
    clock's last reading (the end of the request before, or the worker's start), so what the worker used between
    two requests counts against the next. The clock is read in full only when a wait has lasted as long as the
    tree could have used its CPU time on every core, so a call that returns at once costs one quick reading.

    The wall-clock backstop is for a worker that waits without computing (a sleep, a deadlock): a worker that was
    runnable but starved (a busy machine, a CPU quota: its run-queue wait, cputime.CpuClock.waited) gets that time
    added to its backstop, never to its CPU time. No wait goes past `deadline` (a time of time.monotonic(), the
    whole grading's, where the worker has one)."""

    def __init__(self, clock: CpuClock | None, cpu: float, wall: float, deadline: float | None = None):
        self.clock, self.cpu_limit, self.wall, self.deadline = clock, cpu, wall, deadline
        self.cpu_start = clock.highest if clock else 0.0
        self.start = now = time.monotonic()
        self.wall_deadline = now + wall if deadline is None else min(now + wall, deadline)
        self.next_check = now + self._slice(cpu)
        self.waited_start: float | None = None  # the tree's run-queue wait at the first full reading
        self.starved = 0.0  # seconds of run-queue wait added to the backstop

    def cpu_used(self, full: bool = False) -> float:
        return self.clock.read(full) - self.cpu_start if self.clock else 0.0

    @property
    def at_deadline(self) -> bool:
        """Whether the wait ended at the grading's deadline rather than at a limit of its own."""
        return self.deadline is not None and self.wall_deadline >= self.deadline

    @staticmethod
    def _slice(cpu_left: float) -> float:
        # the tree cannot use more CPU time than the machine has cores in that time
        return min(max(cpu_left / CPUS, POLL_SECONDS / 10), POLL_SECONDS * 4)

    def next_wait(self) -> float:
        """Seconds to wait before looking again; 0 when the limit is reached."""
        now = time.monotonic()
        if now >= self.wall_deadline and not self._starved_until(now):
            return 0.0
        wall_left = self.wall_deadline - now
        if self.clock is None:
            return wall_left
        if now < self.next_check:
            return min(self.next_check - now, wall_left)
        cpu_left = self.cpu_limit - self.cpu_used(full=True)
        if self.waited_start is None:
            self.waited_start = self.clock.waited()
        if cpu_left <= 0:
            return 0.0
        self.next_check = now + self._slice(cpu_left)
        return min(self.next_check - now, wall_left)

    def _starved_until(self, now: float) -> bool:
        """Move the backstop on by the run-queue wait of the tree since the first full reading; whether it moved
        past `now`. Never past the grading's deadline."""
        if self.clock is None or self.waited_start is None or self.at_deadline:
            return False
        self.starved = max(self.starved, self.clock.waited() - self.waited_start)
        moved = self.start + self.wall + self.starved
        self.wall_deadline = moved if self.deadline is None else min(moved, self.deadline)
        return self.wall_deadline > now


class WorkerTimeout(TimeoutError):
    """The code under test did not return in time."""


class OracleReached(RuntimeError):
    """The code under test ran the oracle it is graded against (the guard's record): its answer is not its own."""


class WorkerDied(RuntimeError):
    """The worker process exited (os._exit, a crash, the memory limit) instead of answering."""


def out_of_memory(limit_mb: int) -> str:
    allowed = memory_allowance_mb(limit_mb)
    return ("your code used more memory than the autograder allows" + (f": {allowed} MiB" if allowed else "")
            + " (the system stopped it)")


def rebuild_exception(error: RemoteError) -> Exception:
    """A fresh exception of the nearest built-in type, carrying the worker's type name and traceback."""
    cls = getattr(builtins, error.builtin, RuntimeError)
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        cls = RuntimeError
    try:
        exc = cls(error.message)
    except Exception:  # built-ins with other constructors (UnicodeError's subclasses)
        exc = RuntimeError(error.message)
    exc.remote_type = error.type
    exc.add_note(f"{WORKER_NOTE} as {error.type}]\n{error.traceback}")
    return exc


class Worker:
    def __init__(self, package: str, root: Path, *, call_timeout: float, start_timeout: float = 120.0,
                 memory_limit_mb: int = 0, output_limit: int = 16_384, sandbox=None, test_cpu_seconds: float = 0,
                 deadline: float | None = None, ran_out: dict[str, str] | None = None):
        self.package, self.root = package, root
        self.deadline = deadline  # time.monotonic() past which nothing waits on the worker or its fork server
        self.sandbox = sandbox  # a grader.harness.sandbox.Spec: the worker starts inside it
        self.call_timeout, self.start_timeout = call_timeout, start_timeout
        self.test_cpu_seconds = test_cpu_seconds  # all the calls of one test together (0: no limit)
        self.test_cpu_used = 0.0
        self.clock: CpuClock | None = None
        self.memory_limit_mb = memory_limit_mb
        self.output = collections.deque(maxlen=output_limit)  # the last bytes the code under test printed
        self.process: subprocess.Popen | None = None
        self.broken_modules: dict[str, str] = {}
        self.current_test = ""
        self.current_problem: str | None = None
        # what ran out of time ("module.function" of the code under test, or what was called) -> how: never called
        # again (`_request`); `ran_out`: what ran out earlier in the same grading (the tests' run, for the fingerprints)
        self.timed_out: dict[str, str] = dict(ran_out or {})
        self.timed_out_in: dict[str, str] = {}  # -> the test in which it ran out (in that test, the same message)
        self.running: tuple[str, int] | None = None  # the worker's last word on where the request is (running.py)
        self.waited_before = 0.0  # run-queue wait of the workers gone since they started (`starved`)
        self.waited_start = 0.0  # the live worker's once it had started
        self.died: dict[tuple[str, str], str] = {}  # (test, call) -> how the worker died in it
        self._requests = 0  # the id of the last request sent
        self.evidence: list[str] = []  # what the worker's guard reported (grader/harness/guard.py), not yet taken
        self.oracle_runs: list[str] = []  # the oracle code the current request ran, as the guard's tripwire saw it
        self.fork_server: ForkServer | None = None  # grader/harness/forkserver.py
        self.forking = True  # until the server fails: then every worker starts on its own

    # -- process management -------------------------------------------------------------------
    def _command(self, forking: list[str] = ()) -> tuple[list[str], dict, Path]:
        """The worker's command, environment and folder (a fork server's, for the problems `forking`)."""
        root = Path(self.sandbox.tree) if self.sandbox else self.root
        command = [sys.executable, "-m", "grader.harness.worker", "--package", self.package, "--root", str(root)]
        if self.memory_limit_mb:
            command += ["--memory-limit-mb", str(self.memory_limit_mb)]
        if forking:
            command += ["--fork-for", ",".join(forking)]
        elif self.current_problem:  # its oracles are absent from the worker (grader/harness/absent.py)
            command += ["--problem", self.current_problem]
        if self.sandbox:
            command = self.sandbox.command(command, forking or list(graded_with(self.current_problem)))
            return command, self.sandbox.env(), Path(self.sandbox.home)
        return command, dict(os.environ, PYTHONPATH=boundary.python_path(root), PYTHONDONTWRITEBYTECODE="1"), root

    def _spawn(self, forking: list[str] = (), stdin=subprocess.PIPE, stderr=subprocess.PIPE) -> subprocess.Popen:
        command, env, cwd = self._command(forking)
        sandbox = self.sandbox

        def prepare() -> None:  # in the worker's process, before it starts
            volunteer_for_oom()
            if sandbox:
                sandbox.join()

        return subprocess.Popen(command, cwd=cwd, env=env, stdin=stdin, stdout=subprocess.PIPE, stderr=stderr,
                                start_new_session=True, preexec_fn=prepare)

    def _fork(self) -> ForkedProcess | None:
        """The worker of the current problem, forked from the fork server of its group (started at the group's
        first problem); None where the problem's worker must start the usual way, or the server is gone."""
        group = fork_group(self.current_problem)
        if self.fork_server is not None and self.fork_server.problems != group:
            self._close_server()  # not held beside another worker: a container's memory limit counts both
        if not group or not self.forking:
            return None
        try:
            if self.fork_server is None:
                self.fork_server = ForkServer(lambda control: self._spawn(group, control, subprocess.DEVNULL), group,
                                              self.deadline)
                self.fork_server.ready(self.start_timeout)
            if self.sandbox:
                self.sandbox.show(group)
            return self.fork_server.fork(self.current_problem)
        except ServerGone as exc:
            self._stop_forking(exc)
            return None

    def _stop_forking(self, why) -> None:
        print(f"grading worker: no more forks, each problem's worker starts on its own ({why})", file=sys.stderr)
        self.forking = False
        self._close_server()

    def _close_server(self) -> None:
        if self.fork_server is not None:
            self.fork_server.close()
            self.fork_server = None
            if self.sandbox:
                self.sandbox.kill_all()

    def _start(self) -> None:
        self.process = self._fork() or self._spawn()
        uid = self.sandbox.uid if self.sandbox and "user" in self.sandbox.layers else None
        if self.clock is not None:  # of a worker that died by itself
            self.clock.close()
        self.clock, self.waited_start = CpuClock(self.process.pid, uid), 0.0
        threading.Thread(target=self._drain, args=(self.process.stderr,), daemon=True).start()
        # the official imports: not the submission's CPU time, and a starved start is not a stuck one
        limit = _Limit(self.clock, float("inf"), self.start_timeout, self.deadline)
        forked = isinstance(self.process, ForkedProcess)
        try:
            message = self._receive(limit, what="the worker to start")
            while self._audit(message):
                message = self._receive(limit, what="the worker to start")
        except WorkerDied as exc:
            if not forked:
                raise
            self._stop_forking(exc)  # a forked worker without the kernel's filter, say: a worker of its own then
            return self._start()
        if message != Event("ready"):
            raise WorkerDied(f"the worker did not start: {message}")
        self.clock.read(full=True)  # the worker's tree, settled: quick readings read these processes only
        self.waited_start = self.clock.waited()
        stopped = {name: self._not_again(name, later=True) for name in self.timed_out if is_function_name(name)}
        if stopped:  # before the code under test is imported: they raise at once wherever they are called from
            self._requests += 1
            self.process.stdin.write(framed(Request("stop_calling", id=self._requests, kwargs=codec.encode(stopped))))
            self.process.stdin.flush()
            message = self._receive(limit, what="the worker to start", request_id=self._requests)
            while self._audit(message):
                message = self._receive(limit, what="the worker to start", request_id=self._requests)
            if not (isinstance(message, Reply) and message.ok):
                raise WorkerDied(f"the worker did not start: {message}")

    def _drain(self, stream) -> None:
        for chunk in iter(lambda: stream.read1(4096), b""):
            self.output.extend(chunk)

    def printed(self) -> str:
        return bytes(self.output).decode(errors="replace")

    def kill(self) -> None:
        """Kill the worker and every process it started, those that left its process group too. A forked worker
        cannot start a process (the kernel's filter, which it must hold): it alone is killed, not its server."""
        forked = isinstance(self.process, ForkedProcess)
        if self.clock is not None:  # while its threads are there to be read
            self.waited_before += max(0.0, self.clock.waited() - self.waited_start)
        if self.process:
            end_group(self.process)
        if self.sandbox and not forked:
            self.sandbox.kill_all(spare=self.fork_server.alive() if self.fork_server else None)
        if self.clock is not None:
            self.clock.close()
            self.clock = None
        self.process = None

    def starved(self) -> float:
        """Seconds the workers of this run have spent runnable, waiting for a CPU, since each had started (the live
        one's read now): time a problem's share of the run does not count (time_limit.py)."""
        live = max(0.0, self.clock.waited() - self.waited_start) if self.clock is not None else 0.0
        return self.waited_before + live

    def close(self) -> None:
        """Kill the worker, and the fork server with it."""
        self.kill()
        self._close_server()

    def _died(self, code: int, how: str) -> WorkerDied:
        """What a student reads when the worker ended with `code`: SIGKILL is the memory limit's doing."""
        if code in KILLED:
            return WorkerDied(out_of_memory(self.memory_limit_mb))
        return WorkerDied(f"the worker {how}")

    def begin_test(self, nodeid: str, problem: str | None) -> None:
        """Each problem's tests get a fresh worker (started, or forked from a server no code under test ran in:
        grader/harness/forkserver.py): nothing one problem's code did at import or run time (a patched torch
        function, a cache, memory it holds) reaches another problem's tests."""
        if problem != self.current_problem:
            self.kill()
            if self.sandbox:
                self.sandbox.clear()
        self.current_test, self.current_problem = nodeid, problem
        self.test_cpu_used = 0.0

    # -- messages -------------------------------------------------------------------------------
    def _read(self, n: int, limit: _Limit, what: str) -> bytes:
        """Exactly `n` bytes from the worker (never more: the next frame stays in the pipe)."""
        fd, chunks = self.process.stdout.fileno(), []
        while n:
            while True:
                wait = limit.next_wait()
                if wait <= 0:
                    self.kill()
                    raise WorkerTimeout(f"timed out waiting for {what}")
                if select.select([fd], [], [], wait)[0]:
                    break
            chunk = os.read(fd, min(n, 1 << 20))
            if not chunk:
                code = self.process.wait()
                self.process = None
                raise self._died(code, f"exited with code {code} while waiting for {what}")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def _receive(self, limit: _Limit, what: str, request_id: int | None = None) -> Reply | Event:
        """The next frame, checked: within the limits, a Reply or an Event, and (for a request) carrying its id."""
        (length,) = HEADER.unpack(self._read(HEADER.size, limit, what))
        try:
            if length > MAX_MESSAGE:
                raise ProtocolError(f"a message of {length} bytes (at most {MAX_MESSAGE})")
            message = frame(parse(self._read(length, limit, what)))
            if request_id is not None and message.id != request_id and not _is_audit(message):
                raise ProtocolError(f"a reply to request {message.id!r} while waiting for {request_id}")
        except ProtocolError as exc:
            self.kill()
            raise WorkerDied(f"the worker broke the protocol while answering {what}: {exc}") from None
        return message

    def _audit(self, message: Reply | Event) -> bool:
        """Keep the guard's evidence (it may come from a thread, between requests: any id goes). A forged
        one can only bring its own submission to a person's attention."""
        if not _is_audit(message):
            return False
        kept = self.oracle_runs if message.oracle is not None else self.evidence
        if len(kept) < MAX_EVIDENCE:
            kept.append(str(message.oracle if message.oracle is not None else message.evidence)[:1000])
        return True

    def _within(self, limit: _Limit, used: float) -> str:
        """What ran out: the CPU time (the code under test computed too long), the grading's time, or the wall clock
        (it waited or slept: time it spent runnable and waiting for a CPU is not counted there)."""
        if limit.clock is None or used >= limit.cpu_limit:
            return f"{self.call_timeout:g} s" + " of CPU time" * (limit.clock is not None)
        if limit.at_deadline:
            return f"the time the grading had left (it used {used:.1f} s of CPU time)"
        starved = f", and {limit.starved:.0f} s more waiting for a CPU" if limit.starved >= 1 else ""
        return (f"{WALL_FACTOR * self.call_timeout:g} s of wall-clock time{starved} (it used {used:.1f} s of CPU "
                "time: it was waiting or sleeping)")

    def _not_again(self, name: str, later: bool = False) -> str:
        """What a call of `name`, which ran out of time, says: in the test where it did (hypothesis replays the
        example), the same as then; in any other (`later`), that it is not called again."""
        if not later and self.timed_out_in.get(name) == self.current_test:
            return self.timed_out[name]
        return f"{self.timed_out[name]} (it ran out of time before: not called again)"

    def _import_timed_out(self, module: str, within: str) -> WorkerTimeout:
        """The module's import ran out of time: it is broken for the rest of the run, and the failure names the line
        of its top level that was running (the grader's "does not import" line: grader/scoring.py import_errors)."""
        line = self.running[1] if self.running and self.running[0] == f"{module}.{TOP_LEVEL}" else None
        where = f'\n  File "{self.package}/{module}.py", line {line}, in {TOP_LEVEL}' if line else ""
        self.broken_modules[module] = f"{self.package}/{module}.py did not finish importing within {within}{where}"
        failure = WorkerTimeout(self.broken_modules[module])
        failure.while_importing = True  # the submission's failure, as an error its import raised (report.py)
        return failure

    def _test_spent(self) -> str:
        return (f"the calls of this test into the code under test used more than {self.test_cpu_seconds:g} s of "
                f"CPU time together (not called again in this test)")

    def take_evidence(self) -> list[str]:
        taken, self.evidence = self.evidence, []
        return taken

    def request(self, message: Request, *, module: str | None, what: str):
        """Send one request and return its decoded value. A timeout or a dead worker is raised from this one
        line, whatever caused it, so that hypothesis sees the same failure when it replays the example."""
        try:
            return self._request(message, module=module, what=what)
        except (WorkerTimeout, WorkerDied) as exc:
            failure = exc
        again = type(failure)(str(failure))  # raised outside the handler: no chained context either
        again.__dict__.update(vars(failure))  # what it says of itself (`while_importing`)
        raise again

    def _request(self, message: Request, *, module: str | None, what: str):
        if module in self.broken_modules:
            raise WorkerDied(self.broken_modules[module])
        key = (self.current_test, what)
        # what ran out of time (a function of the code under test, or a scenario with the names it was given) is
        # not called again in this run: a loop costs what a function left unfinished costs
        if what in self.timed_out:
            raise WorkerTimeout(self._not_again(what))
        if key in self.died:  # hypothesis replays a failing example: the same failure, without another worker
            raise WorkerDied(f"{self.died[key]} (not called again in this test)")
        test_left = self.test_cpu_seconds - self.test_cpu_used if self.test_cpu_seconds else float("inf")
        if test_left <= 0:
            raise WorkerTimeout(self._test_spent())
        if self.process is None:
            self._start()
        importing = None
        self.output.clear()
        self.oracle_runs = []
        self.running = None
        self._requests += 1
        sent = replace(message, id=self._requests, problem=self.current_problem)
        try:
            self.process.stdin.write(framed(sent))
            self.process.stdin.flush()
        except BrokenPipeError:
            code = self.process.wait()
            self.kill()
            # killed between two requests: by the memory limit, while a thread of the code under test ran, say
            raise self._died(code, f"was gone before {what}") from None
        cpu = min(self.call_timeout, test_left)
        limit = _Limit(self.clock, cpu, WALL_FACTOR * self.call_timeout, self.deadline)
        try:
            while True:
                reply = self._receive(limit, what, self._requests)
                if self._audit(reply):
                    continue
                if isinstance(reply, Reply):
                    break
                if reply.event == "importing":
                    importing = reply.module
                elif reply.event == "imported":
                    importing = None
                elif reply.event == "running":
                    self.running = _where(reply)
                else:
                    self.kill()
                    raise WorkerDied(f"the worker broke the protocol while answering {what}: a {reply.event!r} event")
        except WorkerTimeout:
            used = limit.cpu_used()
            self.test_cpu_used += used
            within = self._within(limit, used)
            if importing is not None:
                raise self._import_timed_out(importing, within) from None
            if cpu < self.call_timeout and used >= cpu:
                raise WorkerTimeout(self._test_spent()) from None
            culprit = self.running[0] if self.running and self.running[0].split(".", 1)[1] != TOP_LEVEL else what
            self.timed_out[culprit] = f"{culprit} did not return within {within}"
            self.timed_out_in[culprit] = self.current_test
            raise WorkerTimeout(self.timed_out[culprit]) from None
        except WorkerDied as exc:
            if importing is not None:
                self.broken_modules[importing] = (
                    f"{self.package}/{importing}.py ended the process while being imported ({exc})")
                raise WorkerDied(self.broken_modules[importing]) from None
            self.died[key] = f"{what}: {exc}"
            raise WorkerDied(self.died[key]) from None
        self.test_cpu_used += limit.cpu_used()
        if self.oracle_runs:  # whatever the reply says: the answer is not the code under test's own
            raise self._oracle_reached()
        return self._value(reply, what)

    def _oracle_reached(self) -> "OracleReached":
        """What the guard saw run of the problem's oracles during the request, as the test's failure."""
        names = ORACLES.get(self.current_problem, ())
        labels = {run.partition(" (from ")[0].split(".py:")[0].split(":")[0] for run in self.oracle_runs}
        ran = [n for n in names if n.rsplit(".", 1)[-1] in labels] or list(names)  # dotted names, no paths
        places = sorted({run.partition(" (from ")[2].rstrip(")") for run in self.oracle_runs} - {""})
        where = f", from {', '.join(places[:5])}" if places else ""
        return OracleReached(f"the code under test ran the oracle it is graded against ({', '.join(ran[:3])}"
                             f"{where}): it must work without it")

    def _value(self, reply: Reply, what: str):
        """A reply's decoded value, or the exception the code under test raised, rebuilt (its printed output
        noted), or, where it was a function stopped earlier in the run, the timeout that stopped it."""
        if reply.ok:
            try:
                return codec.decode(reply.value)
            except codec.CodecError as exc:
                self.kill()
                raise WorkerDied(f"the worker broke the protocol while answering {what}: {exc}") from None
        stopped = next((name for name in self.timed_out if reply.error.message == self._not_again(name, later=True)),
                       None)
        if reply.error.builtin == "NotImplementedError" and stopped is not None:  # running.stop_calling's, as if
            # called here (the function the test called, or a scenario, reached it)
            raise WorkerTimeout(self._not_again(stopped))
        exc = rebuild_exception(reply.error)
        printed = self.printed()
        if printed:
            exc.add_note(f"[the code under test printed]\n{printed[-2000:]}")
        raise exc


def _is_audit(message: Reply | Event) -> bool:
    return isinstance(message, Event) and message.event == "audit"


FUNCTION_NAME = re.compile(r"(\w+)\.((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*|<module>)")


def _where(event: Event) -> tuple[str, int] | None:
    """A "running" event's function of a problem module and line (grader/harness/running.py), or None where it names
    none, or nothing of the kind (the worker's word: nothing else is taken from it)."""
    found = FUNCTION_NAME.fullmatch(event.function or "")
    if found is None or found[1] not in PROBLEM_MODULES or len(event.function) > 200:
        return None
    return event.function, event.line if isinstance(event.line, int) and event.line > 0 else 0


def is_function_name(name: str) -> bool:
    """Whether a name of what ran out of time is a function of the code under test ("memory.tensor_bytes"), not a
    scenario ("scenario run_many('tensors', 'view_result')")."""
    found = FUNCTION_NAME.fullmatch(name)
    return found is not None and found[1] in PROBLEM_MODULES and found[2] != TOP_LEVEL


class _RemoteModule:
    def __init__(self, worker: Worker, module: str):
        self._worker, self._module = worker, module

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return _RemoteCallable(self._worker, self._module, name)


class _RemoteCallable:
    def __init__(self, worker: Worker, module: str, name: str):
        self._worker, self._module, self.__name__ = worker, module, name

    def __call__(self, *args, **kwargs):
        message = Request("call", module=self._module, name=self.__name__, args=codec.encode(list(args)),
                          kwargs=codec.encode(kwargs))
        return self._worker.request(message, module=self._module, what=f"{self._module}.{self.__name__}")


class IsolatedPackage:
    """The package under test, living in a worker process."""

    def __init__(self, name: str, root: Path, **worker_options):
        self.name = name
        self.isolated = True
        self.worker = Worker(name, root, **worker_options)
        sandbox = worker_options.get("sandbox")
        self.writable = Path(sandbox.home) if sandbox else None  # where the code under test may write files

    def __getattr__(self, module: str):
        if module not in PROBLEM_MODULES:
            raise AttributeError(f"{self.name} has no problem module {module!r}")
        return _RemoteModule(self.worker, module)

    def __repr__(self) -> str:
        return f"<package under test: {self.name} (isolated)>"

    def run(self, scenario, *args, **kwargs):
        target = f"{scenario.__module__}:{scenario.__qualname__}"
        module = scenario.__module__.rsplit(".", 1)[-1]  # tests.scenarios.flops -> flops
        message = Request("scenario", target=target, args=codec.encode(list(args)), kwargs=codec.encode(kwargs))
        named = ", ".join(repr(arg) for arg in args if isinstance(arg, str))  # what a generic scenario calls
        what = f"scenario {scenario.__qualname__}" + (f"({named})" if named else "")
        return self.worker.request(message, module=module, what=what)

    def close(self) -> None:
        self.worker.close()
