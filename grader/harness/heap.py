"""Give the heap's free memory back to the operating system between tests and between calls.

glibc keeps what a process frees (torch's tensors included) for its next allocations; in a long grading run
that memory stays counted against the grading machine's limit although no one uses it. `release()` asks
glibc to return it (malloc_trim); elsewhere it does nothing.
"""

import ctypes
import ctypes.util

_name = ctypes.util.find_library("c")
_trim = getattr(ctypes.CDLL(_name), "malloc_trim", None) if _name else None


def release() -> None:
    if _trim is not None:
        _trim(0)
