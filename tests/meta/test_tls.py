"""batch on a Dask cluster that speaks TLS alone (issue 44): certificates made by the test (a CA of its own and one
certificate for 127.0.0.1, with openssl), given to the scheduler, the worker and batch's client as Dask's settings
in the environment (docs/graders.md gives them). The class of tests/meta/test_cluster.py, graded over tls://,
gives the CSV and results.json files of a batch on this machine; a client without the certificates, over plain
TCP or over TLS, gets nothing from that scheduler.
"""

import shutil
import subprocess

import pytest

from tests.meta import test_cluster
from tests.meta.dask_cluster import DaskCluster
from tests.meta.test_cluster import batch, differences, graded

pytest.importorskip("distributed", reason="the `cluster` extra (pip install -e '.[cluster]')")
pytestmark = [pytest.mark.meta, pytest.mark.slow, pytest.mark.timeout(1200)]

submissions = test_cluster.submissions  # the class, and its local batch: test_cluster's fixtures
local = test_cluster.local


def certificates(folder) -> dict[str, str]:
    """A CA and a certificate it signed for 127.0.0.1 (the scheduler's, the worker's and the client's), as Dask's
    TLS settings: mutual TLS, encryption required."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: no certificates")
    folder.mkdir(exist_ok=True)

    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=resource-accounting test CA")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "node.key", "-out", "node.csr", "-subj", "/CN=127.0.0.1")
    (folder / "san.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out",
            "node.pem", "-days", "2", "-extfile", "san.cnf")
    settings = {"DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION": "True",
                "DASK_DISTRIBUTED__COMM__TLS__CA_FILE": str(folder / "ca.pem")}
    for role in ("SCHEDULER", "WORKER", "CLIENT"):
        settings[f"DASK_DISTRIBUTED__COMM__TLS__{role}__CERT"] = str(folder / "node.pem")
        settings[f"DASK_DISTRIBUTED__COMM__TLS__{role}__KEY"] = str(folder / "node.key")
    return settings


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    return certificates(tmp_path_factory.mktemp("certificates"))


@pytest.fixture(scope="module")
def cluster(tls, tmp_path_factory):
    with DaskCluster(tmp_path_factory.mktemp("dask"), tls=tls) as running:
        running.add_worker("w1")
        running.wait_for_workers(1)
        yield running


def test_a_tls_cluster_grades_as_this_machine_does(submissions, local, cluster, tls, tmp_path, monkeypatch):
    assert cluster.address.startswith("tls://127.0.0.1:"), cluster.address
    for name, value in tls.items():  # batch's environment: grader_env() copies this process's
        monkeypatch.setenv(name, value)
    stdout, stderr, code = batch(submissions, tmp_path / "grades", "--scheduler", cluster.address)
    assert code == 0, stderr[-3000:] + cluster.logs()
    found = graded(tmp_path / "grades")
    assert found == local, f"not graded as on this machine: {differences(found, local)}"
    assert f"Graded on the Dask cluster at {cluster.address}." in (tmp_path / "grades" / "report.md").read_text()


@pytest.mark.parametrize("client", ["plain TCP", "TLS without settings", "a certificate of another CA"])
def test_a_client_without_the_certificates_gets_nothing(submissions, cluster, tls, client, tmp_path, monkeypatch):
    address, expected = cluster.address, f"no Dask scheduler at {cluster.address}: "
    if client == "plain TCP":
        address = address.replace("tls://", "tcp://")
        expected = f"no Dask scheduler at {address}: "
    elif client == "TLS without settings":
        expected = f"{address} speaks TLS, and this client has no CA file or certificate"
    else:
        stranger = certificates(tmp_path / "stranger")
        for name, value in tls.items():  # the cluster's CA, a client certificate it did not sign
            monkeypatch.setenv(name, stranger[name] if "__CLIENT__" in name else value)
    stdout, stderr, code = batch(submissions, tmp_path / "grades", "--scheduler", address)
    assert code == 2 and f"resource-grader batch: {expected}" in stderr, stdout + stderr
    assert not (tmp_path / "grades" / "grades.csv").exists() and not list((tmp_path / "grades").glob("*/results.json"))
