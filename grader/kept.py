"""What the grader computes from the official tree and the installed packages alone, never from a submission,
kept on disk between runs (grader/fingerprints/cache.py: compare's inputs and answers; grader/copycheck.py: the
fingerprints of the reference and the oracles).

A file is named by a digest of everything its contents depend on, so a stale one is never read. It is a pickle,
so it is read only where no one else could have written it: a file of this process's user in a folder of that
user's, neither writable by anyone else. Where the folder cannot be written, nothing is kept and nothing fails.

    $XDG_CACHE_HOME, else ~/.cache of the user the grader runs as: resource-accounting/ in it holds a folder per
    kind, so that each user of a machine keeps their own
"""

import os
import pickle
import pwd
import stat
import tempfile
from pathlib import Path


def folder(kind: str) -> Path:
    """Where `kind` is kept: under $XDG_CACHE_HOME, else ~/.cache, of the user this process runs as (a home that
    is another user's, as $HOME stays under sudo, is not: what is kept there could not be read back as private). A
    user with no home of their own (a uid the password database does not know) keeps it in a folder named by their
    uid in the system's temporary folder: `load` reads it, as anywhere, only where it is theirs alone."""
    home = _home()
    base = os.environ.get("XDG_CACHE_HOME") or (
        home / ".cache" if home else Path(tempfile.gettempdir()) / f"resource-accounting-uid{os.geteuid()}")
    return Path(base) / "resource-accounting" / kind


def _home() -> Path | None:
    """This user's home: $HOME where it is theirs (or cannot be looked at), else the password database's; None where
    neither gives one."""
    try:
        home: Path | None = Path.home()
    except (KeyError, RuntimeError):
        home = None
    try:
        if home is None or home.stat().st_uid != os.geteuid():
            return Path(pwd.getpwuid(os.geteuid()).pw_dir)
    except OSError:
        return home
    except KeyError:
        return None
    return home


def private_folder(kind: str) -> Path | None:
    """`folder(kind)`, made where it is missing, for a tool that keeps files of its own there; None where it is not
    this user's alone."""
    path = folder(kind)
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        return path if _private(path) and _private(path.parent) else None
    except OSError:
        return None


def _private(p: Path) -> bool:
    """Owned by this process's user and writable by no one else: no other user could have put it there."""
    info = p.stat()
    return info.st_uid == os.geteuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def load(file: Path):
    """What `file` keeps, or None (nothing kept, unreadable, or not this user's alone)."""
    try:
        if not (_private(file.parent) and _private(file)):
            return None
        with open(file, "rb") as f:
            return pickle.load(f)
    except Exception:  # noqa: BLE001 - whatever is wrong with it, what it kept is computed again
        return None


def store(file: Path, value) -> None:
    """Keep `value` in `file` (written whole, then renamed into place: a reader never sees half of it)."""
    part = None
    try:
        file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _private(file.parent):
            return
        with tempfile.NamedTemporaryFile(dir=file.parent, delete=False, suffix=".part") as f:
            part = f.name
            pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(part, file)
    except Exception:  # noqa: BLE001 - nothing kept: the next run computes it again
        if part:
            Path(part).unlink(missing_ok=True)
