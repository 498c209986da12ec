"""Gradescope's autograder: `resource-grader gradescope OUT.zip` (or `make gradescope`) builds it, and
`run_autograder` runs `python -m grader.gradescope` in it for every submission (grader/gradescope.py: the
zip holds no course staff's tool, grader/staff/ among them).

Gradescope's format: a zip with `setup.sh` and `run_autograder` at its top. Gradescope unpacks it into
/autograder/source, runs setup.sh there once (as root, on its Ubuntu image) to build the image, then for each
submission puts the upload in /autograder/submission, runs /autograder/run_autograder, and reads
/autograder/results/results.json.

setup.sh installs a final Python 3.11 (never Ubuntu 22.04's release candidate: `setup.sh --check-python`) and
the venv, and refuses to finish unless run_autograder grades the packaged reference at full marks: a broken
image fails the build instead of grading students.

The zip (mode 0600) holds (PACKAGED, less UNPACKAGED): the official tree that grading needs (stubs and given
code, the reference, the tests and the catalogue of mistakes but not the meta-tests, the grader with its fingerprints
(grader/fingerprints/: the catalogued mistakes a failed problem's answers match) but not grader/staff/,
pyproject.toml), setup.sh
(from grader/staff/kit/setup.sh, with torch's pin filled in from pyproject.toml), run_autograder (from
grader/staff/kit/run_autograder, with the `grade` options given to the build, such as --no-fingerprints), and
the course secret as `grading-secret` (mode 0600), taken from --secret-file, $RA_GRADING_SECRET_FILE or
$RA_GRADING_SECRET: the generated tests' inputs come from it and the submission (grader/seed.py). It is
the only place outside the course staff's hands that the secret goes; the student release never has it.

run_autograder's interpreter is $RA_AUTOGRADER_PYTHON (default: the venv setup.sh makes,
/autograder/source/.venv/bin/python).
"""

import os
import re
import stat
import sys
import tomllib
import zipfile
from pathlib import Path

from grader import OFFICIAL_ROOT, has_reference
from grader.gradescope import SECRET_NAME
from grader.harness import boundary

KIT = Path(__file__).resolve().parent / "kit"
PACKAGED, UNPACKAGED = boundary.PACKAGED, boundary.UNPACKAGED
JUNK_PARTS = {"__pycache__", ".pytest_cache", ".hypothesis"}
SCRIPTS = ("setup.sh", "run_autograder")
TORCH_PIN = "{torch_pin}"  # in kit/setup.sh
GRADE_OPTIONS = "{grade_options}"  # in kit/run_autograder
GRADE_OPTIONS_ALLOWED = ("--no-fingerprints",)  # what a course may fix in its autograder (the rest is the grader's)


class PackageError(ValueError):
    """The autograder cannot be built (OUT exists, is not a .zip, no reference here, ...)."""


def build(out: Path, secret: bytes, root: Path = OFFICIAL_ROOT, options: tuple[str, ...] = ()) -> list[str]:
    """Write the autograder zip `out` (a new file ending in .zip, mode 0600: the course secret is in it), whose
    run_autograder passes `options` to every grading; the names in it."""
    out = Path(out)
    unknown = [o for o in options if o not in GRADE_OPTIONS_ALLOWED]
    if unknown:
        raise PackageError(f"{unknown}: an autograder can be built with {', '.join(GRADE_OPTIONS_ALLOWED)} only")
    if out.suffix != ".zip":
        raise PackageError(f"{out}: Gradescope takes a .zip; name the output OUT.zip")
    if out.exists():
        raise PackageError(f"{out} exists: choose a new path (nothing was written)")
    if not (root / "reference").is_dir():
        raise PackageError(f"{root} has no reference/ (a student release?): the autograder needs the official tree")
    out.parent.mkdir(parents=True, exist_ok=True)
    names = []
    partial = out.with_name(f".{out.name}.partial")
    partial.unlink(missing_ok=True)
    # mode 0600 from its first byte: the zip holds the course secret
    with os.fdopen(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f, \
            zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as z:
        for path in _packaged_files(root):
            name = path.relative_to(root).as_posix()
            data = path.read_bytes()
            if name == "pyproject.toml":  # the zip holds no grader/staff: nor may the package list setup.sh installs
                data = zip_pyproject(data.decode()).encode()
            _add(z, name, data, 0o644)
            names.append(name)
        _add(z, "setup.sh", setup_script(root).encode(), 0o755)
        _add(z, "run_autograder", run_script(options).encode(), 0o755)
        _add(z, SECRET_NAME, secret + b"\n", 0o600)
        names += [*SCRIPTS, SECRET_NAME]
    os.replace(partial, out)
    return names


# pyproject.toml as the zip has it: without the staff's tools (boundary.UNPACKAGED), which setup.sh cannot install
ZIP_PYPROJECT_EDITS = (('"grader.harness", "grader.staff"]', '"grader.harness"]'),
                       ('[tool.setuptools.package-data]\n"grader.staff" = ["samples/*/*.py", "kit/*"]\n\n', ""))


def zip_pyproject(text: str) -> str:
    from grader.staff.release import edited

    return edited(text, ZIP_PYPROJECT_EDITS, PackageError, "the autograder", "gradescope.py's ZIP_PYPROJECT_EDITS")


def _packaged_files(root: Path) -> list[Path]:
    skipped = [root / u for u in UNPACKAGED]
    files = []
    for entry in PACKAGED:
        source = root / entry
        candidates = sorted(source.rglob("*")) if source.is_dir() else [source]
        files += [p for p in candidates if p.is_file() and not JUNK_PARTS & set(p.parts) and p.suffix != ".pyc"
                  and not any(p.is_relative_to(s) for s in skipped)]
    return files


def _add(z: zipfile.ZipFile, name: str, data: bytes, mode: int) -> None:
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))  # a fixed date: the same tree, the same zip
    info.external_attr = (stat.S_IFREG | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    z.writestr(info, data)


def setup_script(root: Path = OFFICIAL_ROOT) -> str:
    """kit/setup.sh with the torch pin of pyproject.toml (one place for the version)."""
    dependencies = tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = [d for d in dependencies if re.match(r"torch\s*==", d)]
    if len(pins) != 1:
        raise PackageError(f"pyproject.toml: expected one exact torch pin (torch==X.Y.Z), found {pins}")
    return (KIT / "setup.sh").read_text().replace(TORCH_PIN, pins[0].replace(" ", ""))


def run_script(options: tuple[str, ...] = ()) -> str:
    """kit/run_autograder passing `options` to every grading."""
    script = (KIT / "run_autograder").read_text()
    if script.count(" " + GRADE_OPTIONS) != 1:
        raise PackageError(f"kit/run_autograder must hold {GRADE_OPTIONS!r} once, where the options go")
    return script.replace(" " + GRADE_OPTIONS, "".join(" " + o for o in options))


# -- the command --------------------------------------------------------------------------------------

def add_parser(commands) -> None:
    g = commands.add_parser("gradescope", help="course staff: build Gradescope's autograder zip")
    g.add_argument("out", type=Path, help="the zip to write (a new file, OUT.zip)")
    g.add_argument("--secret-file", type=Path, default=None,
                   help="the course secret (default: $RA_GRADING_SECRET_FILE, else $RA_GRADING_SECRET)")
    g.add_argument("--no-fingerprints", dest="options", action="append_const", const="--no-fingerprints",
                   default=[], help="the autograder does not name the catalogued mistakes a student's answers match")


def run(options) -> int:
    from grader.seed import SecretError, course_secret

    try:
        if not has_reference():
            raise PackageError("this tree has no reference/ (a student release?): the autograder needs the official "
                               "tree")
        names = build(options.out, course_secret(options.secret_file), options=tuple(options.options))
    except SecretError as exc:  # the package must carry the secret: no --local here
        print(f"resource-grader gradescope: the autograder carries the course secret, and there is none: "
              f"{str(exc).split(', or pass --local')[0]}", file=sys.stderr)
        return 2
    except PackageError as exc:
        print(f"resource-grader gradescope: {exc}", file=sys.stderr)
        return 2
    print(f"autograder written to {options.out} ({len(names)} files, the course secret among them: keep the zip "
          "private). Upload it in the assignment's Configure Autograder page (docs/graders.md: Gradescope).")
    return 0

