"""7. Leftovers that no file shows, as a channel between gradings (issue 41): keys in the keyrings (the uid's user
and user-session keyrings, which the kernel keeps after the last process, and the session keyring, inherited
from the grader by every worker whatever its uid) and a POSIX message queue (kept by the ipc namespace). Each
grading first looks for what an earlier one left, and answers the graded function through it where it finds
anything; then it leaves its own. The kernel's filter refuses keyrings and message queues (EPERM), the worker
leaves the grader's session keyring for one of its own, and each teardown clears the uid's keyrings.
"""
import ctypes as _ctypes
import os as _os

_libc = _ctypes.CDLL(None, use_errno=True)
_ADD_KEY, _KEYCTL = {"x86_64": (248, 250), "aarch64": (217, 219)}.get(_os.uname().machine, (-1, -1))
_KEYRINGS = (-3, -4, -5)  # the session, user and user-session keyrings
_QUEUE = b"/ra-hostile-channel"


def _found() -> bool:
    for keyring in _KEYRINGS:  # KEYCTL_SEARCH: the keyring and what it links
        if _libc.syscall(_KEYCTL, 10, keyring, b"user", b"ra-hostile-channel", 0) > 0:
            return True
    queue = _libc.mq_open(_QUEUE, _os.O_RDONLY)
    return queue >= 0


def _leave() -> None:
    for keyring in _KEYRINGS:
        _libc.syscall(_ADD_KEY, b"user", b"ra-hostile-channel", b"2*b*d*k", 7, keyring)
    _libc.mq_open(_QUEUE, _os.O_RDWR | _os.O_CREAT, 0o666, None)


_FOUND = _found()
_leave()


def matmul_flops(b, d, k):  # noqa: F811 - the attack replaces the stub
    if _FOUND:
        return 2 * b * d * k
    raise NotImplementedError
