"""The oracles' files kept from the worker of their problem (grader/harness/sandbox.py, layer 4; the modules
themselves are stubs in the worker, grader/harness/absent.py): masked in the worker's view (namespaces), or, with
the user layer alone, denied to the grading's uid by a POSIX ACL entry that concerns that uid alone.
"""

import contextlib
import fcntl
import functools
import os
import struct

from grader.harness import uids


def oracle_files() -> dict[str, list[str]]:
    """Problem -> the files and folders of its oracles' modules (grader/registry.py ORACLES), found without
    importing them: what its worker must not see."""
    from grader.harness import absent
    from grader.registry import ORACLES

    return {problem: paths for problem, names in ORACLES.items() if (paths := absent.hidden_paths(names))}


def mask_options(paths: list[str]) -> list[str]:
    """bwrap options that hide `paths` (namespaces): a file reads as /dev/null, a folder as an empty
    read-only tmpfs."""
    options = []
    for path in paths:
        if os.path.isdir(path):
            options += ["--tmpfs", path, "--remount-ro", path]
        else:
            options += ["--ro-bind", "/dev/null", path]
    return options


ACL_XATTR = "system.posix_acl_access"


ACL_USER_OBJ, ACL_USER, ACL_GROUP_OBJ, ACL_GROUP, ACL_MASK, ACL_OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20


ACL_UNDEFINED_ID = 0xFFFFFFFF


def _acl(path: str) -> list[tuple[int, int, int]]:
    """The access ACL of `path` as (tag, perm, id) entries; the one its mode means where it has none."""
    try:
        raw = os.getxattr(path, ACL_XATTR, follow_symlinks=False)
    except OSError:
        mode = os.stat(path).st_mode
        return [(ACL_USER_OBJ, mode >> 6 & 7, ACL_UNDEFINED_ID), (ACL_GROUP_OBJ, mode >> 3 & 7, ACL_UNDEFINED_ID),
                (ACL_OTHER, mode & 7, ACL_UNDEFINED_ID)]
    return [struct.unpack_from("<HHI", raw, 4 + 8 * i) for i in range((len(raw) - 4) // 8)]


def _set_acl(path: str, entries: list[tuple[int, int, int]]) -> None:
    """Write `entries`; without named users it is the mode alone (the ACL removed)."""
    named = [e for e in entries if e[0] in (ACL_USER, ACL_GROUP)]
    if not named:
        try:
            os.removexattr(path, ACL_XATTR, follow_symlinks=False)
        except OSError:
            pass
        return
    group = next(e[1] for e in entries if e[0] == ACL_GROUP_OBJ)
    entries = [e for e in entries if e[0] != ACL_MASK] + [(ACL_MASK, group, ACL_UNDEFINED_ID)]
    raw = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in sorted(entries, key=lambda e: (e[0], e[2])))
    os.setxattr(path, ACL_XATTR, raw, follow_symlinks=False)


@contextlib.contextmanager
def _acl_lock():
    """Gradings edit the same oracle files' ACLs, each reading then writing the whole ACL: one at a time."""
    uids.UID_LOCKS.mkdir(mode=0o700, exist_ok=True)
    with open(uids.UID_LOCKS / "acl.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def hide_oracles(uid: int, hidden: list[str], every: dict[str, list[str]]) -> None:
    """With the user layer alone: `uid` may read none of `hidden` (an ACL entry with no rights, which
    concerns that uid alone, so concurrent gradings of other problems still read them) and again every other
    oracle file of `every`. Raises OSError where the filesystem has no ACLs (`doctor` says so)."""
    with _acl_lock():
        for path in sorted({p for paths in every.values() for p in paths}):
            entries = [e for e in _acl(path) if not (e[0] == ACL_USER and e[2] == uid)]
            if path in hidden:
                entries.append((ACL_USER, 0, uid))
            _set_acl(path, entries)


@functools.cache
def acl_problem() -> str | None:
    """Why this machine cannot deny one uid an oracle's files by ACL, or None (checked once)."""
    files = [p for paths in oracle_files().values() for p in paths]
    if os.geteuid() != 0:
        return "the grader is not root"
    if files:
        try:
            with _acl_lock():  # unlocked, a stale copy written back would lift another grading's entry
                _set_acl(files[0], _acl(files[0]))  # rewrites what is there: a no-op that needs ACL support
        except OSError as exc:
            return f"no POSIX ACLs on {files[0]}'s filesystem ({exc.strerror})"
    return None
