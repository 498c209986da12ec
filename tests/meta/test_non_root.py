"""Workers that are not root (issue 44): a Dask worker run as the ordinary user `nobody`, then Slurm jobs of that
user started by dask-jobqueue's SLURMCluster (grader/staff/slurm.py), each grading the class of
tests/meta/test_cluster.py through `batch --scheduler` as a batch on this machine (as root) does: same CSV, same
results.json files. There the sandbox is what an ordinary user can have, the namespaces layer (bubblewrap in
unprivileged user namespaces, one uid), as `doctor` run as that user says; without it a worker refuses to grade
unless --no-sandbox.

The user runs the checkout from a venv made with the system's Python (tests/meta/shared_venv.py): the meta-tests'
interpreter may live where other users cannot reach it. The Slurm cluster is this machine
(tests/meta/slurm_cluster.py); where Slurm cannot be installed, its test is skipped with the reason.
"""

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.meta import shared_venv, slurm_cluster
from tests.meta.dask_cluster import DaskCluster
from tests.meta.suite import ROOT, grader_env
from tests.meta.test_cluster import PROBLEM, batch, differences, graded, make_class, official_tree

pytest.importorskip("distributed", reason="the `cluster` extra (pip install -e '.[cluster]')")
pytestmark = [pytest.mark.meta, pytest.mark.slow, pytest.mark.timeout(1800)]


@pytest.fixture(scope="module")
def python():
    """The shared venv's interpreter, which the ordinary user runs."""
    why = shared_venv.unavailable()
    if why:
        pytest.skip(f"no worker as an ordinary user here: {why}")
    return str(shared_venv.venv() / "bin" / "python")


@pytest.fixture(scope="module")
def user():
    return pwd.getpwnam(shared_venv.USER)


@pytest.fixture(scope="module")
def folder(user):
    """A folder the ordinary user can cross (the meta-tests' tmp_path is private to root): the class, read-only
    to that user, and a folder of that user's, where its commands run and write."""
    top = Path(tempfile.mkdtemp(prefix="ra-non-root-"))
    os.chmod(top, 0o755)
    make_class(top / "submissions")
    subprocess.run(["chmod", "-R", "a+rX", str(top / "submissions")], check=True)
    (top / "user").mkdir(mode=0o700)
    os.chown(top / "user", user.pw_uid, user.pw_gid)
    yield top
    shutil.rmtree(top, ignore_errors=True)


@pytest.fixture(scope="module")
def tree(folder):
    """The official tree and the grader as a node of the ordinary user's has them: its own copy, readable by all.
    (This checkout's own cannot serve: a grading as root with the user layer alone closes its reference to other
    users, grader/harness/sandbox.py, and so changes the tree's hash as such a user computes it.)"""
    copy = official_tree(folder / "tree")
    subprocess.run(["chmod", "-R", "a+rX", str(copy)], check=True)
    return copy


@pytest.fixture(scope="module")
def local(folder, tmp_path_factory):
    """The class graded by a batch on this machine, as root: what the ordinary user's workers must give."""
    out = tmp_path_factory.mktemp("local") / "grades"
    stdout, stderr, code = batch(folder / "submissions", out, "--jobs", "2")
    assert code == 0, stderr[-3000:]
    return graded(out)


def user_env(folder: Path, **extra: str) -> dict:
    """The ordinary user's environment: the meta-tests' secret, its own home and temporary folder."""
    return {**grader_env(), "HOME": str(folder / "user"), "TMPDIR": str(folder / "user"), **extra}


def without_bwrap(folder: Path) -> str:
    """A PATH with every command of this machine's but bwrap: a node where bubblewrap is not installed."""
    bin_ = folder / "no-bwrap-bin"
    if not bin_.exists():
        bin_.mkdir()
        for directory in ("/usr/bin", "/bin", "/usr/sbin", "/sbin"):
            for tool in os.scandir(directory):
                if tool.name != "bwrap" and not (bin_ / tool.name).exists():
                    (bin_ / tool.name).symlink_to(tool.path)
        os.chmod(bin_, 0o755)
    return str(bin_)


def doctor(python: str, folder: Path, **env: str) -> str:
    done = subprocess.run(shared_venv.as_user([python, "-m", "grader", "doctor"]), cwd=folder / "user",
                          env=user_env(folder, **env), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_doctor_as_an_ordinary_user_says_what_is_on(python, folder):
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed (make sandbox)")
    found = doctor(python, folder)
    assert "\nuser        off  the grader is not root" in found, found
    assert "\nnamespaces  on   bwrap" in found, found
    assert "sandbox: limits + namespaces\nbatch (other people's code): allowed" in found, found
    without = doctor(python, folder, PATH=without_bwrap(folder))
    assert "\nnamespaces  off  bwrap not found" in without, without
    assert "batch (other people's code): refused without --no-sandbox" in without, without


def test_doctor_as_root_tries_what_an_ordinary_user_gets(python, folder):
    """Root's doctor tries the namespaces layer as `nobody` with its own interpreter: here, the shared venv's."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed (make sandbox)")
    done = subprocess.run([python, "-m", "grader", "doctor"], cwd=folder, env=grader_env(), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "\n  namespaces  on   (tried as user nobody)" in done.stdout, done.stdout
    assert "closed to other users" not in done.stdout, done.stdout


@pytest.fixture(scope="module")
def nobody_cluster(python, user, tree, tmp_path_factory):
    """A scheduler (root) and a worker run as the ordinary user, with the shared venv."""
    with DaskCluster(tmp_path_factory.mktemp("dask")) as running:
        running.add_worker("nobody", command=shared_venv.as_user([python, "-m", "dask"]), uid=user.pw_uid,
                           tree=tree)
        running.wait_for_workers(1)
        yield running


def test_a_worker_that_is_not_root_grades_as_this_machine_does(folder, local, nobody_cluster, tmp_path):
    out = tmp_path / "grades"
    stdout, stderr, code = batch(folder / "submissions", out, "--scheduler", nobody_cluster.address)
    assert code == 0, stderr[-3000:] + nobody_cluster.logs()
    found = graded(out)
    assert found == local, f"not graded as on this machine: {differences(found, local)}"


def test_a_worker_without_a_sandbox_refuses_unless_told(python, user, folder, tree, local, tmp_path):
    with DaskCluster(tmp_path / "dask") as running:
        running.add_worker("no-bwrap", command=shared_venv.as_user([python, "-m", "dask"], PATH=without_bwrap(folder)),
                           uid=user.pw_uid, tree=tree)
        running.wait_for_workers(1)
        stdout, stderr, code = batch(folder / "submissions", tmp_path / "refused", "--scheduler", running.address)
        assert code == 2, stdout + stderr
        assert "cannot sandbox the gradings" in stderr and "or pass --no-sandbox" in stderr, stderr
        assert not list((tmp_path / "refused").glob("*/results.json"))
        stdout, stderr, code = batch(folder / "submissions", tmp_path / "unsandboxed", "--scheduler", running.address,
                                     "--no-sandbox")
    assert code == 0, stderr[-3000:]
    rows = {name: row for name, (row, _) in graded(tmp_path / "unsandboxed").items()}
    assert {name: (row["status"], row["total"]) for name, row in rows.items()} == {
        name: (row["status"], row["total"]) for name, (row, _) in local.items()}


@pytest.fixture(scope="module")
def slurm():
    why = slurm_cluster.missing()
    if why:
        pytest.skip(f"no Slurm cluster here: {why}")
    with slurm_cluster.SlurmCluster() as running:
        yield running


def test_slurm_jobs_of_an_ordinary_user_grade_as_this_machine_does(python, user, folder, tree, local, slurm):
    out = folder / "user" / "grades"
    command = [python, "-m", "grader.staff.slurm", "--jobs", "2", "--cores", "1", "--memory", "2GB",
               "--host", "127.0.0.1", "--wait", "300", "--",
               str(folder / "submissions"), "--out", str(out), "--problem", PROBLEM]
    done = subprocess.run(shared_venv.as_user(command), cwd=folder / "user",
                          env=user_env(folder, PYTHONPATH=str(tree), **slurm.env_extra), capture_output=True, text=True,
                          timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:] + slurm.logs()
    found = graded(out)
    assert found == local, f"not graded as on this machine: {differences(found, local)}"
    report = (out / "report.md").read_text()
    assert "Graded on the Dask cluster at tcp://127.0.0.1:" in report, report
    log = (slurm.folder / "slurmd.log").read_text().splitlines()
    launched = [line for line in log if "Launching batch job" in line]
    assert len(launched) == 2 and all(line.endswith(f"for UID {user.pw_uid}") for line in launched), launched
    assert slurm.jobs() == [], "the SLURMCluster's jobs outlived it"


def test_doctor_as_root_names_an_interpreter_other_users_cannot_reach():
    closed = shared_venv.closed_ancestor(Path(os.path.realpath(sys.executable)))
    if closed is None or os.geteuid() != 0 or shutil.which("bwrap") is None:
        pytest.skip("needs root, bubblewrap and an interpreter in a folder closed to other users (as here: /root)")
    done = subprocess.run([sys.executable, "-m", "grader", "doctor"], cwd=ROOT, env=grader_env(), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "\n  namespaces  off  tried as user nobody: bwrap: " in done.stdout, done.stdout
    assert f"\n  {closed} is closed to other users: an ordinary user's grader needs its own Python" in done.stdout
