"""batch on a real Dask cluster (grader/batch/engine.py): a `dask scheduler` and two `dask worker` processes on
127.0.0.1 (tests/meta/dask_cluster.py), started and stopped by these tests.

The class: a copy of the reference, the stubs, grader/staff/samples/partial (a folder) and a zip that is not one, graded
on `tensors` alone (the cheapest problem to grade: about 15 s a submission here) through `--scheduler`, must give
the CSV and the results.json files of a batch on this machine (the embedded engine): same statuses, same scores,
same texts. The same with one worker killed while it grades (every submission still graded, the retry counted),
and a worker whose official tree differs from the coordinator's refused before anything is graded.
"""

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from grader.harness import sandbox
from tests.meta.dask_cluster import DaskCluster, children, command_line, listening, mounts_in
from tests.meta.suite import ROOT, SAMPLE, grader_env

pytest.importorskip("distributed", reason="the `cluster` extra (pip install -e '.[cluster]')")
pytestmark = [pytest.mark.meta, pytest.mark.slow, pytest.mark.timeout(1200)]

PROBLEM = "tensors"
VARYING = ("execution_time", "seconds", "seconds_per_problem")  # times: what may differ between two gradings


def make_class(folder):
    (folder / "reference").mkdir(parents=True)
    shutil.copy(ROOT / "reference" / "tensors.py", folder / "reference" / "tensors.py")
    (folder / "stubs").mkdir()
    shutil.copy(ROOT / "assignment" / "tensors.py", folder / "stubs" / "tensors.py")
    shutil.copytree(SAMPLE, folder / "partial")
    (folder / "broken.zip").write_text("not a zip")
    return folder


def batch(folder, out, *options, wait=True):
    command = [sys.executable, "-m", "grader", "batch", str(folder), "--out", str(out), "--problem", PROBLEM,
               *options]
    process = subprocess.Popen(command, cwd=ROOT, env=grader_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    return process.communicate(timeout=600) + (process.returncode,) if wait else process


def without_times(value):
    if isinstance(value, dict):
        return {k: without_times(v) for k, v in value.items() if k not in VARYING}
    if isinstance(value, list):
        return [without_times(v) for v in value]
    return value


def graded(out) -> dict:
    """submission -> (its CSV row without seconds and attempts, its results.json without wall times)."""
    rows = {r["submission"]: r for r in csv.DictReader((out / "grades.csv").open())}
    return {name: ({k: v for k, v in row.items() if k not in ("seconds", "attempts")},
                   without_times(json.loads((out / name.removesuffix(".zip") / "results.json").read_text())))
            for name, row in rows.items()}


def differences(found: dict, expected: dict) -> dict:
    """submission -> (what was found, what was expected), for those that differ."""
    return {name: (found.get(name), expected.get(name)) for name in {*found, *expected}
            if found.get(name) != expected.get(name)}


@pytest.fixture(scope="module")
def submissions(tmp_path_factory):
    return make_class(tmp_path_factory.mktemp("class") / "submissions")


@pytest.fixture(scope="module")
def local(submissions, tmp_path_factory):
    out = tmp_path_factory.mktemp("local") / "grades"
    stdout, stderr, code = batch(submissions, out, "--jobs", "2")
    assert code == 0, stderr[-3000:]
    found = graded(out)
    # the reference's copy is one: grader/copycheck.py sends it to a person (its points stand)
    assert {name: row["status"] for name, (row, _) in found.items()} == {
        "reference": "review", "stubs": "ok", "partial": "ok", "broken.zip": "unreadable"}, stderr[-3000:]
    assert float(found["reference"][0]["total"]) > 0 and float(found["stubs"][0]["total"]) == 0
    local_out.append(out)
    return found


local_out = []  # the local batch's folder, for the resume test


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with DaskCluster(tmp_path_factory.mktemp("dask")) as running:
        running.add_worker("w1")
        running.add_worker("w2")
        running.wait_for_workers(2)
        yield running


def test_a_cluster_grades_as_this_machine_does(submissions, local, cluster, tmp_path):
    stdout, stderr, code = batch(submissions, tmp_path / "grades", "--scheduler", cluster.address)
    assert code == 0, stderr[-3000:] + cluster.logs()
    assert graded(tmp_path / "grades") == local
    report = (tmp_path / "grades" / "report.md").read_text()
    assert f"Graded on the Dask cluster at {cluster.address}." in report
    workers = [line for line in report.splitlines() if line.startswith("| tcp://127.0.0.1:")]
    assert sum(int(line.split("|")[2]) for line in workers) == 4, report
    assert "No grading was lost with its worker." in report


def test_the_clusters_servers_listen_on_loopback_alone(cluster):
    """Started as docs/graders.md says (`--dashboard-address` on loopback), the scheduler, the nannies and the workers
    listen on 127.0.0.1 only: `--no-dashboard` left an HTTP server on 0.0.0.0."""
    pids = [p.pid for p in cluster.processes]
    pids += [child for pid in pids for child in children(pid)]
    addresses = listening(pids)
    assert addresses and all(a.startswith("127.0.0.1:") for a in addresses), addresses


def test_a_worker_killed_while_it_grades_costs_nothing(submissions, local, cluster, tmp_path):
    out = tmp_path / "grades"
    process = batch(submissions, out, "--scheduler", cluster.address, wait=False)
    killed, grading = None, []
    deadline = time.monotonic() + 300
    try:
        while killed is None and process.poll() is None and time.monotonic() < deadline:
            for nanny in cluster.processes[1:]:  # each worker's nanny: its child is the worker process
                for worker in children(nanny.pid):
                    grading = [c for c in children(worker) if "pytest" in command_line(c)]
                    if grading:
                        killed = worker
                        os.kill(worker, signal.SIGKILL)
                        break
                if killed:
                    break
            time.sleep(0.2)
        stdout, stderr = process.communicate(timeout=600)
    finally:
        if process.poll() is None:
            process.kill()
    assert killed is not None, "no worker was seen grading: " + stderr[-3000:]
    # the kernel killed its grading with it (grader/runner.py die_with_parent): no orphan slows the retry
    assert not [pid for pid in grading if "pytest" in command_line(pid)], "the killed worker's grading outlived it"
    # what the killed grading left (its home's tmpfs, its folder) goes with the sweep of the next sandbox made a
    # minute later on that worker (grader/harness/sandbox.py sweep_stale): here at once
    assert sandbox.sweep_stale(cluster.tmp, older_than=0) == [] and not mounts_in(cluster.tmp)
    assert process.returncode == 0, stderr[-3000:] + cluster.logs()
    found = graded(out)
    assert found == local, f"not graded as on this machine: {differences(found, local)}"
    rows = list(csv.DictReader((out / "grades.csv").open()))
    assert sum(int(r["attempts"]) for r in rows) >= len(rows) + 1, rows
    assert "Given to another worker after theirs died: " in (out / "report.md").read_text()


def official_tree(folder):
    """A copy of the official tree and the grader, to change as a grader fix would."""
    for entry in ("assignment", "reference", "tests", "grader", "conftest.py", "pyproject.toml"):
        copy = shutil.copytree if (ROOT / entry).is_dir() else shutil.copy2
        copy(ROOT / entry, folder / entry, **({"ignore": shutil.ignore_patterns("__pycache__")}
                                               if (ROOT / entry).is_dir() else {}))
    return folder


def fix(tree, path: str) -> None:
    with open(tree / path, "a") as f:
        f.write("\n# a grader fix\n")


def test_a_worker_with_another_official_tree_is_refused(submissions, tmp_path):
    tree = official_tree(tmp_path / "other-tree")
    fix(tree, f"tests/test_{PROBLEM}.py")  # a grader fix this worker has and the coordinator has not
    with DaskCluster(tmp_path / "dask") as other:
        other.add_worker("other", tree=tree)
        other.wait_for_workers(1)
        stdout, stderr, code = batch(submissions, tmp_path / "grades", "--scheduler", other.address)
    assert code == 2, stdout + stderr
    assert "has another official tree or grader" in stderr and "install the same version on every node" in stderr
    assert not (tmp_path / "grades" / "grades.csv").exists() and not list((tmp_path / "grades").glob("*/results.json"))


def test_a_second_batch_grades_only_what_changed(submissions, local, tmp_path):
    folder, out = tmp_path / "submissions", tmp_path / "grades"
    shutil.copytree(submissions, folder)
    shutil.copytree(local_out[0], out)
    stdout, stderr, code = batch(folder, out, "--jobs", "2")
    assert code == 0, stderr[-3000:]
    assert "4 submissions graded (4 kept from an earlier batch)" in stdout
    assert graded(out) == local
    shutil.copy(ROOT / "reference" / f"{PROBLEM}.py", folder / "stubs" / f"{PROBLEM}.py")  # a resubmission
    stdout, stderr, code = batch(folder, out, "--jobs", "2")
    assert code == 0, stderr[-3000:]
    assert "(3 kept from an earlier batch)" in stdout
    rows = {r["submission"]: r for r in csv.DictReader((out / "grades.csv").open())}
    assert rows["stubs"]["total"] == rows["reference"]["total"] == local["reference"][0]["total"]
    report = (out / "report.md").read_text()
    assert "Graded again: 1 (`stubs`: the submission changed)." in report
    # the resubmission is a copy of the reference: flagged for review by the copy check, its points kept
    assert f"| `stubs` | the submission changed | 0.0 (ok) | {rows['stubs']['total']} (review) |" in report


def test_a_grading_lost_with_every_worker_is_an_error_with_its_reason(tmp_path):
    from types import SimpleNamespace

    from distributed import KilledWorker

    from grader.batch import run as batch_module
    from grader.messages import GRADER_FAILED

    class Lost:
        def result(self):
            raise KilledWorker("grade-alice", SimpleNamespace(address="tcp://127.0.0.1:9"), 2)

    worker, outcome = batch_module._answer(Lost(), "alice")
    batch_module._write(tmp_path / "alice", outcome)
    assert worker == "" and outcome.status == "error" and outcome.scores == []
    assert outcome.reason == "its worker died each of the 3 times it was given one (KilledWorker; the last: " \
                             "tcp://127.0.0.1:9)"
    results = json.loads((tmp_path / "alice" / "results.json").read_text())
    assert results["score"] == 0 and GRADER_FAILED in results["output"]
    row = outcome.row(["tensors"])
    assert row[1] == "error" and row[-2] == outcome.reason


def test_a_grader_fix_to_one_problem_grades_that_problem_again_alone(tmp_path):
    """grader/batch/run.py: a fix that changes one problem's own files (identity.problem_hashes) grades that problem
    again and keeps the others' results; a fix to what every problem shares grades them all."""
    tree = official_tree(tmp_path / "tree")
    folder, out = tmp_path / "submissions", tmp_path / "grades"
    (folder / "partial").mkdir(parents=True)
    shutil.copy(SAMPLE / "flops.py", folder / "partial" / "flops.py")
    shutil.copy(ROOT / "assignment" / "memory.py", folder / "partial" / "memory.py")

    def batch_in_tree():
        done = subprocess.run([sys.executable, "-m", "grader", "batch", str(folder), "--out", str(out), "--problem",
                               "flops", "--problem", "memory", "--jobs", "1", "--no-fingerprints"], cwd=tree,
                              env={**grader_env(), "PYTHONPATH": str(tree)}, capture_output=True, text=True,
                              timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        results = json.loads((out / "partial" / "results.json").read_text())
        ran = sorted(results["extra_data"].pop("seconds_per_problem"))
        del results["extra_data"]["examples_per_problem"]  # figures of the run: of the problems graded in it
        return without_times(results), ran, out / "report.md"

    first, graded_now, _ = batch_in_tree()
    assert graded_now == ["flops", "memory"] and first["score"] > 0
    fix(tree, "tests/test_memory.py")
    again, graded_now, report = batch_in_tree()
    assert graded_now == ["memory"], "flops' own files did not change: its results are kept"
    assert again == first, "the same results, the kept problem's and the graded one's"
    assert "`partial`: the grader changed for memory alone" in report.read_text()
    fix(tree, "tests/checks.py")  # what every problem's tests share
    _, graded_now, report = batch_in_tree()
    assert graded_now == ["flops", "memory"] and "`partial`: the grader changed)" in report.read_text()


def test_the_throughput_benchmark_runs_and_prints_its_figures():
    """tests/benchmarks/batch_cluster.py reads the class report's throughput line: run small, so that a change of
    that line cannot break the benchmark unseen (it did once). Its figures are printed, never asserted."""
    done = subprocess.run([sys.executable, "-m", "tests.benchmarks.batch_cluster", "--submissions", "2"], cwd=ROOT,
                          env=grader_env(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    print(done.stdout)
    lines = done.stdout.splitlines()
    assert [line.split(":")[0] for line in lines[:3]] == ["1 worker", "2 workers", "throughput with 2 workers / with 1"]
    assert sum(int(line.split(" graded ")[1].split(":")[0]) for line in lines[3:]) == 2, done.stdout
