"""The page cache of the files every sandbox binds, made a channel of nothing.

Every grading's worker reads the same interpreter and libraries, so their cached pages are shared kernel state that
no teardown can clear: a grading that evicted pages of files no grading reads, and touched those whose bit is 1,
was read by a later grading under another uid that probed them (issue 53: 14 of 14 bits). The worker's filter
refuses to query residency and to evict (grader/harness/seccomp.py: mincore, cachestat, preadv2(RWF_NOWAIT),
fadvise(DONTNEED), madvise(PAGEOUT, COLD), readahead), but reading a page is a worker's right, and timing a first
read finds whether it was cached. So before any worker of a grading runs, every file of the sandbox's view is read
into the cache (`warm`): then a first read finds every page cached, whoever read it before, and a worker can evict
nothing. What remains is memory pressure (the grading's memory limits keep a worker from making it) and, with the
user layer alone, the files outside the view (the whole machine is readable there: Gradescope grades one submission
per container).

The view (`view_files`): the sandbox's binds (grader/harness/sandbox.py), with what a worker never needs masked
under /usr (`narrowed`). Warming reads only the files with a page not yet cached (one cachestat call a file where the
kernel has it, Linux 6.5; else mincore over a mapping of it, three calls and a third of a CPU-second more for the
view), so a warm machine pays a walk of the view: done at most once per WARM_SECONDS in a grader's process.
"""

import ctypes
import errno
import mmap
import os
import stat
import threading
import time
from pathlib import Path

from grader.harness import seccomp

WARM_SECONDS = 600.0  # a grader warms the view at most this often: nothing a worker does evicts a page
CHUNK = 1 << 20
_last: dict[tuple, float] = {}
_lock = threading.Lock()
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
PAGE = mmap.PAGESIZE


def narrowed(root: str, keep: list[str]) -> list[str]:
    """The folders under `root` to mask so that the view of `root` holds what leads to `keep` alone: at each level
    on the way to a kept path, every folder that leads to none of them (files stay)."""
    keep = [os.path.realpath(k) for k in keep if os.path.realpath(k).startswith(root.rstrip("/") + "/")]
    masks, todo = [], [root]
    while todo:
        folder = todo.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            path = entry.path
            if not entry.is_dir(follow_symlinks=False):
                continue
            if any(k == path or k.startswith(path + "/") for k in keep):
                if not any(k == path for k in keep):
                    todo.append(path)
            elif not any(path.startswith(k + "/") for k in keep):
                masks.append(path)
    return sorted(masks)


def libraries() -> list[str]:
    """The folders of the shared libraries this process has mapped (the system's: libc and the rest)."""
    found = set()
    try:
        for line in Path("/proc/self/maps").read_text().splitlines():
            path = line.split(maxsplit=5)[-1] if len(line.split()) >= 6 else ""
            if ".so" in path and path.startswith("/"):
                found.add(os.path.dirname(os.path.realpath(path)))
    except OSError:
        pass
    return sorted(found)


def view_files(binds: list[str], masks: list[str]):
    """Every regular file a worker sees through `binds`, but those under `masks`."""
    hidden = tuple(m.rstrip("/") + "/" for m in masks)
    for root in binds:
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if not (os.path.join(folder, d) + "/").startswith(hidden)]
            for name in files:
                yield os.path.join(folder, name)


class _Range(ctypes.Structure):
    _fields_ = [("offset", ctypes.c_uint64), ("length", ctypes.c_uint64)]  # length 0: to the end of the file


class _CacheStat(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in ("cached", "dirty", "writeback", "evicted", "recently_evicted")]


_cachestat = [seccomp.number("cachestat")]  # None once the kernel has answered that it has none


def _missing(fd: int, size: int) -> bool:
    """Whether any page of the open file is not in the page cache."""
    call = _cachestat[0]
    if call is not None:
        found = _CacheStat()
        if _libc.syscall(call, fd, ctypes.byref(_Range(0, 0)), ctypes.byref(found), 0) == 0:
            return found.cached < (size + PAGE - 1) // PAGE
        if ctypes.get_errno() not in (errno.ENOSYS, errno.EPERM):
            return True
        _cachestat[0] = None
    return _mapped_missing(fd, size)


def _mapped_missing(fd: int, size: int) -> bool:
    """`_missing` by mincore, over a mapping of the file."""
    address = _libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if address in (None, ctypes.c_void_p(-1).value):
        return True
    try:
        vector = ctypes.create_string_buffer((size + PAGE - 1) // PAGE)
        return _libc.mincore(address, size, vector) != 0 or any(b & 1 == 0 for b in vector.raw)
    finally:
        _libc.munmap(ctypes.c_void_p(address), ctypes.c_size_t(size))


def _read(fd: int, size: int) -> None:
    for offset in range(0, size, CHUNK):
        os.pread(fd, CHUNK, offset)


def warm(binds: list[str], masks: list[str], force: bool = False) -> dict:
    """Read every file of the view into the page cache where a page of it is missing (at most once per
    WARM_SECONDS for one view, unless `force`): {"files", "read" (files read), "bytes" (read), "seconds"}."""
    key = (tuple(binds), tuple(masks))
    with _lock:
        if not force and time.monotonic() - _last.get(key, -WARM_SECONDS) < WARM_SECONDS:
            return {"files": 0, "read": 0, "bytes": 0, "seconds": 0.0}
        start, files, read, size_read = time.monotonic(), 0, 0, 0
        for path in view_files(binds, masks):
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue
            try:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
                    continue
                files += 1
                if _missing(fd, info.st_size):
                    _read(fd, info.st_size)
                    read, size_read = read + 1, size_read + info.st_size
            except (OSError, ValueError, BufferError):
                continue
            finally:
                os.close(fd)
        _last[key] = time.monotonic()
        return {"files": files, "read": read, "bytes": size_read, "seconds": time.monotonic() - start}
