"""What a worker must agree on with the coordinator before it grades (grader/batch/task.py), and how it says so.

Grades must not depend on the node: a worker refuses a task (`settle`, its first answer to every task) and the
coordinator refuses the batch up front (grader/batch/engine.py `check_workers`, from each worker's `identity`), by one
rule (`mismatch`), where

- its `official_hash` differs from the coordinator's (the official tree, the grader and the versions that decide a
  grade: install the same version on every node);
- its course secret differs, or it has none (compared by a keyed hash, `secret_check`: the secret never travels;
  each worker reads its own, from the file the operator named, the same path on every node, or its environment);
- it cannot sandbox the gradings when a sandbox is required, or its gradings could reach the network while the
  cluster listens on plain TCP (unless --insecure-cluster).

`problem_hashes` is the official hash in parts, one per problem: a grader fix that touches one problem's files alone
regrades that problem alone (grader/batch/run.py).
"""

import hashlib
import hmac
import json
import sys
import threading
from dataclasses import replace
from importlib import metadata
from pathlib import Path

from grader import OFFICIAL_ROOT, registry
from grader.harness import sandbox
from grader.harness.boundary import STAFF, WORKSPACE
from grader.job import Job, Settings, resolve, shared_fingerprinter
from grader.seed import SecretError, course_secret

HASHED = (*WORKSPACE, "grader")  # what decides a grade: the official tree and the grader ...
NOT_HASHED = tuple(p for p in STAFF if p.startswith("tests/"))  # ... but not the project's own tests, never run
# The pinned packages a grade depends on (their versions enter the hash; pyproject.toml pins them).
VERSIONED = ("torch", "einops", "jaxtyping", "beartype", "hypothesis", "pytest", "pytest-timeout", "numpy")
_hash_lock = threading.Lock()
_hash: str | None = None


def official_hash() -> str:
    """A content hash of this installation's official tree (assignment, reference, tests but the meta-tests and
    benchmarks, conftest.py, pyproject.toml) and grader, and of the Python and package versions that decide a
    grade."""
    global _hash
    with _hash_lock:
        if _hash is None:
            digest = hashlib.sha256(_versions())
            for rel, content in _official_files():
                digest.update(f"\0{rel}\0{len(content)}\0".encode() + content)
            _hash = digest.hexdigest()
        return _hash


def problem_hashes() -> dict[str, str]:
    """official_hash in parts: for each problem, a content hash of the files that are its own (PROBLEM_FILES: its
    stub, reference, tests, strategies, scenarios, shared test code and catalogued mistakes), and under "" one of
    everything else (the grader, the rubric, the tests' common code, the versions), a change to which concerns every
    problem. A grader fix that changes one problem's files alone regrades that problem alone (grader/batch/run.py)."""
    owner = {path.format(module=p.module, id=p.id): p.id for p in registry.PROBLEMS for path in PROBLEM_FILES}
    digests = {"": hashlib.sha256(_versions()), **{p.id: hashlib.sha256() for p in registry.PROBLEMS}}
    for rel, content in _official_files():
        digests[owner.get(rel, "")].update(f"\0{rel}\0{len(content)}\0".encode() + content)
    return {name: digest.hexdigest() for name, digest in digests.items()}


PROBLEM_FILES = ("assignment/{module}.py", "reference/{module}.py", "tests/test_{id}.py", "tests/strategies/{id}.py",
                 "tests/scenarios/{id}.py", "tests/common/{id}.py", "tests/mistakes/{id}.py")


def _versions() -> bytes:
    found = [f"python {sys.version_info[0]}.{sys.version_info[1]}\0"]
    for name in VERSIONED:
        try:
            found.append(f"{name} {metadata.version(name)}\0")
        except metadata.PackageNotFoundError:
            found.append(f"{name} -\0")
    return "".join(found).encode()


def _official_files():
    """(path relative to the official root, content) of each file official_hash covers, in a fixed order."""
    for entry in HASHED:
        root = OFFICIAL_ROOT / entry
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for path in files:
            rel = path.relative_to(OFFICIAL_ROOT)
            if "__pycache__" in rel.parts or path.suffix == ".pyc" or any(
                    part.startswith(".") for part in rel.parts) or rel.as_posix().startswith(NOT_HASHED):
                continue
            yield rel.as_posix(), path.read_bytes()


def secret_check(secret: bytes | None) -> str | None:
    """What coordinator and worker compare to agree on the course secret without sending it: a keyed hash."""
    return None if secret is None else hmac.new(secret, b"resource-accounting secret check", "sha256").hexdigest()


def identity(secret_file: str | None = None) -> str:
    """What a worker says about itself, as JSON: its official hash, its secret's check ("none: why" where it has
    no secret), its sandbox layers."""
    try:
        check = secret_check(course_secret(Path(secret_file) if secret_file else None))
    except SecretError as exc:
        check = f"none: {exc}"
    return json.dumps({"official": official_hash(), "secret": check, "layers": list(sandbox.detect().active)})


WORKER = "{worker}"  # where a refusal names the worker


def mismatch(job: Job, official: str, secret: str | None) -> str | None:
    """Why a worker whose official hash is `official` and whose secret's check is `secret` ("none: why" where it
    has none) must not grade `job`, or None: the rule the coordinator applies to every worker up front, and each
    worker to each task."""
    if job.official is not None and official != job.official:
        return (f"{WORKER} has another official tree or grader (hash {official[:12]}, the coordinator's "
                f"{job.official[:12]}): install the same version on every node")
    if job.secret_check is not None and secret != job.secret_check:
        if secret is None or secret.startswith("none: "):
            return f"{WORKER} has no course secret: {(secret or 'none: it has none')[6:]}"
        return f"{WORKER} has another course secret than the coordinator"
    return None


_settled: dict[str, Settings | str] = {}
_settled_lock = threading.Lock()


def settle(job: Job, address: str) -> Settings | str:
    """`job` as this worker grades it (grader.job.resolve: its layers, its secret, its fingerprinter, resolved once
    per process for the jobs of a batch), or why this worker must not grade it."""
    key = job.of("").to_json()
    with _settled_lock:
        if key not in _settled:
            _settled[key] = _resolved(job)
    found = _settled[key]
    if isinstance(found, str):
        return found.replace(WORKER, f"worker {address}")
    plain = address.startswith(("tcp://", "ws://"))
    if job.sandbox != "none" and plain and "namespaces" not in found.layers.active and not job.plain_tcp:
        return (f"worker {address}: its gradings could reach the network (no namespaces layer) and the cluster "
                "listens on plain TCP, where any connection runs code as the worker's user: use tls:// with "
                "certificates (Dask's security settings), or pass --insecure-cluster")
    return found


def _resolved(job: Job) -> Settings | str:
    """This process's settings for `job`, or why it must not grade it (WORKER where its name goes): another
    official tree (no secret read), no secret or another, no sandbox; the fingerprinter made last."""
    if job.official is not None and job.official != official_hash():
        return mismatch(job, official_hash(), job.secret_check) or ""
    try:
        settings = resolve(replace(job, fingerprints=False))
    except SecretError as exc:
        return f"{WORKER} has no course secret: {exc}"
    why = mismatch(job, official_hash(), secret_check(settings.secret))
    if why:
        return why
    if job.sandbox != "none" and not settings.layers.sandboxed:
        return (f"{WORKER} cannot sandbox the gradings ({settings.layers.describe()}): run `resource-grader "
                "doctor` on that node, or pass --no-sandbox")
    if job.fingerprints:
        settings = replace(settings, fingerprinter=shared_fingerprinter(job.ids, job.sandbox, job.limits)[0])
    return settings
