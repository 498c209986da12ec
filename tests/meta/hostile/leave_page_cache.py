"""A channel through the page cache (issue 53): every sandbox binds the same installed files, so their cached pages
are shared by every grading. A grading evicts pages of torch files no grading reads (`posix_fadvise(DONTNEED)`,
`madvise(MADV_PAGEOUT)`) and touches those whose bit is 1; a later grading probes them with `preadv2(RWF_NOWAIT)`
and `mincore`: 14 of 14 bits for a loader that computes nothing. Now the filter refuses the eviction and the
residency queries (grader/harness/seccomp.py: EPERM), and before any worker of a grading runs the grader reads every
file of the view into the cache (grader/harness/pagecache.py), so that a first read finds nothing either
(tests/meta/test_hostile.py `test_no_channel_reaches_the_next_grading` plants and probes across two gradings).
"""
import mmap as _mmap
import os as _os

import torch as _torch

_folder = _os.path.join(_os.path.dirname(_torch.__file__), "include", "c10", "util")
_files = sorted(_os.path.join(_folder, name) for name in _os.listdir(_folder) if name.endswith(".h"))[:14]


def _try(action):
    try:
        return action()
    except OSError as exc:
        return f"errno {exc.errno}"


def _plant(bit, path):
    fd = _os.open(path, _os.O_RDONLY)
    try:
        if bit:
            _os.pread(fd, 1 << 16, 0)
            return "read"
        view = _mmap.mmap(fd, 0, prot=_mmap.PROT_READ)
        try:
            return [_try(lambda: _os.posix_fadvise(fd, 0, 0, _os.POSIX_FADV_DONTNEED)),
                    _try(lambda: view.madvise(21))]  # MADV_PAGEOUT
        finally:
            view.close()
    finally:
        _os.close(fd)


_planted = [_plant(bit, path) for bit, path in zip([1, 0] * 7, _files, strict=False)]
