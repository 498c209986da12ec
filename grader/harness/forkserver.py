"""One interpreter with torch imported, forked for each problem's worker (both sides: the server runs in the
sandbox, `ForkServer` in the test process).

A worker's start is mostly `import torch` (about 1.2 s of a grading's CPU, eleven times). A group of problems
whose workers may import the same things and see the same files shares a server instead (grader/harness/client.py
FORK_GROUPS): the problems whose oracles have no module, and the problems graded in one world (grader/registry.py
SHARED_WORLD), whose server has the oracles of all of them absent, stubs and files alike. A server is a worker
process, started like any other in the grading's sandbox, that imports torch,
the shape checks and the scenarios, then forks a worker for each of its problems in turn.
Each fork goes on as a fresh worker would from there (grader/harness/worker.py): the kernel's filter, the guard,
the code under test. So no code under test ever runs in the server, and each problem's code starts from the
same clean copy of it: nothing one problem's code did reaches the next.

What the server's children must not do, and why they cannot:
- write into the server or take its channel (`/proc/<server>/mem`, `/proc/<server>/fd`): the server is not
  dumpable, so the kernel refuses another process of its uid both; the children close the channel at once
  and are refused new processes and tracing by the kernel's filter, which a child must hold (it exits if it
  cannot install it, and the test process then starts that problem's worker the usual way);
- outlive their problem: a child cannot start a process, so killing it ends everything of its problem;
- stop the grading by killing the server: the test process then starts each later worker the usual way.

The channel is a SOCK_SEQPACKET socket on the server's stdin. The test process sends {"problem": id} with the
child's three pipe ends (its stdin, stdout and stderr); the server forks, answers {"pid": the child's pid in
the server's pid namespace}, waits for the child, and answers {"exit": its exit code}.
"""

import ctypes
import json
import os
import select
import signal
import socket
import struct
import time
from pathlib import Path

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
MESSAGE_BYTES = 4096
REPLY_SECONDS = 30.0  # the server answers at once; a server that does not is treated as gone


def _prctl(option: int, value: int, argument: int = 0) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, argument, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}, {value})")


# -- the server, in the sandbox --------------------------------------------------------------------------

def serve(control: socket.socket, forkable: list[str], prepare=None, worker_uid: int | None = None) -> str:
    """Fork a worker for each request on `control` and wait for it; return, in the child only, the problem the
    child serves (its stdin, stdout and stderr are then the pipes the test process sent). `prepare(problem)`, in
    the server before each fork, may import what that problem's worker needs. With `worker_uid` (the grader is
    root: the server runs as a uid of its own, grader/harness/sandbox.py) each child becomes that uid and drops
    every capability before anything else (`become`). Exits when the test process closes the channel."""
    _prctl(PR_SET_DUMPABLE, 0)
    server = os.getpid()
    _send(control, {"event": "ready", "pid": server})
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, MESSAGE_BYTES, 3)
        except OSError:
            os._exit(0)
        if not message:
            os._exit(0)
        problem = json.loads(message).get("problem")
        if problem not in forkable or len(fds) != 3:
            for fd in fds:
                os.close(fd)
            _send(control, {"error": f"not a problem this server forks: {problem!r}"})
            continue
        if prepare is not None:
            prepare(problem)
        child = os.fork()
        if child == 0:
            control.close()
            if worker_uid is not None:
                become(worker_uid)  # first: a change of uid clears the death signal and the dumpable flag
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != server:
                os._exit(1)
            _prctl(PR_SET_DUMPABLE, 1)  # as any worker: the server's protection is the server's alone
            os.setsid()
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
                os.close(fd)
            return problem
        for fd in fds:
            os.close(fd)
        _send(control, {"pid": child})
        _, status = os.waitpid(child, 0)
        _send(control, {"exit": os.waitstatus_to_exitcode(status)})


PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
CAPABILITY_VERSION_3 = 0x20080522
NOT_BECOME = 76  # a child that could not become the workers' uid exits with this (the test process then starts
# each worker on its own)


def become(uid: int) -> None:
    """In a child of the server: the workers' `uid` and gid, no groups, no capability left (the server holds
    CAP_SETUID and CAP_SETGID for this alone); exits where any of it did not hold."""
    try:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        libc = ctypes.CDLL(None, use_errno=True)
        _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
        header = ctypes.create_string_buffer(struct.pack("Ii", CAPABILITY_VERSION_3, 0))
        if libc.capset(header, ctypes.create_string_buffer(24)) != 0:
            raise OSError(ctypes.get_errno(), "capset")
        fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
        if any(int(fields[f].strip(), 16) for f in ("CapPrm", "CapEff", "CapAmb")) or os.getresuid() != (uid,) * 3:
            raise OSError("capabilities or uids left")
    except OSError:
        os._exit(NOT_BECOME)


def _send(control: socket.socket, message: dict) -> None:
    try:
        control.send(json.dumps(message).encode())
    except OSError:
        os._exit(0)


# -- the test process's side -----------------------------------------------------------------------------


def end_group(process) -> None:
    """Kill `process` (a Popen that leads a process group of its own) and its group where it still runs, and reap it."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()


class ServerGone(RuntimeError):
    """The fork server is not there (it failed to start, was killed, or refused): start a worker the usual way."""


def _ns_pids(pid: int) -> list[int]:
    """The pids of `pid` in its namespaces, outermost first (/proc/<pid>/status's NSpid)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return [int(p) for p in line.split()[1:]]
    except (OSError, ValueError):
        pass
    return []


def _children(pid: int) -> list[int]:
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if int(stat[stat.rfind(")") + 2:].split()[1]) == pid:
            found.append(int(entry))
    return found


def find_host_pid(ancestor: int, inner_pid: int) -> int | None:
    """The pid, in this process's namespace, of the process below `ancestor` whose pid in its own pid namespace
    is `inner_pid`."""
    todo = [ancestor]
    while todo:
        pid = todo.pop()
        if (_ns_pids(pid) or [None])[-1] == inner_pid:
            return pid
        todo += _children(pid)
    return None


class ForkedProcess:
    """A worker forked by the server, with the parts of `subprocess.Popen` that client.Worker uses."""

    def __init__(self, server: "ForkServer", pid: int, stdin, stdout, stderr):
        self.server, self.pid = server, pid
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self.server.control], [], [], 0)[0]:
            self.returncode = self.server.exit_code()
        return self.returncode

    def wait(self) -> int:
        if self.returncode is None:
            self.returncode = self.server.exit_code()
        return self.returncode


class ForkServer:
    """The test process's handle on one fork server for `problems`: made with a function that starts the
    server's process, its stdin being the given socket; then `fork(problem)` for each of their workers. No wait
    for a reply goes past `deadline` (a time of time.monotonic(): the grading's, where it has one)."""

    def __init__(self, start_process, problems: list[str], deadline: float | None = None):
        self.problems, self.deadline = problems, deadline
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.process = start_process(theirs)
        finally:
            theirs.close()
        self.host_pid: int | None = None

    def ready(self, seconds: float) -> None:
        reply = self._reply(seconds)
        inner = reply.get("pid")
        self.host_pid = find_host_pid(self.process.pid, inner) if isinstance(inner, int) else None
        if reply.get("event") != "ready" or self.host_pid is None:
            raise ServerGone(f"the fork server did not start: {reply}")

    def _reply(self, seconds: float = REPLY_SECONDS) -> dict:
        if self.deadline is not None:
            seconds = max(0.0, min(seconds, self.deadline - time.monotonic()))
        if not select.select([self.control], [], [], seconds)[0]:
            raise ServerGone("the fork server did not answer")
        try:
            data = self.control.recv(MESSAGE_BYTES)
            reply = json.loads(data) if data else None
        except (OSError, ValueError):
            reply = None
        if not isinstance(reply, dict):
            raise ServerGone("the fork server is gone")
        return reply

    def fork(self, problem: str) -> ForkedProcess:
        """A new worker for `problem`, forked from the server, with pipes of its own."""
        pipes = [os.pipe() for _ in range(3)]
        theirs = [pipes[0][0], pipes[1][1], pipes[2][1]]
        try:
            socket.send_fds(self.control, [json.dumps({"problem": problem}).encode()], theirs)
            reply = self._reply()
        except OSError as exc:
            for read, write in pipes:
                os.close(read), os.close(write)
            raise ServerGone(f"the fork server is gone ({exc})") from None
        except ServerGone:
            for read, write in pipes:
                os.close(read), os.close(write)
            raise
        for fd in theirs:
            os.close(fd)
        ours = (os.fdopen(pipes[0][1], "wb"), os.fdopen(pipes[1][0], "rb", buffering=0),
                os.fdopen(pipes[2][0], "rb"))
        host = find_host_pid(self.host_pid, reply["pid"]) if isinstance(reply.get("pid"), int) else None
        if host is None:
            for stream in ours:
                stream.close()
            raise ServerGone(f"the fork server did not fork: {reply}")
        return ForkedProcess(self, host, *ours)

    def alive(self) -> int | None:
        """The server's pid here while it runs, else None."""
        return self.host_pid if self.process.poll() is None and Path(f"/proc/{self.host_pid}").exists() else None

    def exit_code(self) -> int:
        """The exit code of the last child, once the server has reaped it."""
        try:
            reply = self._reply()
        except ServerGone:
            return -signal.SIGKILL
        code = reply.get("exit")
        return code if isinstance(code, int) else -signal.SIGKILL

    def close(self) -> None:
        self.control.close()
        end_group(self.process)
