"""`pip install .` (not editable), the way a TA new to the project would, then the installed grader at work.

A plain virtual environment (not --system-site-packages, which would hide a missing dependency), the
project installed into it from a clean copy of the repository (its files as a clone has them) with pip's
own resolver and this machine's indexes, the pins included (torch from a local wheel where pip finds one).
Then, from a folder outside both trees: `resource-grader grade --local --problem flops` on the sample
submission (half of flops solved: a score between nothing and everything), `doctor`, and `release`, which
says plainly that it needs the repository. Measured on 2 loaded cores: the install about 60 s, the grading
about 35 s.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.meta.suite import ROOT, SAMPLE

pytestmark = [pytest.mark.meta, pytest.mark.timeout(1500)]


def clean_env() -> dict[str, str]:
    """None of this pytest's settings, no course secret, no virtual environment of ours."""
    drop = ("PYTEST", "HYPOTHESIS", "RA_GRADING", "VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")
    return {k: v for k, v in os.environ.items() if not k.startswith(drop)}


def run(command: list, cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in command], cwd=cwd, env=clean_env(), capture_output=True, text=True,
                          timeout=timeout, check=False)


def clean_copy(dest: Path) -> Path:
    """The repository's files as a clone has them (tracked and new, not ignored: no .venv, build/ or caches)."""
    listed = run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], ROOT, 60)
    if listed.returncode == 0:
        for name in filter(None, listed.stdout.split("\0")):
            if (ROOT / name).is_file():
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, dest / name)
    else:  # not a git checkout
        shutil.copytree(ROOT, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns(
            ".venv", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis", ".git"))
    return dest


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The bin/ folder of a fresh venv holding `pip install .` of a clean copy of the repository."""
    tmp = tmp_path_factory.mktemp("install")
    source = clean_copy(tmp / "repository")
    venv = tmp / "venv"
    made = run([sys.executable, "-m", "venv", venv], tmp, 300)
    assert made.returncode == 0, made.stderr
    done = run([venv / "bin" / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "."],
               source, 1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    shutil.rmtree(source)  # the installed grader must not need the tree it was built from
    return venv / "bin"


def test_the_installed_grader_grades_a_submission_locally(installed, tmp_path):
    out = tmp_path / "results.json"
    graded = run([installed / "resource-grader", "grade", SAMPLE, "--local",
                  "--problem", "flops", "--out", out], tmp_path, 600)
    assert graded.returncode == 0, graded.stdout[-3000:] + graded.stderr[-3000:]
    assert graded.stdout.startswith("problem / behaviour"), graded.stdout[:2000]
    results = json.loads(out.read_text())
    assert 0 < results["score"] < 14, results["score"]  # the sample solves half of flops (14 points)
    where = run([installed / "python", "-c", "import grader; print(grader.OFFICIAL_ROOT, grader.INSTALLED_COPY)"],
                tmp_path, 120)
    root, copy = where.stdout.split()
    assert copy == "True" and Path(root).name == "official" and "site-packages" in root, where.stdout
    assert not (Path(root) / "tests" / "meta").exists(), "the meta-tests are the repository's, not the wheel's"


def test_doctor_runs_and_release_says_why_not(installed, tmp_path):
    doctor = run([installed / "resource-grader", "doctor"], tmp_path, 120)
    assert doctor.returncode == 0 and "sandbox:" in doctor.stdout, doctor.stdout + doctor.stderr
    release = run([installed / "resource-grader", "release", tmp_path / "out"], tmp_path, 120)
    assert release.returncode == 2 and "pip install -e ." in release.stderr, release.stderr
    assert not (tmp_path / "out").exists()
