"""The inputs compare draws for a problem, with the reference's and the catalogued mistakes' answers on them,
kept on disk between runs: drawing them (hypothesis, a pool of ten per input) and computing the answers took
most of a grading's fingerprints (about 13 s of 17 for nine failed problems, one core), and they depend on the
official tree alone, never on the submission.

A problem's file is named by a digest of everything its contents depend on (the reference, the suite's
strategies, scenarios and catalogue, compare's own code, the seed's pin, the versions of Python, torch and
hypothesis): a change to any of them names another file, so a stale one is never read (grader/kept.py: read only
where no one else could have written it). Gradescope's image has it from setup.sh (`python -m grader.fingerprints`);
elsewhere the first run that needs a problem writes it.

    $RA_COMPARE_CACHE    the folder (default: $XDG_CACHE_HOME, else ~/.cache, then resource-accounting/compare)
"""

import functools
import hashlib
import os
import sys
from pathlib import Path

from grader import kept

FOLDER_ENV = "RA_COMPARE_CACHE"
# what the inputs and answers are computed from: folders and files of the official tree (grader.OFFICIAL_ROOT),
# and the grader's own modules that draw and compute them
TREE = ("reference", "tests", "assignment/given.py")
GRADER_FILES = ("fingerprints/comparer.py", "fingerprints/inputs.py", "seed.py", "harness/local.py")  # in grader/


def folder() -> Path:
    return Path(os.environ[FOLDER_ENV]) if os.environ.get(FOLDER_ENV) else kept.folder("compare")


@functools.cache
def digest() -> str:
    """A digest of the sources that the inputs and answers come from, and of the versions that run them."""
    import hypothesis
    import torch

    from grader import OFFICIAL_ROOT

    files = []
    for name in TREE:
        top = OFFICIAL_ROOT / name
        if top.is_dir():
            files += sorted(p for p in top.rglob("*.py") if "meta" not in p.relative_to(top).parts)
        else:
            files.append(top)
    files += [Path(__file__).resolve().parent.parent / name for name in GRADER_FILES]
    h = hashlib.sha256(f"{sys.version}|{torch.__version__}|{hypothesis.__version__}".encode())
    for file in files:
        h.update(file.name.encode() + b"\0" + file.read_bytes() + b"\0")
    return h.hexdigest()[:32]


def path(problem: str) -> Path:
    return folder() / f"{problem}-{digest()}.pickle"


def load(problem: str) -> dict | None:
    """The problem's kept state, or None (none kept, another tree's, unreadable, or not this user's alone)."""
    return kept.load(path(problem))


def store(problem: str, state: dict) -> None:
    kept.store(path(problem), state)
