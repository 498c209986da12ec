"""What of the official tree goes where: the one list that the sandbox, the grading workspace, the student
release and the Gradescope package read. A path is relative to the official tree's root (grader.OFFICIAL_ROOT);
a folder stands for everything in it.

    SOLUTIONS   solved functions: never readable by the sandbox's user, never in the student release
    STAFF       course staff's tools and checks, which need SOLUTIONS to run: withheld from the release
    PRIVATE     never readable by the sandbox's user: SOLUTIONS, and the repository's history and builds
    WORKSPACE   what a grading copies from the official tree, beside the submission (grader/submission.py)
    WORKER      what the grading worker may read, copied into its read-only tree: from the workspace, and from
                the grader package the worker's own modules (grader/harness/worker.py imports no others)
    RELEASED    the student release, less WITHHELD (SOLUTIONS and STAFF); RUN_WHERE_PRESENT, the released
                modules that import a withheld one where it is there
    PACKAGED    the Gradescope zip, less UNPACKAGED (what grading never needs: course staff's tools among them;
                SOLUTIONS and the catalogue stay, for the differential tests and the fingerprints)
"""

import os
import shutil
from pathlib import Path

SOLUTIONS = ("reference", "tests/mistakes", "grader/staff/samples")  # samples: half of `flops` is the reference's
STAFF = ("tests/meta", "tests/benchmarks", "grader/staff")
PRIVATE = (*SOLUTIONS, ".git", "build")

WORKSPACE = ("assignment", "reference", "tests", "conftest.py", "pyproject.toml")
WORKER_HARNESS = ("__init__.py", "absent.py", "codec.py", "forkserver.py", "front_end.py", "guard.py", "heap.py",
                  "interface.py", "local.py", "protocol.py", "running.py", "seccomp.py", "typecheck.py", "worker.py")
WORKER = ("assignment", "tests/__init__.py", "tests/scenarios", "grader/__init__.py", "grader/registry.py",
          *(f"grader/harness/{name}" for name in WORKER_HARNESS))

RELEASED = ("assignment", "tests", "grader", "handout.md", "conftest.py")
WITHHELD = (*SOLUTIONS, *STAFF)
# Released modules that run what WITHHELD holds where it is there, and are not called where it is not: path ->
# the withheld packages it imports (the fingerprints: grader/grading.py `fingerprinter_available`)
RUN_WHERE_PRESENT = {"grader/fingerprints/comparer.py": ("tests.mistakes",)}
PACKAGED = ("assignment", "reference", "tests", "grader", "conftest.py", "pyproject.toml", "README.md")
UNPACKAGED = ("tests/meta", "tests/benchmarks", "grader/staff")


def locate(path: str, official_root: Path | None = None) -> Path:
    """Where `path` is on this machine: in the grader package that runs (an editable install: the repository;
    a wheel: site-packages) for grader/..., else in the official tree (default: grader.OFFICIAL_ROOT)."""
    if path == "grader" or path.startswith("grader/"):
        return GRADER_PACKAGE.parent / path
    if official_root is None:
        from grader import OFFICIAL_ROOT as official_root
    return official_root / path


def copy_worker_files(tree: Path, official_root: Path | None = None) -> None:
    """Copy WORKER (from `official_root`, default grader.OFFICIAL_ROOT, and the grader) into the folder `tree`."""
    for entry in WORKER:
        source, target = locate(entry, official_root), tree / entry
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, target)


def python_path(root: Path) -> str:
    """PYTHONPATH for a process that runs the suite of the tree `root` (its tests, stubs, reference first) with
    this grader's harness: the same grader on both sides, whether installed or a checkout."""
    return os.pathsep.join(dict.fromkeys([str(root), str(GRADER_PACKAGE.parent)]))


GRADER_PACKAGE = Path(__file__).resolve().parent.parent


def module_of(path: str) -> str:
    """The module a path of the tree is imported as: "grader/staff/bench.py" -> "grader.staff.bench"."""
    return path.removesuffix(".py").replace("/", ".")
