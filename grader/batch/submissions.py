"""A class's submissions: found in its folder (`submissions_in`), and each packed as the bytes a grading task carries
(`pack`): a worker shares nothing with the coordinator but the installed package."""

import io
import zipfile
from pathlib import Path

from grader.submission import MAX_FILE_BYTES, SubmissionError, folder_files, is_zip, results_name

ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # a fixed date: the same folder always packs to the same bytes


def submissions_in(folder: Path) -> list[Path]:
    """The submissions in `folder` (its sub-folders and .zip files), refused where two would write their results
    to the same folder (`alice/` beside `alice.zip`): one's results would be lost."""
    if not folder.is_dir():
        raise SubmissionError(f"{folder} is not a folder of submissions")
    found = sorted(p for p in folder.iterdir() if p.is_dir() or p.suffix == ".zip")
    if not found:
        raise SubmissionError(f"{folder} holds no submissions (sub-folders or .zip files)")
    by_folder: dict[str, list[str]] = {}
    for submission in found:
        by_folder.setdefault(results_name(submission), []).append(submission.name)
    clashes = [" and ".join(names) for names in by_folder.values() if len(names) > 1]
    if clashes:
        raise SubmissionError(f"{folder}: {'; '.join(clashes)} would write their results to the same folder: "
                              "rename one")
    return found


def pack(submission: Path) -> bytes:
    """A submission as the bytes a task carries: a zip as it is; a folder as a zip of the files grading reads
    (grader/submission.py `folder_files`), in a fixed order and date, so that the same folder gives the same bytes.
    Raises SubmissionError where grading could not read it either (a symbolic link, a file too large)."""
    if not submission.is_dir():
        is_zip(submission)  # refuses a link; what is not a zip, the worker's grading says so
        return submission.read_bytes()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for rel, path in sorted(folder_files(submission).items()):
            if path.stat().st_size > MAX_FILE_BYTES:
                raise SubmissionError(f"{rel} is {path.stat().st_size} bytes, over the {MAX_FILE_BYTES}-byte limit")
            info = zipfile.ZipInfo(rel.as_posix(), ZIP_TIME)
            info.external_attr = 0o644 << 16
            archive.writestr(info, path.read_bytes(), zipfile.ZIP_DEFLATED)
    return buffer.getvalue()
