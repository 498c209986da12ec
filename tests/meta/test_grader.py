"""The grader, end to end on small submissions: scores, isolation from broken code, results.json always."""

import json
import math
import shutil
import subprocess
import sys
import zipfile

import pytest

from tests.meta.suite import ROOT, grader_env
from tests.mistakes import find_mistake, planted_source
from tests.registry import BY_ID

# These run whole suites in subprocesses: far past the per-test default of 120 s on a loaded machine.
pytestmark = [pytest.mark.meta, pytest.mark.timeout(1800)]

FLOPS_POINTS = BY_ID["flops"].points
MFU = next(b for b in BY_ID["flops"].behaviours if "test_mfu_is_achieved_over_peak" in b.tests)


def grade(tmp_path, submission, *extra: str) -> dict:
    out = tmp_path / "results.json"
    subprocess.run([sys.executable, "-m", "grader", "grade", str(submission), "--out", str(out), "--problem", "flops",
                    *extra], cwd=ROOT, env=grader_env(), check=False, capture_output=True, timeout=600)
    assert out.exists(), "results.json must be written in every case"
    return json.loads(out.read_text())


def submission_of(tmp_path, source: str) -> str:
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "flops.py").write_text(source)
    return folder


def reference_source() -> str:
    return (ROOT / "reference" / "flops.py").read_text()


def test_reference_gets_full_points_and_stubs_none(tmp_path):
    results = grade(tmp_path, submission_of(tmp_path, reference_source()))
    assert results["score"] == FLOPS_POINTS, [t for t in results["tests"] if t["status"] != "passed"]
    assert all(t["status"] == "passed" for t in results["tests"])
    (tmp_path / "stubs").mkdir()
    stubs = grade(tmp_path / "stubs", ROOT / "assignment")
    assert stubs["score"] == 0 and all(t["status"] == "failed" for t in stubs["tests"])


def test_a_zip_of_the_repository_folder_is_graded(tmp_path):
    archive = tmp_path / "submission.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("my-repo/assignment/flops.py", reference_source())
    assert grade(tmp_path, archive)["score"] == FLOPS_POINTS


def test_an_infinite_loop_loses_its_tests_and_keeps_the_rest(tmp_path):
    header = 'def mfu(flops: int | float, seconds: int | float, peak_flops_per_sec: int | float) -> float:\n'
    assert header in reference_source()
    source = reference_source().replace(header, header + '    while True:\n        pass\n')
    results = grade(tmp_path, submission_of(tmp_path, source), "--call-timeout", "8")  # loaded CI machines
    failed = [t for t in results["tests"] if t["status"] == "failed"]
    assert [t["name"] for t in failed] == [f"flops: {MFU.name}"], "only the behaviour with mfu's test loses points"
    assert [n for n, status in failed[0]["extra_data"]["tests"].items() if status != "passed"] == \
        ["test_mfu_is_achieved_over_peak"]
    assert "did not return within 8 s" in failed[0]["output"]
    assert math.isclose(results["score"], FLOPS_POINTS - MFU.points / len(MFU.tests), abs_tol=0.01)
    assert 0 < results["score"] < FLOPS_POINTS


@pytest.mark.parametrize("breakage", ["def mfu(:", "import sys\nsys.exit(3)\n", "import os\nos._exit(7)\n"],
                         ids=["syntax-error", "sys-exit", "os-exit"])
def test_a_module_that_does_not_import_scores_zero_with_a_reason(tmp_path, breakage):
    results = grade(tmp_path, submission_of(tmp_path, breakage + "\n" + reference_source()), "--no-fingerprints")
    assert results["score"] == 0
    assert results["tests"] and all(t["status"] == "failed" for t in results["tests"])
    reason = results["tests"][0]["output"]
    assert any(word in reason for word in ("SyntaxError", "sys.exit(3)", "ended the process")), reason


def test_a_catalogued_mistake_is_named_beside_the_points_it_costs(tmp_path):
    macs = find_mistake("flops:macs")
    source = planted_source("flops", ["macs"])
    results = grade(tmp_path, submission_of(tmp_path, source))
    line = f"flops.matmul_flops: on all 20 inputs tried, your answers are those of `macs`: {macs.description}"
    assert "Known mistakes" in results["output"] and line in results["output"], results["output"][:3000]
    explained = [t for t in results["tests"] if "known_mistakes" in t["extra_data"]]
    assert explained, "the behaviours whose failures the mistake explains say so"
    for test in explained:
        assert test["status"] == "failed" and f"Known mistake: {line}" in test["output"]
        assert test["extra_data"]["known_mistakes"] == {"flops.matmul_flops": ["macs"]}
    assert not any("Known mistake" in t["output"] for t in results["tests"] if t not in explained)
    (tmp_path / "off").mkdir()
    off = grade(tmp_path / "off", submission_of(tmp_path / "off", source), "--no-fingerprints")
    assert "Known mistake" not in json.dumps(off) and off["score"] == results["score"] < FLOPS_POINTS


def test_an_unreadable_submission_still_writes_results(tmp_path):
    not_a_zip = tmp_path / "submission.txt"
    not_a_zip.write_text("hello")
    results = grade(tmp_path, not_a_zip)
    assert results["score"] == 0 and "neither a folder nor a zip" in results["output"]


def test_the_sample_submission_is_partly_right(tmp_path):
    sample = tmp_path / "sample"
    shutil.copytree(ROOT / "grader" / "samples" / "partial", sample)
    results = grade(tmp_path, sample)
    assert 0 < results["score"] < FLOPS_POINTS


def test_batch_grades_every_submission_and_keeps_going(tmp_path):
    folder = tmp_path / "submissions"
    (folder / "alice").mkdir(parents=True)
    shutil.copy(ROOT / "grader" / "samples" / "partial" / "flops.py", folder / "alice" / "flops.py")
    (folder / "bob.zip").write_text("not a zip")
    out = tmp_path / "grades"
    command = [sys.executable, "-m", "grader", "batch", str(folder), "--out", str(out), "--problem", "flops",
               "--jobs", "2"]
    done = subprocess.run(command, cwd=ROOT, env=grader_env(), check=False, capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr.decode()
    rows = (out / "grades.csv").read_text().splitlines()
    assert rows[0] == "submission,status,total,flops,seconds,attempts,reason"
    assert rows[1].startswith("alice,ok,") and rows[2].startswith("bob.zip,unreadable,0,")
    assert json.loads((out / "alice" / "results.json").read_text())["score"] > 0
    assert (out / "bob" / "results.json").exists()


def test_fingerprints_run_the_failed_problems_within_what_is_left_of_the_time_limit():
    import time

    from grader import cli
    from grader.runner import Limits
    from grader.scoring import BehaviourScore, ProblemScore, TestScore

    def problem(name, passed):
        test = TestScore(f"tests/test_{name}.py::test_x", name, 1.0, passed, "passed" if passed else "failed")
        return ProblemScore(name, name, 1, [BehaviourScore("b", 1.0, [test])])

    scores = [problem("flops", False), problem("memory", True), problem("roofline", False)]
    asked = []

    def fingerprints(submission, failed, passed, seconds):
        asked.append((failed, passed, seconds))

    limits = Limits(submission_seconds=600, fingerprint_seconds=120)
    cli._fingerprint(fingerprints, ROOT, scores, frozenset({"roofline"}), limits, time.monotonic())
    cli._fingerprint(fingerprints, ROOT, scores, frozenset(), limits, time.monotonic() - 590)
    assert asked[0][:2] == (["flops"], ["memory"]) and 119 < asked[0][2] <= 120  # roofline: left as the stub
    assert asked[1][:2] == ([], ["memory"]), "10 s left: too little to fingerprint"


def test_python_m_grader_in_a_submission_folder_imports_nothing_from_it(tmp_path):
    for name in ("json", "torch", "hypothesis"):  # the grader's process imports these
        (tmp_path / f"{name}.py").write_text(f"raise SystemExit('the submission folder shadowed {name}')\n")
    done = subprocess.run([sys.executable, "-m", "grader", "grade", "--help"], cwd=tmp_path, env=grader_env(),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "shadowed" not in done.stderr + done.stdout, done.stderr
