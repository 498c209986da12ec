"""Gradescope's entry in the container: `python -m grader.gradescope [grade options]` (what the autograder zip's
run_autograder runs, grader/staff/gradescope.py builds the zip) grades $RA_AUTOGRADER_ROOT/submission (default
root /autograder, so that the meta-tests can run it in a temporary folder) with the packaged course secret into
.../results/results.json.
"""

import os
import sys
from pathlib import Path

ROOT_ENV, DEFAULT_ROOT = "RA_AUTOGRADER_ROOT", "/autograder"
SECRET_NAME = "grading-secret"  # in the autograder's source folder, mode 0600


def submission_in(folder: Path) -> Path:
    """What to grade in Gradescope's submission folder: the folder itself (a flat upload of the problem
    modules, or a repository folder), or, when it holds no Python file but exactly one zip, that zip (an
    upload Gradescope did not unpack)."""
    if not folder.is_dir():
        return folder  # the grader says it cannot read it, in results.json
    python = [p for pattern in ("*.py", "*/*.py", "*/*/*.py") for p in folder.glob(pattern)]
    archives = sorted(folder.glob("*.zip"))
    return archives[0] if not python and len(archives) == 1 else folder


def autograde(argv: list[str]) -> int:
    """Grade $RA_AUTOGRADER_ROOT/submission with the packaged secret into .../results/results.json; `argv`:
    more `resource-grader grade` options (none on Gradescope; the meta-tests pass --problem). Exits 0 whenever
    results.json is written, whatever the grading's status (review, unreadable: in the file)."""
    from grader import cli
    from grader.grading import EXIT_STATUS

    root = Path(os.environ.get(ROOT_ENV) or DEFAULT_ROOT)
    secret = root / "source" / SECRET_NAME
    if not secret.is_file():
        print(f"grader.gradescope: no {secret}: build the autograder with `resource-grader gradescope`",
              file=sys.stderr)
        return 2
    os.chmod(secret, 0o600)  # whatever the unpacking did: the grader's user alone reads it
    results = root / "results" / "results.json"
    code = cli.main(["grade", str(submission_in(root / "submission")), "--out", str(results),
                     "--secret-file", str(secret), *argv])
    if code and results.is_file():  # the status is in the file (and on stderr): Gradescope documents no other code
        status = next((name for name, value in EXIT_STATUS.items() if value == code), "an error")
        print(f"grader.gradescope: grade exited {code} ({status}); results.json is written, so the "
              "autograder exits 0", file=sys.stderr)
        return 0
    return code


if __name__ == "__main__":
    sys.exit(autograde(sys.argv[1:]))
