"""A Dask cluster of separate hosts (tests/meta/hosts.py: network namespaces joined by a bridge, each host's folders
hidden from the others): the scheduler on one, a worker on each of two more, the coordinator (`batch --scheduler`)
on this machine. Nothing can work by sharing loopback or files: each worker reads the course secret from a file on
its own host, the submissions travel as bytes (no host sees the class's folder), the results come back. The class
is graded as a local batch grades it."""

import stat
import subprocess
import sys

import pytest

from tests.meta import test_cluster
from tests.meta.dask_cluster import DaskCluster
from tests.meta.hosts import NETWORK, Hosts
from tests.meta.suite import GRADING_SECRET, grader_env
from tests.meta.test_cluster import batch, graded

pytest.importorskip("distributed", reason="the `cluster` extra (pip install -e '.[cluster]')")
pytestmark = [pytest.mark.meta, pytest.mark.slow, pytest.mark.timeout(1200),
              pytest.mark.skipif(Hosts.why_not() is not None, reason=str(Hosts.why_not()))]

WORKERS = ("w1", "w2")
submissions, local = test_cluster.submissions, test_cluster.local  # the class, and what a local batch gives


@pytest.fixture(scope="module")
def hosts(submissions, tmp_path_factory):
    base = tmp_path_factory.mktemp("hosts")
    with Hosts(["scheduler", *WORKERS], base / "hosts", hidden=[submissions.parent]) as made:
        for worker in WORKERS:
            secret = made.folder_of(worker) / "secret"
            secret.write_text(GRADING_SECRET)
            secret.chmod(stat.S_IRUSR | stat.S_IWUSR)
        with DaskCluster(base / "dask", hosts=made) as cluster:
            for worker in WORKERS:  # the secret from its own host's file, not from the coordinator's environment
                cluster.add_worker(worker, env={"RA_GRADING_SECRET": None,
                                                "RA_GRADING_SECRET_FILE": str(made.folder_of(worker) / "secret")})
            cluster.wait_for_workers(len(WORKERS))
            yield made, cluster


REACH = """import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5).close()
    print("reached")
except OSError as exc:
    print(type(exc).__name__)"""
SEEN = "import os, sys\nprint(*[os.path.exists(p) for p in sys.argv[1:]])"


def on_host(hosts: Hosts, name: str, code: str, *args) -> str:
    """What a Python snippet prints on host `name`, given `args`."""
    done = subprocess.run(hosts.run(name, [sys.executable, "-c", code, *map(str, args)]), capture_output=True,
                          text=True, env={**grader_env(), "RA_HIDDEN": hosts.hidden_from(name)}, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_cluster_of_separate_hosts_grades_as_this_machine_does(submissions, local, hosts, tmp_path):
    made, cluster = hosts
    assert cluster.address.startswith(f"tcp://{made.address('scheduler')}:"), cluster.address
    _, stderr, code = batch(submissions, tmp_path / "grades", "--scheduler", cluster.address)
    assert code == 0, stderr[-3000:] + cluster.logs()
    assert graded(tmp_path / "grades") == local
    report = (tmp_path / "grades" / "report.md").read_text()
    rows = [line for line in report.splitlines() if line.startswith(f"| tcp://{NETWORK}.")]
    assert {row.split("|")[1].strip().rsplit(":", 1)[0] for row in rows} <= {
        f"tcp://{made.address(w)}" for w in WORKERS}, report
    assert sum(int(row.split("|")[2]) for row in rows) == len(local), report


def test_each_host_has_its_own_loopback_and_files(submissions, hosts):
    made, cluster = hosts
    port = cluster.address.rsplit(":", 1)[1]
    assert on_host(made, "w1", REACH, made.address("scheduler"), port) == "reached"
    assert on_host(made, "w1", REACH, "127.0.0.1", port) == "ConnectionRefusedError", "the scheduler's loopback"
    paths = [submissions / "reference" / "tensors.py", made.folder_of("w1") / "secret", made.folder_of("w2") / "secret"]
    assert on_host(made, "w1", SEEN, *paths).split() == ["False", "True", "False"], (
        "w1 sees its own secret alone, and no submission")
