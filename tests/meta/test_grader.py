"""The grader, end to end on small submissions: scores, isolation from broken code, results.json always."""

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import pytest

from grader.harness import cgroups, sandbox, uids
from grader.messages import GRADER_ERROR
from grader.registry import BY_ID
from grader.submission import in_sandbox, isolated_package
from tests.meta import processes
from tests.meta.suite import ROOT, SAMPLE, grader_env
from tests.mistakes import find_mistake, planted_source

# These run whole suites in subprocesses: far past the per-test default of 120 s on a loaded machine.
pytestmark = [pytest.mark.meta, pytest.mark.timeout(1800)]

FLOPS_POINTS = BY_ID["flops"].points
MFU = next(b for b in BY_ID["flops"].behaviours if "test_mfu_is_achieved_over_peak" in b.tests)


def grade(tmp_path, submission, *extra: str) -> dict:
    out = tmp_path / "results.json"
    done = processes.run([sys.executable, "-m", "grader", "grade", str(submission), "--out", str(out), "--problem",
                          "flops", *extra], cwd=ROOT, env=grader_env(), capture_output=True, cpu_seconds=600)
    assert out.exists(), (f"results.json must be written in every case (exit {done.returncode}):\n"
                          + done.stderr.decode(errors="replace")[-3000:])
    return json.loads(out.read_text())


def submission_of(tmp_path, source: str) -> str:
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "flops.py").write_text(source)
    return folder


def reference_source() -> str:
    return (ROOT / "reference" / "flops.py").read_text()


def test_a_symbolic_link_in_a_submission_is_refused_and_nothing_it_points_to_is_read(tmp_path):
    """The grader reads a submission as root: a link (a repository submitted on Gradescope keeps them) would make
    whatever it points to the student's code, and its text the student's feedback: the reference's file (full
    marks until a person looked), the course secret (its first word in a NameError). grade, batch's packing and
    the class's similarity reading refuse it, naming it; a zip that is a link too."""
    from grader.batch.submissions import pack
    from grader.submission import SubmissionError, read_modules

    secret = tmp_path / "course-secret"
    secret.write_text("deadbeef0123456789abcdef\n")
    shutil.make_archive(str(tmp_path / "reference"), "zip", ROOT / "reference")
    links = {"file": ("flops.py", ROOT / "reference" / "flops.py"), "folder": ("assignment", ROOT / "reference"),
             "secret": ("flops.py", secret), "zip": ("upload.zip", tmp_path / "reference.zip")}
    for case, (name, target) in links.items():
        folder = tmp_path / case
        folder.mkdir()
        (folder / name).symlink_to(target)
        submission = folder / name if case == "zip" else folder
        (tmp_path / case / "out").mkdir()
        results = grade(tmp_path / case / "out", submission)
        assert results["score"] == 0 and f"{name} is a symbolic link" in results["output"], (case, results["output"])
        assert "deadbeef" not in json.dumps(results), case
        for reader in (pack, read_modules):
            with pytest.raises(SubmissionError, match="is a symbolic link"):
                reader(submission)


@pytest.fixture(scope="module")
def reference_zipped(tmp_path_factory) -> dict:
    """The reference's flops.py in a zip of a repository folder (my-repo/assignment/flops.py), graded once for the
    tests that read it: a zip is unpacked to a folder and that folder graded, so this grading is also the
    reference's own."""
    tmp_path = tmp_path_factory.mktemp("reference-zipped")
    archive = tmp_path / "submission.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("my-repo/assignment/flops.py", reference_source())
    return grade(tmp_path, archive)


def test_reference_gets_full_points_and_stubs_none(tmp_path, reference_zipped):
    results = reference_zipped
    assert results["score"] == FLOPS_POINTS, [t for t in results["tests"] if t["status"] != "passed"]
    assert all(t["status"] == "passed" for t in results["tests"])
    stubs = grade(tmp_path, ROOT / "assignment")
    assert stubs["score"] == 0 and all(t["status"] == "failed" for t in stubs["tests"])


def test_a_zip_of_the_repository_folder_is_graded(reference_zipped):
    assert reference_zipped["score"] == FLOPS_POINTS


def test_a_module_that_raises_at_import_is_named_in_one_line_and_never_the_graders_error(tmp_path):
    """The cause of a failure comes from its exception's type (grader/harness/report.py `raised_by`): an error the
    module raises while the worker imports it is the submission's, found at its top level."""
    source = "import torch\nimport not_a_module_anyone_has\n" + reference_source()
    results = grade(tmp_path, submission_of(tmp_path, source))
    line = "flops.py, line 2: ModuleNotFoundError: No module named 'not_a_module_anyone_has'"
    assert results["score"] == 0 and line in results["output"], results["output"][-2000:]
    assert not results["extra_data"].get("grader_errors"), results["extra_data"]
    failing = [t for t in results["tests"] if set(t["extra_data"]["tests"].values()) != {"passed"}]
    assert failing and all(f"Does not import: {line}" in t["output"] for t in failing)
    assert GRADER_ERROR not in results["output"]


def test_an_infinite_loop_loses_its_tests_and_keeps_the_rest(tmp_path):
    header = 'def mfu(flops: int | float, seconds: int | float, peak_flops_per_sec: int | float) -> float:\n'
    assert header in reference_source()
    source = reference_source().replace(header, header + '    while True:\n        pass\n')
    # the limit is the worker's CPU time, whatever the machine's load: each loop costs its 2 s and no more
    results = grade(tmp_path, submission_of(tmp_path, source), "--call-timeout", "2")
    failed = [t for t in results["tests"] if t["status"] == "failed"]
    assert [t["name"] for t in failed] == [f"flops: {MFU.name}"], "only the behaviour with mfu's test loses points"
    assert [n for n, status in failed[0]["extra_data"]["tests"].items() if status != "passed"] == \
        ["test_mfu_is_achieved_over_peak"]
    assert "did not return within 2 s" in failed[0]["output"]
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
    assert not results["extra_data"].get("grader_errors"), "the static audits' parse is the submission's failure"
    assert GRADER_ERROR not in results["output"]


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


def test_the_sample_submission_is_partly_right(batched):
    _, out = batched  # alice's submission is the sample's flops.py, graded as `grade` grades it
    results = json.loads((out / "alice" / "results.json").read_text())
    assert 0 < results["score"] < FLOPS_POINTS


@pytest.fixture(scope="module")
def at_a_third_of_a_cpu(tmp_path_factory) -> tuple[list[tuple[str, bool]], dict]:
    """tensors (the reference's) and flops (the stub) graded once, the grader, its test process and its worker all at
    a third of a CPU (Throttle), for the tests that read it: (each line the grader wrote to stderr, and whether the
    grading was still going on when it came; results.json)."""
    tmp_path = tmp_path_factory.mktemp("third")
    folder = tmp_path / "submission"
    folder.mkdir()
    shutil.copy(ROOT / "reference" / "tensors.py", folder / "tensors.py")
    out = tmp_path / "results.json"
    throttle = Throttle(1 / 3)
    try:
        start = time.monotonic()
        process = subprocess.Popen([sys.executable, "-m", "grader", "grade", str(folder), "--out", str(out),
                                    "--problem", "flops", "--problem", "tensors", "--no-fingerprints"], cwd=ROOT,
                                   env=grader_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        throttle.add(process.pid)
        try:
            lines = []
            while line := process.stderr.readline():
                lines.append((line, process.poll() is None and not out.exists()))
            process.wait(timeout=1200)
        finally:
            process.kill()
        print(f"graded at a third of a CPU ({throttle.share.describe()}) in {time.monotonic() - start:.0f} s")
    finally:
        throttle.close()
    assert out.exists(), "".join(line for line, _ in lines)[-3000:]
    return lines, json.loads(out.read_text())


def test_grade_shows_each_problem_as_it_finishes(at_a_third_of_a_cpu):
    # tensors (the reference's; its tests run first, with the other problems a fork server serves) is done while
    # flops (the stub) is still graded: its line is on stderr then, with its score and seconds; results.json keeps
    # the seconds (and examples) for course staff
    lines, results = at_a_third_of_a_cpu
    shown = {line.split()[0]: (line, during) for line, during in lines if line.split()[:1] in (["tensors"], ["flops"])}
    assert list(shown) == ["tensors", "flops"], lines
    tensors_points = BY_ID["tensors"].points
    assert f"{tensors_points:.2f} / {tensors_points:g} points" in shown["tensors"][0], shown
    assert shown["tensors"][1], "the tensors line came only once the grading had ended"
    assert f"0.00 / {FLOPS_POINTS:g} points" in shown["flops"][0], shown
    staff = results["extra_data"]
    seconds, examples = staff["seconds_per_problem"], staff["examples_per_problem"]
    assert set(seconds) == {"tensors", "flops"} and all(value > 0 for value in seconds.values()), seconds
    assert examples["tensors"] > 0, examples  # tensors' generated tests ran; flops' stubs fail at their first example


@pytest.fixture(scope="module")
def batched(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    """`batch` over a class of two, graded once for the tests that read it: alice (the sample's flops.py) and
    bob.zip (not a zip). (The finished command, its output folder.)"""
    tmp_path = tmp_path_factory.mktemp("batched")
    folder = tmp_path / "submissions"
    (folder / "alice").mkdir(parents=True)
    shutil.copy(SAMPLE / "flops.py", folder / "alice" / "flops.py")
    (folder / "bob.zip").write_text("not a zip")
    out = tmp_path / "grades"
    command = [sys.executable, "-m", "grader", "batch", str(folder), "--out", str(out), "--problem", "flops",
               "--jobs", "2"]
    return processes.run(command, cwd=ROOT, env=grader_env(), capture_output=True, cpu_seconds=600), out


def test_batch_grades_every_submission_and_keeps_going(batched):
    done, out = batched
    assert done.returncode == 0, done.stderr.decode()
    told = done.stderr.decode().splitlines()
    per_submission = [line for line in told if line.startswith("resource-grader [")]
    assert len(per_submission) == len({line.split("]")[0] for line in per_submission}), "one line a submission"
    assert sum("each grading's CPU share" in line for line in told) <= 1, told
    rows = (out / "grades.csv").read_text().splitlines()
    assert rows[0] == "submission,status,total,flops,seconds,attempts,reason,similar_to"
    assert rows[1].startswith("alice,ok,") and rows[2].startswith("bob.zip,unreadable,0,")
    assert json.loads((out / "alice" / "results.json").read_text())["score"] > 0
    assert (out / "bob" / "results.json").exists()


def test_batch_says_when_jobs_outnumber_the_cores(tmp_path):
    cores = len(os.sched_getaffinity(0))
    (tmp_path / "empty").mkdir()
    done = subprocess.run([sys.executable, "-m", "grader", "batch", str(tmp_path / "empty"), "--out",
                           str(tmp_path / "grades"), "--jobs", str(cores + 2)], cwd=ROOT, env=grader_env(),
                          capture_output=True, text=True, timeout=120)
    assert f"--jobs {cores + 2} on {cores} cores" in done.stderr, done.stderr
    assert "holds no submissions" in done.stderr  # and then the folder's own error, as before


def test_two_submissions_that_would_share_a_results_folder_are_refused_before_grading(tmp_path):
    from grader.batch.submissions import submissions_in
    from grader.submission import results_name

    class_folder = tmp_path / "class"
    for name in ("alice.v1", "alice.v2", "bob"):
        (class_folder / name).mkdir(parents=True)
    assert [results_name(s) for s in submissions_in(class_folder)] == ["alice.v1", "alice.v2", "bob"]
    with zipfile.ZipFile(class_folder / "bob.zip", "w") as archive:
        archive.writestr("flops.py", "")
    done = subprocess.run([sys.executable, "-m", "grader", "batch", str(class_folder), "--out",
                           str(tmp_path / "grades")], cwd=ROOT, env=grader_env(), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0 and "bob and bob.zip would write their results to the same folder" in done.stderr, \
        done.stderr
    assert not (tmp_path / "grades" / "bob").exists()


def test_fingerprints_run_the_failed_problems_within_what_is_left_of_the_time_limit():
    import time

    from grader import grading
    from grader.runner import Limits
    from grader.scoring import BehaviourScore, ProblemScore, TestScore

    def problem(name, passed):
        test = TestScore(f"tests/test_{name}.py::test_x", name, 1.0, passed, "passed" if passed else "failed")
        return ProblemScore(name, name, 1, [BehaviourScore("b", 1.0, [test])])

    scores = [problem("flops", False), problem("memory", True), problem("roofline", False)]
    asked = []

    def fingerprints(submission, failed, passed, seconds, ran_out):
        asked.append((failed, passed, seconds))

    limits = Limits(submission_seconds=600, fingerprint_seconds=120)
    grading._fingerprint(fingerprints, ROOT, scores, frozenset({"roofline"}), limits, time.monotonic())
    grading._fingerprint(fingerprints, ROOT, scores, frozenset(), limits, time.monotonic() - 590)
    assert asked[0][:2] == (["flops"], ["memory"]) and 119 < asked[0][2] <= 120  # roofline: left as the stub
    assert asked[1][:2] == ([], ["memory"]), "10 s left: too little to fingerprint"


SLEEPING_FLOPS = """
import time as _time


def _sleep(*args, **kwargs):
    _time.sleep(10**6)


for _name in __all__:
    if _name != "FlopCounter":
        globals()[_name] = _sleep
"""


def test_the_fingerprints_end_at_their_deadline_whatever_a_call_does(tmp_path, monkeypatch):
    """Every wait of the fingerprint pass ends at its deadline: a call that sleeps, started just before it, used
    to run on to its wall-clock backstop (here five minutes: five times its limit), and results.json came that much
    later. Told by the order of events, not by seconds: every wait the pass ended, it ended at the deadline, and
    once the pass has returned nothing of it runs."""
    from grader import fingerprints
    from grader.harness import client

    ended = []  # each wait on a worker that ran out: at the deadline (True), or at a limit of its own

    def next_wait(limit):
        wait = original(limit)
        if wait <= 0:
            ended.append(limit.at_deadline)
        return wait

    original = client._Limit.next_wait
    monkeypatch.setattr(client._Limit, "next_wait", next_wait)
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "flops.py").write_text(reference_source() + SLEEPING_FLOPS)
    comparer = fingerprints.class_comparer(["flops"])  # the catalogue's answers first: not the submission's time
    layers = sandbox.detect("auto")
    sandbox.warm_view(layers)  # the page cache, as a grading warms it before its clock starts
    found = fingerprints.fingerprint(comparer, folder, layers, problems=["flops"], call_seconds=60, memory_mb=3072,
                                     seconds=6)
    assert found.timed_out and not found.error, found
    assert ended and all(ended), f"a wait that ran out ended at its own limit, not at the deadline: {ended}"
    assert not processes.running_below(os.getpid()), "a process of the fingerprint pass outlived it"


FILLS_ITS_HOME = """
import os as _os

for _i in range(8):  # 256 MiB in files of 32 MiB, in the home's tmpfs: memory that no rlimit of the worker counts
    try:
        with open(_os.path.join(_os.environ["HOME"], f"ra-hostile-fill-{_i}"), "wb") as _f:
            _f.write(b"\\1" * 2**25)
    except OSError:
        break
"""


# What these memory tests give a worker to start: they also run in an emulated VM (tests/meta/test_cgroup_v2.py),
# where a start took 55 s on an idle machine, and more than the grader's 120 s while CI ran beside it.
VM_START_SECONDS = 600


def test_the_memory_a_grading_holds_in_files_counts_against_its_limit(tmp_path):
    """A memory cgroup per grading (cgroups.memory_group) is charged with what the workers hold, files in tmpfs
    included: a worker that fills its home beyond what the grading may hold is stopped, with the memory message."""
    from grader.harness.client import WorkerDied

    probe = cgroups.memory_group(64)
    if probe is None:
        pytest.skip(f"no memory cgroup the grader may make here ({NO_MEMORY_GROUP})")
    probe.rmdir()
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "flops.py").write_text(reference_source() + FILLS_ITS_HOME)
    with in_sandbox(folder, sandbox.detect("auto"), 600, memory_mb=400) as (box, workspace):
        package = isolated_package(box, workspace, call_timeout=60, memory_mb=3072)
        package.worker.start_timeout = VM_START_SECONDS
        try:
            package.worker.begin_test("test_grader::memory", "flops")
            with pytest.raises(WorkerDied, match="more memory than the autograder allows"):
                package.flops.matmul_flops(2, 3, 4)
        finally:
            package.close()
    assert not box.memory_group.exists(), "the teardown removes the grading's memory cgroup"
    # a grader killed outright leaves its group: the next one made removes it
    dead = box.memory_group.with_name(f"ra-sandbox-{2**22 + 1}-1")  # above pid_max: no process has it
    dead.mkdir()
    cgroups.memory_group(64).rmdir()
    assert not dead.exists(), "the group of a grader gone was left"


NO_MEMORY_GROUP = "as root: cgroup v1's memory hierarchy, or cgroup v2 with the grader's processes alone in their group"


def test_a_gradings_workers_are_in_its_memory_group_inside_its_cpu_share(tmp_path):
    """On cgroup v2 a process is in one group for every controller, so a grading's memory group is made inside its
    CPU share (grader/batch/cpushare.py `memory_parent`), beside the leaf that holds its test process; on v1 each
    controller has a hierarchy of its own. Either way the grading's workers are in its memory group while they
    run, and the groups are gone after."""
    from grader.batch.cpushare import CpuShare

    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "flops.py").write_text(reference_source())
    with CpuShare(1) as share:
        if share.group is None:
            pytest.skip(f"no cgroup for a CPU share here ({share.describe()})")
        with in_sandbox(folder, sandbox.detect("auto"), 600, 1024, share.memory_parent) as (box, workspace):
            if box.memory_group is None:
                pytest.skip(f"no memory cgroup the grader may make here ({NO_MEMORY_GROUP})")
            package = isolated_package(box, workspace, call_timeout=60, memory_mb=3072)
            package.worker.start_timeout = VM_START_SECONDS
            try:
                package.worker.begin_test("test_grader::share", "flops")
                assert package.flops.matmul_flops(2, 3, 4) == 48
                assert (box.memory_group / "cgroup.procs").read_text().split(), "the worker is in the memory group"
            finally:
                package.close()
            if share.kind == "cgroup v2":
                assert box.memory_group.parent == share.group, "the memory group is inside the CPU share"
        assert not box.memory_group.exists(), "the teardown removes the memory group"
        group = share.group
    assert not group.exists(), "closing the share removes its group and all below it"


def test_each_problem_gets_its_share_of_what_is_left():
    from grader.harness.time_limit import share

    order = ["tensors", "flops", "memory"]  # 10, 14 and 8 points
    assert share("tensors", order, 0.0, 320.0) == 100.0
    assert math.isclose(share("flops", order, 60.0, 320.0), 260.0 * 14 / 22), "what tensors left goes to the others"
    assert share("memory", order, 300.0, 320.0) == 20.0 and share("memory", order, 330.0, 320.0) == 0.0


@pytest.mark.slow
def test_a_module_that_loops_everywhere_costs_only_its_own_problem(tmp_path):
    """Every function of tensors (graded first) loops: tensors loses its points and, past its share of the run,
    its remaining tests at once; every other problem is graded in full within the run's time."""
    from tests.meta.slips import LOOP, planted

    folder = tmp_path / "submission"
    shutil.copytree(ROOT / "reference", folder, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "tensors.py").write_text(planted((folder / "tensors.py").read_text(), LOOP))
    out = tmp_path / "results.json"
    processes.run([sys.executable, "-m", "grader", "grade", str(folder), "--out", str(out), "--local",
                   "--no-fingerprints", "--time-limit", "200"], cwd=ROOT, env=grader_env(), capture_output=True,
                  cpu_seconds=600)
    results = json.loads(out.read_text())
    by_problem: dict[str, float] = {}
    for test in results["tests"]:
        by_problem[test["name"].split(":")[0]] = by_problem.get(test["name"].split(":")[0], 0) + test["score"]
    assert by_problem.pop("tensors") == 0
    assert all(math.isclose(score, BY_ID[p].points) for p, score in by_problem.items()), by_problem
    assert any("used its share of the run's time" in t["output"] for t in results["tests"]), "tensors' share ran out"
    assert results["execution_time"] < 200


def test_python_m_grader_in_a_submission_folder_imports_nothing_from_it(tmp_path):
    for name in ("json", "torch", "hypothesis"):  # the grader's process imports these
        (tmp_path / f"{name}.py").write_text(f"raise SystemExit('the submission folder shadowed {name}')\n")
    done = subprocess.run([sys.executable, "-m", "grader", "grade", "--help"], cwd=tmp_path, env=grader_env(),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "shadowed" not in done.stderr + done.stdout, done.stderr


# -- limits that judge the submission, not the machine (issue 21) ---------------------------------------

HOSTILE = ROOT / "tests" / "meta" / "hostile"


class Throttle:
    """Processes held to `cpus` of one CPU: a cgroup's CPU quota where the grader may make one, else pinned to
    one core beside CPU hogs pinned there too (two hogs: a third of the core each)."""

    def __init__(self, cpus: float):
        from grader.batch.cpushare import CpuShare

        self.share = CpuShare(cpus)
        self.hogs = []
        if self.share.kind == "affinity":
            core = min(os.sched_getaffinity(0))
            self.share.cores = {core}
            for _ in range(round(1 / cpus) - 1):
                hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
                os.sched_setaffinity(hog.pid, {core})
                self.hogs.append(hog)

    def add(self, pid: int) -> None:
        self.share.add(pid)

    def close(self) -> None:
        for hog in self.hogs:
            hog.kill()
            hog.wait()
        self.share.close()


def isolated_with(tmp_path, source: str, **options):
    """The flops stub with `source` appended, in an isolated package over a copy of the worker's files."""
    from grader.harness.boundary import copy_worker_files
    from grader.harness.client import IsolatedPackage

    copy_worker_files(tmp_path)
    flops = tmp_path / "assignment" / "flops.py"
    flops.write_text(flops.read_text() + "\n\n" + source)
    package = IsolatedPackage("assignment", tmp_path, **options)
    package.worker.begin_test("test_limits::one", "flops")
    return package


BURNERS = '''
import time as _time


def burn(seconds):
    \"\"\"Computes for `seconds` of this process's CPU time.\"\"\"
    end = _time.process_time() + seconds
    while _time.process_time() < end:
        pass
    return seconds


def loop():
    while True:
        pass


def nap(seconds):
    _time.sleep(seconds)
'''


def test_a_call_is_limited_by_the_workers_cpu_time_with_a_wall_clock_backstop(tmp_path):
    """A call's limit is the worker's CPU time, however slowly the machine gives it: at a third of a CPU (and
    whatever else the machine runs), 0.6 s of CPU time is within a 1 s limit, a loop ends at 1 s of CPU time and the
    calls of one test at 2 s together; only a call that sleeps reaches the wall-clock backstop (5 s), and hears
    that it was waiting or sleeping."""
    from grader.harness.client import WorkerTimeout

    package = isolated_with(tmp_path, BURNERS, call_timeout=1.0, test_cpu_seconds=2.0)
    throttle = Throttle(1 / 3)
    try:
        assert package.flops.burn(0) == 0  # the worker is up: throttle it alone
        throttle.add(package.worker.process.pid)
        waited = package.worker.clock.waited()
        assert package.flops.burn(0.6) == 0.6, "0.6 s of CPU time is within a 1 s limit, however slow the CPU"
        assert package.worker.clock.waited() - waited > 0.6, "at a third of a CPU it waits twice as long as it runs"
        with pytest.raises(WorkerTimeout, match=r"did not return within 1 s of CPU time$"):
            package.flops.loop()
        with pytest.raises(WorkerTimeout, match="used more than 2 s of CPU time together"):
            package.flops.burn(0.6)  # 0.6 + 1 (the loop) + 0.6: past the test's 2 s
        package.worker.begin_test("test_limits::two", "flops")
        with pytest.raises(WorkerTimeout, match=r"5 s of wall-clock time \(.*it was waiting or sleeping"):
            package.flops.nap(1000)
    finally:
        package.close()
        throttle.close()


def test_a_starved_call_is_ended_by_its_cpu_time_and_never_said_to_wait(tmp_path):
    """At a twentieth of a CPU, a second of CPU time takes twenty of wall-clock time: four times the backstop
    (5 s) that ends a call that waits. The time the worker spent runnable, waiting for a CPU (its threads' run-queue
    wait), moves the backstop on, never its CPU time: the loop ends at its 1 s of CPU time and is told so, not that
    it was waiting or sleeping (Gradescope's host under load gave a half-CPU container a fifth of a CPU)."""
    from grader.batch.cpushare import CpuShare
    from grader.harness.client import WorkerTimeout

    share = CpuShare(1 / 20)
    if share.group is None:
        share.close()
        pytest.skip(f"needs a cgroup's CPU quota to starve the worker ({share.describe()})")
    package = isolated_with(tmp_path, BURNERS, call_timeout=1.0)
    try:
        assert package.flops.burn(0) == 0
        share.add(package.worker.process.pid)
        with pytest.raises(WorkerTimeout) as raised:
            package.flops.loop()
        assert str(raised.value).endswith("did not return within 1 s of CPU time"), str(raised.value)
    finally:
        package.close()
        share.close()


def test_a_correct_submission_keeps_full_marks_on_a_third_of_a_cpu(at_a_third_of_a_cpu):
    lines, results = at_a_third_of_a_cpu  # tensors, the reference's (flops, the stub, earns nothing)
    tensors = [t for t in results["tests"] if t["name"].startswith("tensors: ")]
    assert tensors and all(t["status"] == "passed" for t in tensors), "".join(line for line, _ in lines)[-3000:]
    assert results["score"] == BY_ID["tensors"].points, [t["output"][:500] for t in tensors if t["status"] != "passed"]


def test_a_cpu_hog_in_a_batch_changes_no_other_grade(tmp_path):
    folder = tmp_path / "submissions"
    for name, source in [("hog", (ROOT / "assignment" / "flops.py").read_text() + "\n\n" +
                          (HOSTILE / "bomb_cpu.py").read_text()), ("honest", reference_source())]:
        (folder / name).mkdir(parents=True)
        (folder / name / "flops.py").write_text(source)
    out = tmp_path / "grades"
    done = processes.run([sys.executable, "-m", "grader", "batch", str(folder), "--out", str(out), "--problem",
                          "flops", "--jobs", "2", "--no-fingerprints"], cwd=ROOT, env=grader_env(),
                         capture_output=True, cpu_seconds=1500)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    assert b"each grading's CPU share" in done.stderr
    honest = json.loads((out / "honest" / "results.json").read_text())
    assert honest["score"] == FLOPS_POINTS, [t["output"][:500] for t in honest["tests"] if t["status"] != "passed"]
    assert json.loads((out / "hog" / "results.json").read_text())["score"] == 0


def test_two_graders_with_lock_folders_of_their_own_never_share_a_uid(tmp_path, monkeypatch):
    monkeypatch.setattr(uids, "UID_LOCKS", tmp_path / "first")
    uid, token = uids.claim_uid()
    other = (f"from pathlib import Path; from grader.harness import uids; "
             f"uids.UID_LOCKS = Path({str(tmp_path)!r}) / 'second'; print(uids.claim_uid()[0])")

    def claimed_elsewhere() -> int:
        done = subprocess.run([sys.executable, "-c", other], cwd=ROOT, capture_output=True, text=True, timeout=120)
        return int(done.stdout)

    try:
        assert claimed_elsewhere() != uid, "a grader with another lock folder (a chroot's) took the same uid"
    finally:
        os.close(token)
    again = uids.uid_token(uid)  # not claim_uid: other graders of this machine may hold lower uids by now
    assert again is not None, "released, the uid is free again"
    os.close(again)


def test_the_run_stops_at_its_time_limit_and_keeps_what_was_graded(tmp_path):
    """A grading's own deadline is wall-clock time (Gradescope's is): the run is cut there, and results.json is
    written before it, with what was graded (the events in that order, whatever the machine's load)."""
    header = 'def mfu(flops: int | float, seconds: int | float, peak_flops_per_sec: int | float) -> float:\n'
    source = reference_source().replace(header, header + '    import time\n    time.sleep(10**6)\n')
    results = grade(tmp_path, submission_of(tmp_path, source), "--time-limit", "45", "--no-fingerprints")
    assert results["execution_time"] <= 45, "results.json is written before the deadline"
    assert "time limit (45 s) was reached" in results["output"]
    assert results["tests"], "the behaviours are all listed, those that had not run as failed"


def test_kill_tree_kills_a_worker_in_a_session_of_its_own():
    from grader.runner import kill_tree

    code = ("import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'while True: pass'], "
            "start_new_session=True); time.sleep(1000)")
    parent = subprocess.Popen([sys.executable, "-c", code])
    time.sleep(2)
    from grader.runner import _descendants

    tree = _descendants(parent.pid)
    assert len(tree) == 2, tree
    kill_tree(parent.pid)
    parent.wait()
    time.sleep(0.5)
    assert not [pid for pid in tree - {parent.pid} if os.path.exists(f"/proc/{pid}") and
                "Z" not in open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]]


def test_the_worker_volunteers_for_the_oom_killer_and_the_grader_does_not(tmp_path):
    package = isolated_with(tmp_path, BURNERS, call_timeout=10.0)
    try:
        package.flops.burn(0)
        worker = Path(f"/proc/{package.worker.process.pid}/oom_score_adj").read_text().strip()
        assert worker == "1000"
        assert Path("/proc/self/oom_score_adj").read_text().strip() != "1000"
    finally:
        package.close()


def test_a_memory_bomb_is_told_it_used_too_much_memory(tmp_path):
    # Gradescope's default container: a grading fits (415-571 MiB measured, issue 21); the bomb does not. The
    # worker's address-space limit is raised to the test process's (torch alone maps most of the default), so
    # that the container's limit is reached first, as on Gradescope
    limit_mib = 768
    group = cgroups.memory_group(limit_mib)  # the container's limit, swap included
    if group is None:
        pytest.skip("needs a memory cgroup (root, cgroup v1 or v2 with the memory controller)")
    # the hoarding is in a call, so the kernel stops it while a test waits on it (a thread hoarding beside the
    # tests, tests/meta/hostile/bomb_memory.py, may or may not reach the limit before the last test ends)
    folder = submission_of(tmp_path, reference_source() + HOARDING_MFU)
    out = tmp_path / "results.json"
    try:
        process = subprocess.Popen([sys.executable, "-m", "grader", "grade", str(folder), "--out", str(out),
                                    "--problem", "flops", "--no-fingerprints", "--memory-mb", "4096"], cwd=ROOT,
                                   env=grader_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        (group / "cgroup.procs").write_text(str(process.pid))
        output, _ = process.communicate(timeout=900)
    finally:
        group.rmdir()
    results = json.loads(out.read_text())
    told = {t["name"] for t in results["tests"]
            if f"your code used more memory than the autograder allows: {limit_mib} MiB" in t["output"]}
    assert any("MFU" in name for name in told), output.decode()[-3000:]
    assert "exited with code -9" not in "\n".join(t["output"] for t in results["tests"])
    kept = [t for t in results["tests"] if t["status"] == "passed"]
    assert kept, "the other functions' tests still pass: " + output.decode()[-3000:]


HOARDING_MFU = """

_HOARD = []


def mfu(*args, **kwargs):
    while True:
        _HOARD.append(bytearray(64 * 2**20))
"""


STASH = """
import os as _os
import torch as _torch

try:  # this problem's worker may read flops' oracle, not its own (through a folder's descriptor: past the guard)
    _utils = _os.open(_os.path.join(_os.path.dirname(_torch.__file__), "utils"), _os.O_RDONLY)
    with _os.fdopen(_os.open("flop_" + "counter.py", _os.O_RDONLY, dir_fd=_utils)) as _f:
        _source = _f.read()
    for _folder in (_os.environ.get("HOME", ""), "/tmp", "/var/tmp", "/dev/shm"):
        try:
            with open(_os.path.join(_folder, "ra-hostile-stash.py"), "w") as _f:
                _f.write(_source)
        except OSError:
            pass
except OSError:
    pass
"""

UNSTASH = """
import os as _os

_namespace = {"__name__": "torch.utils.stash", "__package__": "torch.utils"}  # its relative imports resolve
for _folder in (_os.environ.get("HOME", ""), "/tmp", "/var/tmp", "/dev/shm"):
    try:
        with open(_os.path.join(_folder, "ra-hostile-stash.py")) as _f:
            exec(compile(_f.read(), "stash.py", "exec"), _namespace)
        break
    except Exception:
        pass

if "FlopCounterMode" in _namespace:
    class FlopCounter(_namespace["FlopCounterMode"]):  # noqa: F811 - the attack replaces the stub
        def __init__(self):
            super().__init__(display=False)

        @property
        def total(self):
            return self.get_total_flops()

        @property
        def by_op(self):
            return {str(op): n for op, n in self.get_flop_counts().get("Global", {}).items()}
"""


def test_an_oracle_stashed_by_another_problems_worker_is_gone(tmp_path):
    """The workers of tensors and activation_checkpointing may read FlopCounterMode's source, which
    is not its oracle, and leave it in its home or a shared temporary folder for the flops worker of the same
    grading: each problem's worker starts with an empty home and none of the uid's files in the shared
    folders (Spec.clear), so the flops worker finds nothing and the stub's counter earns nothing."""
    folder = tmp_path / "submission"
    folder.mkdir()
    stashing = ["tensors", "activation_checkpointing"]  # whichever order the problems are graded in
    for problem in stashing:
        (folder / f"{problem}.py").write_text((ROOT / "assignment" / f"{problem}.py").read_text() + STASH)
    (folder / "flops.py").write_text((ROOT / "assignment" / "flops.py").read_text() + UNSTASH)
    out = tmp_path / "results.json"
    problems = [option for problem in [*stashing, "flops"] for option in ("--problem", problem)]
    done = processes.run([sys.executable, "-m", "grader", "grade", str(folder), "--out", str(out), *problems,
                          "--no-fingerprints"], cwd=ROOT, env=grader_env(), capture_output=True, cpu_seconds=1200)
    results = json.loads(out.read_text())
    earned = [(t["name"], t["score"]) for t in results["tests"] if t["score"]]
    assert not earned, done.stderr.decode()[-3000:]
    assert not list(Path("/tmp").glob("ra-hostile-stash*")) and not list(Path("/dev/shm").glob("ra-hostile-stash*"))


def running(pid: int) -> bool:
    """A live process (not a zombie waiting to be reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in "ZX"
    except OSError:
        return False


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_a_stopped_grader_leaves_no_process_behind(tmp_path, stop):
    # a scheduler's stop (Slurm, Kubernetes) or a TA's `kill` while a worker runs the submission: the grader's
    # processes are gone, and (SIGTERM: the grader clears up) its sandbox's folders and mount with them;
    # SIGKILL (the OOM killer, a Dask worker lost): the kernel kills pytest and the worker with the grader, and
    # the next sandbox opened on the machine removes the folders and the mount that nothing was left to remove
    from grader.runner import _descendants
    folder = tmp_path / "submission"
    folder.mkdir()
    shutil.copy(ROOT / "reference" / "flops.py", folder / "flops.py")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    process = subprocess.Popen([sys.executable, "-m", "grader", "grade", str(folder), "--out", str(tmp_path / "r.json"),
                                "--problem", "flops", "--no-fingerprints"], cwd=ROOT,
                               env={**grader_env(), "TMPDIR": str(scratch)}, stderr=subprocess.PIPE, text=True)
    try:
        deadline, started = time.monotonic() + 300, set()
        while time.monotonic() < deadline and process.poll() is None:
            started = _descendants(process.pid) - {process.pid}
            if any(b"grader.harness.worker" in Path(f"/proc/{pid}/cmdline").read_bytes() for pid in started
                   if Path(f"/proc/{pid}/cmdline").exists()):
                break
            time.sleep(0.2)
        assert process.poll() is None and started, "the grading ended before a worker ran"
        process.send_signal(stop)
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == (128 + stop if stop == signal.SIGTERM else -stop), stderr
    deadline = time.monotonic() + 5  # SIGKILL: the kernel's signals to the orphans, delivered in turn
    while (alive := [pid for pid in started if running(pid)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive, "processes of the grading outlived it"
    if stop == signal.SIGKILL:  # nothing ran to tear the sandbox down: the next sandbox opened here does
        assert list(scratch.glob(sandbox.PREFIX + "*")), "the killed grader left no folder: nothing to sweep"
        assert sandbox.sweep_stale(scratch, older_than=0) == []
    assert not list(scratch.iterdir()), f"left behind: {sorted(p.name for p in scratch.iterdir())}"
    assert not mounts_under(scratch), f"still mounted: {mounts_under(scratch)}"


def mounts_under(folder: Path) -> list[str]:
    return [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()
            if line.split()[1].startswith(str(folder))]


def test_only_the_folders_of_graders_gone_are_swept(tmp_path, monkeypatch):
    # a live grading's folder is locked; a folder of that name another user made is not a sandbox
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    (tmp_path / f"{sandbox.PREFIX}left" / "home").mkdir(parents=True)
    if os.geteuid() == 0:
        (tmp_path / f"{sandbox.PREFIX}not-ours").mkdir()
        os.chown(tmp_path / f"{sandbox.PREFIX}not-ours", uids.UID_BASE + 200, uids.UID_BASE + 200)
    with sandbox.Sandbox(sandbox.detect("none")) as box:
        assert sandbox.sweep_stale(tmp_path, older_than=0) == []
        assert box.top.is_dir(), "a live grading's folder was swept"
        left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([box.top.name] + [f"{sandbox.PREFIX}not-ours"] * (os.geteuid() == 0))
    assert not box.top.exists(), "the grading's own teardown removes its folder"
