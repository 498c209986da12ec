"""A submission (a folder or a zip) turned into a grading workspace.

Only the whitelisted student files — one module per problem, `<problem>.py` — are taken from the
submission, found either under `assignment/` or at its top level (Gradescope's flat upload), at most one
folder down (a zip of the repository folder). Everything else in the workspace is the official copy:
the given code, the tests, the reference (where this tree has one: the student release has not).
"""

import contextlib
import shutil
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from grader import OFFICIAL_ROOT, registry
from grader.harness import boundary

MAX_FILE_BYTES = 1_000_000
OPTIONAL_ENTRIES = ("reference",)  # absent from the student release, whose grader runs the local tests only


class SubmissionError(ValueError):
    """The submission cannot be read (missing, not a folder or a zip, a file too large, ambiguous)."""


@dataclass
class Workspace:
    root: Path
    taken: dict[str, str] = field(default_factory=dict)  # problem module -> where it came from
    missing: list[str] = field(default_factory=list)  # problem modules the submission lacks
    seen: list[str] = field(default_factory=list)  # the files looked at (Python files only, in a folder)

    def modules(self) -> dict[str, bytes]:
        """Every problem module as graded (the submission's, or the stub where it has none): name -> bytes."""
        return {p.module: (self.root / "assignment" / f"{p.module}.py").read_bytes() for p in registry.PROBLEMS}


def _candidates(module: str) -> list[PurePosixPath]:
    name = f"{module}.py"
    return [PurePosixPath("assignment", name), PurePosixPath(name)]


def _pick(paths: set[PurePosixPath], module: str) -> PurePosixPath | None:
    """The submission's file for `module`: at the top or one folder down, `assignment/` preferred."""
    for prefix in ("", "*/"):
        for candidate in _candidates(module):
            matches = sorted(p for p in paths if p.match(prefix + str(candidate)) and len(p.parts) ==
                             len(candidate.parts) + (1 if prefix else 0))
            if len(matches) > 1:
                raise SubmissionError(f"the submission has several {candidate}: {[str(m) for m in matches]}")
            if matches:
                return matches[0]
    return None


FOLDER_PATTERNS = ("*.py", "assignment/*.py", "*/*.py", "*/assignment/*.py")  # never a deep walk (a .venv)


def folder_files(folder: Path) -> dict[PurePosixPath, Path]:
    """The files of a submission folder that grading looks at (FOLDER_PATTERNS), by their path inside it. Raises
    SubmissionError where one of them, or a folder on the way to it, is a symbolic link: the grader reads as root,
    and a link would make whatever it points to (the reference, the course secret) the student's code, and its
    text the student's feedback."""
    found = {}
    for pattern in FOLDER_PATTERNS:
        for path in folder.glob(pattern):
            rel = PurePosixPath(path.relative_to(folder).as_posix())
            for depth in range(1, len(rel.parts) + 1):
                if folder.joinpath(*rel.parts[:depth]).is_symlink():
                    raise SubmissionError(f"{PurePosixPath(*rel.parts[:depth])} is a symbolic link: submit the "
                                          "file itself (a folder of plain files, or a zip)")
            if path.is_file():
                found[rel] = path
    return found


def results_name(submission: Path) -> str:
    """The name of the folder of OUT that holds a submission's results: a folder's name, a zip's without .zip
    (`alice.v1/` keeps its `.v1`)."""
    return submission.name if submission.is_dir() else submission.name.removesuffix(".zip")


def is_zip(submission: Path) -> bool:
    """Whether `submission` (not a folder) is a zip file; SubmissionError where it is a symbolic link (a student's
    upload may be one: to the reference's files, say)."""
    if submission.is_symlink():
        raise SubmissionError(f"{submission.name} is a symbolic link: submit the zip itself")
    return zipfile.is_zipfile(submission)


def _read_folder(folder: Path) -> tuple[set[PurePosixPath], Callable[[PurePosixPath], bytes]]:
    files = folder_files(folder)
    return set(files), lambda rel: files[rel].read_bytes()


def _read_zip(archive: zipfile.ZipFile) -> tuple[set[PurePosixPath], Callable[[PurePosixPath], bytes]]:
    infos = {PurePosixPath(i.filename): i for i in archive.infolist() if not i.is_dir()}

    def read(rel: PurePosixPath) -> bytes:
        if infos[rel].file_size > MAX_FILE_BYTES:
            raise SubmissionError(f"{rel} is {infos[rel].file_size} bytes, over the {MAX_FILE_BYTES}-byte limit")
        return archive.read(infos[rel])

    return set(infos), read


def build_workspace(submission: Path, dest: Path) -> Workspace:
    """Copy the official tree into `dest`, then the submission's whitelisted files over the stubs."""
    submission = Path(submission)
    if not submission.exists():
        raise SubmissionError(f"no such submission: {submission}")
    for entry in boundary.WORKSPACE:
        source = OFFICIAL_ROOT / entry
        if entry in OPTIONAL_ENTRIES and not source.exists():
            continue
        if source.is_dir():
            shutil.copytree(source, dest / entry, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, dest / entry)
    workspace = Workspace(dest)
    if submission.is_dir():
        _take(workspace, *_read_folder(submission))
    elif is_zip(submission):
        with zipfile.ZipFile(submission) as archive:
            _take(workspace, *_read_zip(archive))
    else:
        raise SubmissionError(f"{submission} is neither a folder nor a zip file")
    return workspace


def read_modules(submission: Path) -> dict[str, bytes]:
    """The problem modules `submission` (a folder or a zip) gives, found as `build_workspace` finds them, without
    copying anything: name -> bytes (a module it lacks is not there). Raises SubmissionError as it does."""
    submission = Path(submission)
    if submission.is_dir():
        return _given(*_read_folder(submission))
    if is_zip(submission):
        with zipfile.ZipFile(submission) as archive:
            return _given(*_read_zip(archive))
    raise SubmissionError(f"{submission} is neither a folder nor a zip file")


def _given(paths: set[PurePosixPath], read) -> dict[str, bytes]:
    found = {p.module: _pick(paths, p.module) for p in registry.PROBLEMS}
    return {module: read(path) for module, path in found.items() if path is not None}


def _take(workspace: Workspace, paths: set[PurePosixPath], read) -> None:
    workspace.seen = sorted(map(str, paths))
    for problem in registry.PROBLEMS:
        found = _pick(paths, problem.module)
        if found is None:
            workspace.missing.append(problem.module)
            continue
        data = read(found)
        if len(data) > MAX_FILE_BYTES:
            raise SubmissionError(f"{found} is {len(data)} bytes, over the {MAX_FILE_BYTES}-byte limit")
        (workspace.root / "assignment" / f"{problem.module}.py").write_bytes(data)
        workspace.taken[problem.module] = str(found)


@contextlib.contextmanager
def in_sandbox(submission: Path, layers, seconds: float = 600, memory_mb: int = 0, memory_within: Path | None = None):
    """The one way a grading opens: a sandbox of `layers` (grader/harness/sandbox.py: `seconds` of CPU, the workers'
    memory group of `memory_mb` MiB, in `memory_within` where given), the submission's workspace in its private
    folder, and what the worker needs in its read-only tree. Yields (box, workspace); leaving it tears the sandbox
    down. Raises SubmissionError where the submission cannot be read."""
    from grader.harness.sandbox import Sandbox

    with Sandbox(layers, seconds, memory_mb, memory_within) as box:
        workspace = build_workspace(submission, box.private)
        box.expose(workspace.root)
        yield box, workspace


def isolated_package(box, workspace: Workspace, *, call_timeout: float, memory_mb: int, deadline: float | None = None,
                     ran_out: dict[str, str] | None = None):
    """The submission's `assignment` package in `box`'s worker (grader/harness/client.py), each call within
    `call_timeout`, the worker within `memory_mb`, every wait ending at `deadline` (time.monotonic) where given, and
    what ran out of time before in the grading (`ran_out`) not called again."""
    from grader.harness.client import IsolatedPackage

    return IsolatedPackage("assignment", workspace.root, call_timeout=call_timeout, memory_limit_mb=memory_mb,
                           sandbox=box.sandbox(), deadline=deadline, ran_out=ran_out)
