"""Signals and limits past the filter (issue 53): `kill` on the fork server was refused, but `fcntl(F_SETOWN)` with
`F_SETSIG` on a pipe made the worker able to stop and resume it (its state S, T, S), and `prlimit` on the server
worked. Now the filter refuses F_SETOWN toward any process but the worker's own, and prlimit, setpriority and
affinity on another pid (grader/harness/seccomp.py: EPERM); and where the grader is root the fork server runs as a
uid other than its workers', so the kernel refuses them first. The server goes on forking the next problems'
workers, whose grades the corpus checks.
"""
import fcntl as _fcntl
import os as _os
import signal as _signal


def _try(action):
    try:
        action()
        return "done"
    except OSError as exc:
        return f"errno {exc.errno}"


_server = _os.getppid()
_read, _write = _os.pipe()
_levers = {
    "owner": _try(lambda: _fcntl.fcntl(_read, _fcntl.F_SETOWN, _server)),
    "signal": _try(lambda: _fcntl.fcntl(_read, 10, _signal.SIGSTOP)),  # F_SETSIG
    "async": _try(lambda: _fcntl.fcntl(_read, _fcntl.F_SETFL, _os.O_ASYNC | _os.O_NONBLOCK)),
    "priority": _try(lambda: _os.setpriority(_os.PRIO_PROCESS, _server, 19)),
    "affinity": _try(lambda: _os.sched_setaffinity(_server, {0})),
}
_os.write(_write, b"x")  # SIGIO, as SIGSTOP, to the pipe's owner: itself at most
