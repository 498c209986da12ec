"""Gradescope's autograder (grader/staff/gradescope.py), built by the command and run in a simulated /autograder.

The zip is unpacked into a temporary root (RA_AUTOGRADER_ROOT) as Gradescope unpacks it into
/autograder/source, run_autograder is copied to the root, and each case puts an upload in root/submission
and runs it. setup.sh is not run (it installs from the network): run_autograder uses this interpreter
(RA_AUTOGRADER_PYTHON). Every results.json is validated against Gradescope's documented format
(fixtures/gradescope_results.schema.json). One full grading (the reference, ~80 s on one core); the other
cases grade one problem (`--problem tensors`, passed through run_autograder). test_gradescope_image.py runs
setup.sh itself, in a bare root, and grades with the interpreter it installs.
"""

import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest

from grader import messages
from grader.messages import GRADER_ERROR
from grader.registry import BY_ID, PROBLEMS
from grader.staff import gradescope
from tests.meta.suite import GRADING_SECRET, ROOT, grader_env
from tests.mistakes import find_mistake, planted_source

pytestmark = [pytest.mark.meta, pytest.mark.timeout(1200)]

SCHEMA = json.loads((Path(__file__).parent / "fixtures" / "gradescope_results.schema.json").read_text())


def build(tmp_path: Path, *options: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader", "gradescope", str(tmp_path / "autograder.zip"), *options],
                          cwd=ROOT, env=env or grader_env(), capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def autograder(tmp_path_factory) -> Path:
    """A simulated /autograder: the zip unpacked into source/, run_autograder beside it."""
    tmp = tmp_path_factory.mktemp("gradescope")
    assert build(tmp).returncode == 0
    root = tmp / "autograder"
    with zipfile.ZipFile(tmp / "autograder.zip") as z:
        z.extractall(root / "source")
        for info in z.infolist():  # zipfile drops the modes; Gradescope's unzip keeps them
            os.chmod(root / "source" / info.filename, info.external_attr >> 16 & 0o777)
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    return root


def autograde(root: Path, upload, *options: str) -> dict:
    """Put `upload` ({relative path: text}, or a zip file) in root/submission, run run_autograder, and return
    results.json, validated."""
    for folder in ("submission", "results"):
        shutil.rmtree(root / folder, ignore_errors=True)
    (root / "submission").mkdir()
    if isinstance(upload, Path):
        shutil.copy(upload, root / "submission" / upload.name)
    else:
        for name, text in upload.items():
            (root / "submission" / name).parent.mkdir(parents=True, exist_ok=True)
            (root / "submission" / name).write_text(text)
    env = {k: v for k, v in grader_env().items() if not k.startswith("RA_GRADING")}  # only the packaged secret
    env.update(RA_AUTOGRADER_ROOT=str(root), RA_AUTOGRADER_PYTHON=sys.executable)
    done = subprocess.run([str(root / "run_autograder"), *options], cwd="/", env=env, capture_output=True, text=True,
                          timeout=900)
    results_file = root / "results" / "results.json"
    assert results_file.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads(results_file.read_text())
    validate(results)
    results["run_autograder_exit"] = done.returncode  # not the file's: the helper's, for the tests
    return results


def validate(results: dict) -> None:
    jsonschema.validate(results, SCHEMA)
    if "score" in results and results.get("tests"):
        assert abs(results["score"] - sum(t["score"] for t in results["tests"])) < 0.01, "score is not the tests' sum"


def reference_modules(*problems: str) -> dict[str, str]:
    return {f"{p}.py": (ROOT / "reference" / f"{p}.py").read_text() for p in problems}


# -- the package ------------------------------------------------------------------------------------

def test_the_package_refuses_to_build_without_a_secret(tmp_path):
    env = {k: v for k, v in grader_env().items() if not k.startswith("RA_GRADING")}
    done = build(tmp_path, env=env)
    assert done.returncode == 2 and "no course secret" in done.stderr and "--local" not in done.stderr
    assert not (tmp_path / "autograder.zip").exists()


def test_the_package_holds_the_scripts_the_secret_and_no_meta_tests(autograder):
    source = autograder / "source"
    assert (source / gradescope.SECRET_NAME).read_text().strip() == GRADING_SECRET
    assert stat.S_IMODE(os.stat(source / gradescope.SECRET_NAME).st_mode) == 0o600
    for script in gradescope.SCRIPTS:
        assert os.access(source / script, os.X_OK)
        assert subprocess.run(["bash", "-n", str(source / script)]).returncode == 0
    for absent in gradescope.UNPACKAGED:
        assert not (source / absent).exists(), absent
    assert (source / "reference" / "flops.py").is_file() and (source / "tests" / "test_flops.py").is_file()
    # the fingerprints (their engine, inputs and the catalogue of mistakes), and no course staff's tool
    assert (source / "grader" / "fingerprints" / "comparer.py").is_file()
    assert not (source / "grader" / "staff").exists(), "no grade depends on grader/staff/"
    assert (source / "tests" / "mistakes" / "flops.py").is_file()
    assert '-m grader.gradescope "$@"' in (source / "run_autograder").read_text()
    setup = (source / "setup.sh").read_text()
    assert 'TORCH_CPU_INDEX="https://download.pytorch.org/whl/cpu"' in setup and 'TORCH_PIN="torch==2.13.0"' in setup
    assert "bubblewrap" in setup and "python3.11" in setup and "deadsnakes" in setup
    assert stat.S_IMODE(os.stat(autograder.parent / "autograder.zip").st_mode) == 0o600, "the course secret is in it"
    probe = subprocess.run([sys.executable, "-c", "import grader; print(grader.OFFICIAL_ROOT)"], cwd=source,
                           env={**os.environ, "PYTHONPATH": str(source)}, capture_output=True, text=True)
    assert probe.stdout.strip() == str(source), "run_autograder must grade with the packaged tree"


def test_a_course_can_build_the_package_without_fingerprints(tmp_path):
    assert build(tmp_path, "--no-fingerprints").returncode == 0
    with zipfile.ZipFile(tmp_path / "autograder.zip") as z:
        script = z.read("run_autograder").decode()
    assert '-m grader.gradescope --no-fingerprints "$@"' in script
    assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0


def test_the_schema_refuses_what_gradescope_would_not_take():
    for bad in ({"tests": []}, {"score": "10"}, {"score": 1, "visibility": "public"},
                {"score": 1, "tests": [{"score": 1, "status": "ok"}]}, {"score": 1, "scroe": 2}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, SCHEMA)


# -- gradings ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def reference_zipped(autograder, tmp_path_factory) -> dict:
    """The reference's modules uploaded as a zip of a repository folder (my-repo/assignment/<problem>.py), graded
    once for the tests that read it: run_autograder unpacks a zip to a folder and grades that folder, so this is
    also the reference's own full grading."""
    archive = tmp_path_factory.mktemp("upload") / "my-work.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for name, text in reference_modules(*(p.module for p in PROBLEMS)).items():
            z.writestr(f"my-repo/assignment/{name}", text)
    return autograde(autograder, archive)


def test_the_reference_scores_100(reference_zipped):
    results = reference_zipped
    assert results["score"] == 100, [t["name"] for t in results["tests"] if t["status"] != "passed"]
    assert "Local" not in results["output"], "the official grade: the course secret, the differential tests"
    # plot_roofline's matplotlib once built its font cache under the guard (fc-list): every submission flagged.
    # The only evidence is the copy check's (grader/copycheck.py): each module is the reference's
    review = results["extra_data"]["review"]
    assert sorted(line.split(".py:")[0] for line in review) == sorted(f"[copy] {p.module}" for p in PROBLEMS), review
    # what the student reads names what was found, not an action ("reading an oracle's source") it never did
    assert messages.REVIEW_COPY in results["output"] and messages.REVIEW not in results["output"]
    assert results["run_autograder_exit"] == 0, "run_autograder exits 0 whenever it wrote results.json"


def test_the_stubs_score_0(autograder):
    stub = (ROOT / "assignment" / "tensors.py").read_text()
    results = autograde(autograder, {"assignment/tensors.py": stub}, "--problem", "tensors")
    assert results["score"] == 0 and results["tests"] and all(t["status"] == "failed" for t in results["tests"])


def test_a_submission_that_does_not_import_scores_0_with_the_reason_in_one_line(autograder):
    results = autograde(autograder, {"tensors.py": "import torch\n\ndef broken(:\n"}, "--problem", "tensors")
    line = "tensors.py, line 3: SyntaxError: invalid syntax"
    assert results["score"] == 0 and results["output"].count("SyntaxError") == 1 and line in results["output"]
    for test in results["tests"]:
        assert test["output"].count("SyntaxError") == 1 and f"Does not import: {line}" in test["output"], test
    assert "fingerprints" not in results.get("extra_data", {}), "nothing to compare in a module that does not import"


def test_an_empty_upload_scores_0_and_says_so_first(autograder):
    results = autograde(autograder, {}, "--problem", "tensors")
    first = results["output"].split("\n")[1]  # inside the code block
    assert results["score"] == 0 and first.startswith("Nothing of your upload was graded"), results["output"]
    assert "It is empty" in first and "Not implemented yet" not in results["output"]
    unrecognised = autograde(autograder, {"Tensors (1).py": "x = 1\n", "notes.txt": "hi\n"}, "--problem", "tensors")
    first = unrecognised["output"].split("\n")[1]
    assert first.startswith("Nothing of your upload was graded") and "It holds: Tensors (1).py." in first


def test_setup_refuses_a_release_candidate_and_an_old_python(autograder, tmp_path):
    """setup.sh's interpreter check (`setup.sh --check-python`), on fakes: a Python whose sys reports 3.11.0rc1 as
    Ubuntu 22.04's python3.11 does (a real interpreter, changed by a sitecustomize), and a script that prints
    what such an interpreter prints; then an old final release. This interpreter passes."""
    setup = autograder / "source" / "setup.sh"
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import collections, sys\n"
        "sys.version_info = collections.namedtuple('version_info', 'major minor micro releaselevel serial')"
        "(3, 11, 0, 'candidate', 1)\n"
        "del sys.get_int_max_str_digits\n")
    fakes = {"rc-python": f'#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} "$@"\n',
             "rc-script": '#!/bin/sh\necho "3 11 0 candidate 1 0"\n',
             "old-script": '#!/bin/sh\necho "3 10 12 final 0 1"\n'}
    for name, script in fakes.items():
        (tmp_path / name).write_text(script)
        (tmp_path / name).chmod(0o755)
        done = subprocess.run(["bash", str(setup), "--check-python", str(tmp_path / name)], capture_output=True,
                              text=True, timeout=60)
        assert done.returncode != 0, (name, done.stderr)
        reason = "needs 3.11 or newer" if name.startswith("old") else "3.11.0 candidate 1, a pre-release"
        assert f"setup.sh: {tmp_path / name} is Python" in done.stderr and reason in done.stderr, done.stderr
    done = subprocess.run(["bash", str(setup), "--check-python", sys.executable], capture_output=True, text=True)
    assert done.returncode == 0 and "a final release" in done.stderr, done.stderr


def test_students_read_no_evidence_no_withheld_path_and_no_traceback(autograder):
    """A submission flagged for review (an attack of the hostile corpus that captures the oracle at import and
    rebinds one of the grader's scenarios, which the guard reports): the evidence is in the top-level
    extra_data, which Gradescope does not show to students, and the grader's own output (operator lines) is
    hidden; what students read carries none of it."""
    attack = (ROOT / "tests" / "meta" / "hostile" / "audit_capture_oracle.py").read_text()
    flops = (ROOT / "assignment" / "flops.py").read_text() + "\n\n" + attack
    results = autograde(autograder, {"flops.py": flops}, "--problem", "flops")
    evidence = results["extra_data"]["review"]
    assert evidence and results["stdout_visibility"] == "hidden"
    seen = "\n".join([results["output"], *(t["output"] for t in results["tests"])])
    assert "Flagged for review by course staff" in seen
    for line in evidence:
        assert line.split("] ", 1)[-1] not in seen, line
    assert GRADER_ERROR not in seen, "the stub's errors are the submission's"
    for staff_only in ("Traceback", "tests/mistakes", "/reference/", str(autograder), "flop_counter.py"):
        assert staff_only not in seen, staff_only


def test_a_catalogued_mistake_is_named_in_the_results(autograder):
    planted = {"roofline.py": planted_source("roofline", ["matmul_macs"])}
    results = autograde(autograder, planted, "--problem", "roofline")
    line = ("roofline.matmul_cost: on all 20 inputs tried, your answers are those of `matmul_macs`: "
            + find_mistake("roofline:matmul_macs").description)
    assert 0 < results["score"] < BY_ID["roofline"].points and line in results["output"], results["output"][-3000:]
    assert any(f"Known mistake: {line}" in t["output"] for t in results["tests"] if t["status"] == "failed")
    assert results["extra_data"]["fingerprints"]["problems"] == ["roofline"]


def test_a_zip_upload_of_a_repository_folder_is_graded(reference_zipped):
    results = reference_zipped  # every problem's module, read from my-repo/assignment/ in the zip
    assert results["score"] == 100 and all(t["status"] == "passed" for t in results["tests"]), \
        [t["name"] for t in results["tests"] if t["status"] != "passed"]
