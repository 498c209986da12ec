"""Give the heap's free memory back to the operating system between tests and between calls.

glibc keeps what a process frees (torch's tensors included) for its next allocations; in a long grading run
that memory stays counted against the grading machine's limit although no one uses it. `release()` asks
glibc to return it (malloc_trim) once more than KEEP_BYTES lie free: returning less saves nothing a limit
notices, and costs more than it frees (the next call faults the same pages in again: 0.2 s of a grading's
workers when every call trimmed). Elsewhere it does nothing.
"""

import ctypes
import ctypes.util

KEEP_BYTES = 16 * 2**20


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


_name = ctypes.util.find_library("c")
_libc = ctypes.CDLL(_name) if _name else None
_trim = getattr(_libc, "malloc_trim", None)
_info = getattr(_libc, "mallinfo2", None)  # glibc 2.33 and later: every arena's free bytes
if _info is not None:
    _info.restype = _Mallinfo2


def release() -> None:
    if _trim is not None and (_info is None or _info().fordblks > KEEP_BYTES):
        _trim(0)
