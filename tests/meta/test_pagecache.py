"""The page cache warmed before a grading's workers run (grader/harness/pagecache.py): a file with a page out of the
cache is found, by cachestat where the kernel has it and by mincore where not, the two agreeing, and read back in."""

import os

import pytest

from grader.harness import pagecache

pytestmark = pytest.mark.meta


def evict(path, offset: int = 0) -> None:
    """Ask the kernel to drop the cached pages of `path` from `offset` on (it may keep a large folio whole)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)  # a dirty page stays
        os.posix_fadvise(fd, offset, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def missing(path) -> tuple[bool, bool]:
    """Whether a page of `path` is out of the cache: as warming finds it, and by mincore over a mapping."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        return pagecache._missing(fd, size), pagecache._mapped_missing(fd, size)
    finally:
        os.close(fd)


def test_a_file_out_of_the_cache_is_found_and_read_back(tmp_path):
    files = {name: tmp_path / name for name in ("cached", "its tail out", "out")}
    for path in files.values():
        path.write_bytes(os.urandom(1024 * pagecache.PAGE + 5))
    evict(files["out"])
    evict(files["its tail out"], 1000 * pagecache.PAGE)
    found = {name: missing(path) for name, path in files.items()}
    if found["out"] == (False, False):
        pytest.skip("this file system keeps the pages fadvise asks it to drop")
    assert all(ours == mincore for ours, mincore in found.values()), f"(cachestat, mincore): {found}"
    assert found["out"] == (True, True) and found["cached"] == (False, False), found
    warmed = pagecache.warm([str(tmp_path)], [], force=True)
    assert (warmed["files"], warmed["read"]) == (3, sum(ours for ours, _ in found.values())), warmed
    assert {name: missing(path) for name, path in files.items()} == dict.fromkeys(files, (False, False))
