"""What a course's cluster gives an ordinary user, for the meta-tests of workers that are not root: this checkout
installed (`pip install -e ROOT[cluster]`) in a venv made with a Python that every user can run, on paths every
user can cross, and a command line that runs as that user (`nobody`).

The meta-tests' own interpreter cannot serve: here it lives under /root (mode 0700), so another user cannot run
it, as on a machine where Python was installed in someone's home. The venv is made with the system's Python of
the same version (Debian's /usr/bin/python3.11) under /var/tmp, named after a hash of pyproject.toml, the
checkout's path and that interpreter, built once (about 40 s from pip's cache; the first time, torch is
downloaded) and kept for later runs. Reusing it is safe because root builds it, alone (a lock), and only a
venv owned by root that no one else may write, with its `complete` mark, is reused; `rm -rf
/var/tmp/ra-shared-venv-*` removes them.
"""

import fcntl
import hashlib
import os
import pwd
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

from tests.meta.suite import ROOT

USER = "nobody"
CACHE = Path("/var/tmp")
TORCH_INDEX = os.environ.get("TORCH_INDEX", "https://download.pytorch.org/whl/cpu")  # as the Makefile's


def closed_ancestor(path: Path) -> Path | None:
    """The first folder on the way to `path` that other users cannot cross."""
    for folder in [*reversed(path.parents), path]:
        if not os.stat(folder).st_mode & 0o001:
            return folder
    return None


def system_python() -> Path:
    return Path(f"/usr/bin/python{sys.version_info[0]}.{sys.version_info[1]}")


def unavailable() -> str | None:
    """Why an ordinary user cannot run this checkout here (None: they can)."""
    if os.geteuid() != 0:
        return "the meta-tests are not root: they cannot run a worker as another user"
    try:
        pwd.getpwnam(USER)
    except KeyError:
        return f"no user {USER!r} on this machine"
    python = system_python()
    if not python.exists():
        return f"no {python} (an interpreter of this Python's version that every user can run)"
    for needed in (ROOT, python):
        if (closed := closed_ancestor(needed)) is not None:
            return f"{closed} is closed to other users, and {needed} lies in it"
    return None


def venv() -> Path:
    """The shared venv's folder (built when missing): its bin/python runs the grader as any user."""
    key = hashlib.sha256(b"\0".join([(ROOT / "pyproject.toml").read_bytes(), bytes(ROOT), bytes(system_python())]))
    folder = CACHE / f"ra-shared-venv-{key.hexdigest()[:16]}"
    with open(CACHE / f"{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _trusted(folder):
            shutil.rmtree(folder, ignore_errors=True)
            _build(folder)
    return folder


def _trusted(folder: Path) -> bool:
    if not (folder / "complete").exists():
        return False
    info = folder.stat()
    return info.st_uid == 0 and not info.st_mode & 0o022


def _build(folder: Path) -> None:
    subprocess.run([str(system_python()), "-m", "venv", str(folder)], check=True, capture_output=True)
    try:
        urllib.request.urlopen(f"{TORCH_INDEX}/", timeout=5)
        index = ["--extra-index-url", TORCH_INDEX]  # torch's CPU build, as `make venv` installs it
    except OSError:
        index = []
    done = subprocess.run([str(folder / "bin" / "python"), "-m", "pip", "install", "--quiet",
                           "--disable-pip-version-check", *index, "-e", f"{ROOT}[cluster]"],
                          cwd=ROOT, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"the shared venv's pip install failed:\n{done.stderr[-3000:]}")
    subprocess.run(["chmod", "-R", "u=rwX,go=rX", str(folder)], check=True)
    (folder / "complete").touch()


def as_user(argv: list[str], **env: str) -> list[str]:
    """`argv` run as the ordinary user, with `env` added to the environment it inherits."""
    user = pwd.getpwnam(USER)
    return ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups", "env",
            *(f"{name}={value}" for name, value in env.items()), *argv]
