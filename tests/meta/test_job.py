"""A grading's job (grader/job.py): frozen, carried to a cluster's worker as JSON and read back whole, resolved on
the host that grades it; a worker's refusal (grader/batch/identity.py `settle`) is its first answer, and the same rule
the coordinator applies to every worker up front."""

import dataclasses
import json

import pytest

from grader.batch import identity
from grader.job import Job, resolve
from grader.outcome import Outcome
from grader.runner import Limits
from grader.seed import SecretError

pytestmark = pytest.mark.meta

SECRET = b"a course secret of more than sixteen bytes"


def a_job(**changes) -> Job:
    kept = Outcome("alice", "ok", 12.0, notes=["kept"])
    job = Job(Limits(300.0, 30.0, 5.0, 2048), ("flops", "tensors"), "none", True, True, "/etc/secret", "b1",
              "0" * 64, identity.secret_check(SECRET), True, 2, "alice.zip", kept)
    return dataclasses.replace(job, **changes)


def test_a_job_crosses_as_json_and_reads_back_whole():
    job = a_job()
    text = job.to_json()
    assert isinstance(json.loads(text), dict)
    assert Job.from_json(text) == job
    assert Job.from_json(Job().to_json()) == Job()
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.name = "bob"
    assert job.of("bob") == dataclasses.replace(job, name="bob", kept=None)


@pytest.mark.parametrize("text, says", [
    ("[]", "not a job"),
    (json.dumps({**json.loads(Job().to_json()), "limits": {"seconds": 3}}), "not a job: TypeError"),
    (json.dumps({**json.loads(Job().to_json()), "sandbox": "chroot"}), "sandbox mode 'chroot'"),
    (json.dumps({**json.loads(Job().to_json()), "problems": ["flopz"]}), "unknown problem"),
])
def test_what_is_not_a_job_is_refused(text, says):
    with pytest.raises(ValueError, match=says):
        Job.from_json(text)


def test_it_resolves_on_this_host(tmp_path, monkeypatch):
    secret = tmp_path / "secret"
    secret.write_bytes(SECRET)
    settings = resolve(Job(problems=("flops",), sandbox="none", fingerprints=False, secret_file=str(secret)))
    assert settings.secret == SECRET and settings.problems == ["flops"] and not settings.layers.sandboxed
    assert settings.fingerprinter is None
    assert resolve(Job(sandbox="none", fingerprints=False, seeded=False)).secret is None, "--local reads no secret"
    monkeypatch.delenv("RA_GRADING_SECRET", raising=False)
    monkeypatch.delenv("RA_GRADING_SECRET_FILE", raising=False)
    with pytest.raises(SecretError):
        resolve(Job(sandbox="none", fingerprints=False, secret_file=str(tmp_path / "none")))


def test_a_worker_refuses_what_it_must_not_grade_and_names_itself(tmp_path, monkeypatch):
    monkeypatch.setattr(identity, "_settled", {})
    secret = tmp_path / "secret"
    secret.write_bytes(SECRET)
    mine = a_job(official=identity.official_hash(), secret_file=str(secret), fingerprints=False)
    assert identity.settle(mine, "tcp://10.0.0.9:1").secret == SECRET
    other_tree = a_job(official="f" * 64, secret_file=str(tmp_path / "absent"))
    assert identity.settle(other_tree, "tcp://10.0.0.9:1").startswith(
        "worker tcp://10.0.0.9:1 has another official tree or grader"), "refused before any secret is read"
    no_secret = a_job(official=identity.official_hash(), secret_file=str(tmp_path / "absent"))
    assert identity.settle(no_secret, "tcp://10.0.0.9:2").startswith("worker tcp://10.0.0.9:2 has no course secret")
    other_secret = a_job(official=identity.official_hash(), secret_file=str(secret), secret_check="e" * 64)
    assert identity.settle(other_secret, "tcp://10.0.0.9:3") == \
        "worker tcp://10.0.0.9:3 has another course secret than the coordinator"
    # the coordinator's check of each worker, up front, is the same rule
    info = json.loads(identity.identity(str(secret)))
    assert identity.mismatch(mine, info["official"], info["secret"]) is None
    assert identity.mismatch(other_secret, info["official"], info["secret"]) == \
        f"{identity.WORKER} has another course secret than the coordinator"
