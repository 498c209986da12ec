"""Reaching across processes (issue 22): a new process (fork, vfork through posix_spawn, exec, clone3 called
directly), ptrace of the parent and the reading of another process's memory (process_vm_readv), each tried at
import and in a graded function. The kernel's filter refuses every one with EPERM (threads stay allowed).
"""
import ctypes as _ctypes
import os as _os

_libc = _ctypes.CDLL(None, use_errno=True)


def _attempts():
    done = []
    for attempt in (_os.fork, lambda: _os.posix_spawn("/bin/sh", ["sh", "-c", "sleep 600"], {}),
                    lambda: _os.execv("/bin/sh", ["sh", "-c", "sleep 600"]),
                    lambda: _libc.syscall(435, None, 0),  # clone3
                    lambda: _libc.syscall(101, 16, _os.getppid(), 0, 0),  # ptrace(PTRACE_ATTACH, parent)
                    lambda: _libc.syscall(310, _os.getppid(), None, 0, None, 0, 0)):  # process_vm_readv
        try:
            result = attempt()
            if result == 0:
                _os._exit(0)  # a child, where one was made: gone at once
            done.append(result)
        except OSError as exc:
            done.append(exc.errno)
    return done


_at_import = _attempts()


def matmul_flops(b, d, k):  # noqa: F811 - the attack replaces the stub
    _attempts()
    raise NotImplementedError
