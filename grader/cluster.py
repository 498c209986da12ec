"""batch's gradings as tasks of Dask distributed: on this machine, or on a running Dask cluster.

One code path for both. The coordinator (grader/batch.py) packs each submission as a zip (`pack`) and submits
`grade_task` through an `Engine`: an in-process Dask cluster by default (one worker thread per job, as the thread
pool was; each grading is its own processes anyway), or the scheduler at `--scheduler` (`dask scheduler` and
`dask worker` started by hand, dask_jobqueue's SLURMCluster, a Kubernetes operator). A worker shares nothing with
the coordinator but the installed package:

- the task carries the submission as bytes and returns what the grading wrote (results.json and the row's data) as
  JSON; the coordinator writes the files;
- the task carries the coordinator's `official_hash` (the official tree, the grader and the versions that decide a
  grade); a worker whose own hash differs refuses it, and so does a worker whose course secret differs (compared by
  a keyed hash, `secret_check`) or that has no sandbox when one is required: grades must not depend on the node;
- the course secret never travels: each worker reads it itself, from the file the operator named (the same path
  on every node) or from its environment, as `grade` does.

A worker that dies while it grades (killed, out of memory, its node lost) costs no points: the scheduler gives the
task to another worker, at most `distributed.scheduler.allowed-failures` times (the embedded cluster: `retries`),
then the future raises KilledWorker and the submission is `error`. Each start of a task is logged as a Dask event
(topic TOPIC), from which the coordinator counts the retries. Time limits stay the sandbox's, on the worker.
"""

import collections
import contextlib
import hashlib
import hmac
import io
import json
import os
import queue
import sys
import tempfile
import threading
import traceback
import zipfile
from dataclasses import asdict
from importlib import metadata
from pathlib import Path

from grader import OFFICIAL_ROOT, registry
from grader.harness.boundary import STAFF, WORKSPACE
from grader.submission import MAX_FILE_BYTES, SubmissionError, folder_files, is_zip

TOPIC = "resource-grader-start"
WAKE = 10  # seconds: how often a batch looks for workers that joined while every thread was busy
HASHED = (*WORKSPACE, "grader")  # what decides a grade: the official tree and the grader ...
NOT_HASHED = tuple(p for p in STAFF if p.startswith("tests/"))  # ... but not the project's own tests, never run
# The pinned packages a grade depends on (their versions enter the hash; pyproject.toml pins them).
VERSIONED = ("torch", "einops", "jaxtyping", "beartype", "hypothesis", "pytest", "pytest-timeout", "numpy")
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # a fixed date: the same folder always packs to the same bytes

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
    problem. A grader fix that changes one problem's files alone regrades that problem alone (grader/batch.py)."""
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


def pack(submission: Path) -> bytes:
    """A submission as the bytes a task carries: a zip as it is; a folder as a zip of the files grading reads
    (grader/submission.py `folder_files`), in a fixed order and date, so that the same folder gives the same bytes.
    Raises SubmissionError where grading could not read it either (a symbolic link, a file too large)."""
    if not submission.is_dir():
        is_zip(submission)  # refuses a link; what is not a zip, the worker's grading says so
        return submission.read_bytes()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for rel, path in sorted(folder_files(submission).items()):
            if path.stat().st_size > MAX_FILE_BYTES:
                raise SubmissionError(f"{rel} is {path.stat().st_size} bytes, over the {MAX_FILE_BYTES}-byte limit")
            info = zipfile.ZipInfo(rel.as_posix(), ZIP_TIME)
            info.external_attr = 0o644 << 16
            archive.writestr(info, path.read_bytes(), zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


# -- on the worker --------------------------------------------------------------------------------------

_fingerprinters: dict[tuple, object] = {}
_fingerprinters_lock = threading.Lock()


def fingerprinter_for(problems: list[str], mode: str, limits, build=None):
    """This process's Fingerprinter for (problems, sandbox mode, limits): built once (the catalogue's answers, up
    front) and shared by the gradings of this process; `build` builds it (the coordinator's, in-process)."""
    from grader.grading import fingerprinter
    from grader.harness import sandbox

    key = (tuple(problems), mode, tuple(asdict(limits).values()))
    with _fingerprinters_lock:
        if key not in _fingerprinters:
            layers = sandbox.detect(mode)
            try:
                _fingerprinters[key] = (build or (lambda: fingerprinter(problems, layers, limits, up_front=True)))()
            except Exception:  # noqa: BLE001 - the grades do not need them
                print(f"resource-grader batch: no fingerprints:\n{traceback.format_exc()}", file=sys.stderr)
                _fingerprinters[key] = None, "the catalogue's answers could not be computed (the grader's stderr)"
        return _fingerprinters[key]


def identity(secret_file: str | None = None) -> dict:
    """What a worker says about itself: its official hash, its secret's check (None: no secret), its sandbox."""
    from grader.harness import sandbox
    from grader.seed import SecretError, course_secret

    try:
        check = secret_check(course_secret(Path(secret_file) if secret_file else None))
    except SecretError as exc:
        check = f"none: {exc}"
    return {"official": official_hash(), "secret": check, "layers": list(sandbox.detect().active)}


def refusal(job: dict, address: str) -> str | None:
    """Why this worker must not grade `job`, or None."""
    from grader.harness import sandbox

    if job["official"] != official_hash():
        return (f"worker {address} has another official tree or grader (hash {official_hash()[:12]}, the "
                f"coordinator's {job['official'][:12]}): install the same version on every node")
    if job["secret_check"] is not None:
        from grader.seed import SecretError, course_secret

        try:
            mine = secret_check(course_secret(Path(job["secret_file"]) if job["secret_file"] else None))
        except SecretError as exc:
            return f"worker {address} has no course secret: {exc}"
        if mine != job["secret_check"]:
            return f"worker {address} has another course secret than the coordinator"
    layers = sandbox.detect(job["sandbox"])
    if job["sandbox"] != "none" and not layers.sandboxed:
        return (f"worker {address} cannot sandbox the gradings ({layers.describe()}): run `resource-grader "
                "doctor` on that node, or pass --no-sandbox")
    plain = address.startswith(("tcp://", "ws://"))
    if job["sandbox"] != "none" and plain and "namespaces" not in layers.active and not job.get("plain_tcp"):
        return (f"worker {address}: its gradings could reach the network (no namespaces layer) and the cluster "
                "listens on plain TCP, where any connection runs code as the worker's user: use tls:// with "
                "certificates (Dask's security settings), or pass --insecure-cluster")
    return None


def _address() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return "local"


def _log_start(job: dict, address: str) -> None:
    try:
        from distributed import get_worker

        get_worker().log_event(TOPIC, {"batch": job["batch"], "name": job["name"], "worker": address})
    except (ImportError, ValueError):
        pass


_slots_lock = threading.Lock()
_slots: list = []  # this process's queue of CPU-share slots, made by the first grading that asks
_told_share: list = []  # whether this process has said what a grading's CPU share is


@contextlib.contextmanager
def cpu_share(shares: int | None):
    """A fixed share of this machine's CPUs for one grading (grader/cpushare.py): the cores divided by
    `shares`, the gradings that run here at once, each in a slot of its own (with affinity: its own cores).
    None (a cluster's workers, sized by whoever started them): no share, the CPU-time limits alone."""
    if not shares:
        yield None
        return
    from grader.cpushare import CpuShare

    with _slots_lock:
        if not _slots:
            _slots.append(queue.SimpleQueue())
            for slot in range(shares):
                _slots[0].put(slot)
    slot = _slots[0].get()
    try:
        with CpuShare(len(os.sched_getaffinity(0)) / shares, slot) as share:
            if not _told_share:  # once a process, not once a grading
                _told_share.append(share.kind)
                print(f"resource-grader batch: each grading's CPU share: {share.describe()}", file=sys.stderr)
            yield share
    finally:
        _slots[0].put(slot)


def grade_task(job: dict) -> str:
    """Grade one packed submission on this worker (grader.grading.grade_submission, in its sandbox, within its
    limits) and return, as JSON: name, status, seconds, scores (the ProblemScore data), fingerprints, similarity
    (its similarity digest, grader/similarity.py, from its analysis: None where that was cut off), results
    (results.json's text), operator (the grader's lines for the operator), worker, or only `refused` and worker.
    `job`: name, data (bytes), problems, limits, sandbox (mode), fingerprints, official, secret_check,
    secret_file, batch (an id for the start events), and where only some problems are graded again, kept (the
    others' scores and fingerprints, grade_submission's `kept`)."""
    from grader.grading import grade_submission
    from grader.harness import sandbox
    from grader.runner import Limits
    from grader.seed import course_secret

    address = _address()
    _log_start(job, address)
    why = refusal(job, address)
    if why:
        return json.dumps({"refused": why, "worker": address})
    limits = Limits(**job["limits"])
    layers = sandbox.detect(job["sandbox"])
    problems = job["problems"]
    secret = None if job["secret_check"] is None else course_secret(
        Path(job["secret_file"]) if job["secret_file"] else None)
    shared = None
    if job["fingerprints"]:
        ids = [p.id for p in registry.PROBLEMS if not problems or p.id in problems]
        shared, _ = fingerprinter_for(ids, job["sandbox"], limits)
    with tempfile.TemporaryDirectory(prefix="ra-batch-") as tmp:
        path = Path(tmp, job["name"] if job["name"].endswith(".zip") else "submission.zip")
        path.write_bytes(job["data"])
        operator: list[str] = []
        with cpu_share(job.get("cpu_shares")) as share:
            graded = grade_submission(path, Path(tmp, "out", "results.json"), limits, problems, layers, secret,
                                      shared, share, operator=operator, kept=job.get("kept"))
        # the student reads the submission's name, not this worker's temporary folder
        results = Path(tmp, "out", "results.json").read_text().replace(tmp + os.sep, "")
        digest = graded.digest  # computed in its analysis's box (grader/analysis.py)
    found = graded.fingerprints and graded.fingerprints.data()
    return json.dumps({"name": job["name"], "status": graded.status, "seconds": graded.seconds,
                       "scores": [asdict(p) for p in graded.scores], "fingerprints": found,
                       "untouched": sorted(graded.untouched), "similarity": digest,
                       "results": results, "operator": operator, "worker": address}, default=str)


def descriptions_task(problems: list[str], mode: str, limits: dict) -> dict:
    """The catalogued mistakes' descriptions for the class report, from this worker's Fingerprinter."""
    from grader.runner import Limits

    shared, skipped = fingerprinter_for(problems, mode, Limits(**limits))
    return {"descriptions": shared.descriptions() if shared else {}, "skipped": skipped}


# -- on the coordinator ---------------------------------------------------------------------------------

class ClusterError(RuntimeError):
    """The cluster cannot grade this batch (no scheduler, a worker refused): the batch stops, with this reason."""


class Engine:
    """Where batch's gradings run. `address` None: an in-process Dask cluster of `jobs` single-threaded workers
    (inproc transport: no port opened), or, where distributed is not installed, a thread pool running the same
    task function; else the Dask scheduler at `address`. `retries`: how often the embedded cluster gives a task
    whose worker died to another worker (a running cluster: its scheduler's allowed-failures)."""

    def __init__(self, address: str | None, jobs: int, retries: int):
        self.address, self.jobs, self.client, self.cluster, self.pool = address, jobs, None, None, None
        try:
            import dask
            from distributed import Client, LocalCluster
        except ImportError:
            if address is not None:
                raise ClusterError("--scheduler needs Dask distributed: pip install -e '.[cluster]'") from None
            from concurrent.futures import ThreadPoolExecutor

            self.pool = ThreadPoolExecutor(max_workers=jobs)
            self.where = f"a thread pool of {jobs} (Dask distributed is not installed)"
            return
        if address is None:
            # Dask's nodes always serve HTTP, even over inproc: on loopback only, and nothing but /health (a
            # grading without a network namespace could reach it). memory_limit 0: Dask would pause a worker
            # for this whole process's memory; the sandbox limits each grading's own.
            health = ["distributed.http.health"]
            settings = {"distributed.scheduler.allowed-failures": retries,
                        "distributed.scheduler.http.routes": health, "distributed.worker.http.routes": health}
            with dask.config.set(settings):
                self.cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=False, memory_limit=0,
                                            dashboard_address="127.0.0.1:0", worker_dashboard_address="127.0.0.1:0")
            self.client = Client(self.cluster)
            self.where = f"this machine, {jobs} at a time (an in-process Dask cluster)"
        else:
            tls = ("distributed.comm.tls.ca-file", "distributed.comm.tls.client.cert")
            if address.startswith("tls://") and not all(dask.config.get(key, None) for key in tls):
                raise ClusterError(f"{address} speaks TLS, and this client has no CA file or certificate: Dask's "
                                   "settings DASK_DISTRIBUTED__COMM__TLS__CA_FILE, ..._CLIENT__CERT and "
                                   "..._CLIENT__KEY (docs/graders.md, TLS)")
            try:
                self.client = Client(address, timeout=30)
            except OSError as exc:
                raise ClusterError(f"no Dask scheduler at {address}: {exc}") from None
            self.where = f"the Dask cluster at {address}"

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc) -> None:
        if self.pool:
            self.pool.shutdown(wait=True, cancel_futures=True)
        if self.client:
            self.client.close()
        if self.cluster:
            self.cluster.close()

    def check_workers(self, job: dict) -> dict[str, dict]:
        """Every worker of a running cluster, asked up front (`identity`); a ClusterError naming those that would
        refuse `job`. The embedded engine's workers are this process: nothing to ask."""
        if self.address is None:
            return {}
        try:
            self.client.wait_for_workers(1, timeout=60)
        except TimeoutError:
            raise ClusterError(f"no worker joined the scheduler at {self.address} within 60 s") from None
        found = self.client.run(identity, job["secret_file"])
        wrong = []
        for address, info in sorted(found.items()):
            if info["official"] != job["official"]:
                wrong.append(f"worker {address} has another official tree or grader (hash {info['official'][:12]}, "
                             f"the coordinator's {job['official'][:12]}): install the same version on every node")
            elif job["secret_check"] is not None and info["secret"] != job["secret_check"]:
                wrong.append(f"worker {address} has another course secret than the coordinator, or none "
                             f"({info['secret'][:80] if info['secret'].startswith('none') else 'another'})")
        if wrong:
            raise ClusterError("refused by the cluster's workers:\n  " + "\n  ".join(wrong))
        return found

    def completed(self, jobs: list[dict]):
        """Grade `jobs`, yielding (index in `jobs`, future) as each task ends. No more are in flight than the
        workers have threads: Dask gives a task to a worker when it is submitted, and there it waits behind that
        worker's grading while another worker may sit idle (one long grading, a loop say, left one worker busy
        twice as long as the other). The count is read again at each end and every WAKE seconds, so a worker
        that joins late takes the next task. Leaving early (a refusal) cancels those in flight."""
        waiting = collections.deque(enumerate(jobs))
        running: dict = {}
        try:
            while waiting or running:
                free = self._threads() - len(running)
                while waiting and (free > 0 or not running):
                    index, job = waiting.popleft()
                    running[self._submit(job)] = index
                    free -= 1
                for future in self._ended(list(running)):
                    yield running.pop(future), future
        finally:
            for future in running:
                future.cancel()

    def _threads(self) -> int:
        if self.pool:
            return self.jobs
        return sum(self.client.nthreads().values())

    def _submit(self, job: dict):
        if self.pool:
            return self.pool.submit(grade_task, job)
        # pure=False: a regrade of the same bytes is a new task; the key names the submission in Dask's dashboard
        return self.client.submit(grade_task, job, pure=False, key=f"grade-{job['name']}-{job['batch']}")

    def _ended(self, futures) -> set:
        """Those of `futures` that have ended, waiting at most WAKE seconds for one."""
        if self.pool:
            import concurrent.futures

            return concurrent.futures.wait(futures, WAKE, concurrent.futures.FIRST_COMPLETED).done
        from distributed import wait

        try:
            return wait(futures, WAKE, "FIRST_COMPLETED").done
        except TimeoutError:
            return set()

    def descriptions(self, problems: list[str], mode: str, limits: dict) -> dict:
        if self.pool:
            return descriptions_task(problems, mode, limits)
        return self.client.submit(descriptions_task, problems, mode, limits, pure=False).result()

    def starts(self, batch: str) -> dict[str, list[str]]:
        """Submission name -> the workers each start of its task ran on, in order (the thread pool: none)."""
        if self.pool:
            return {}
        found: dict[str, list[str]] = {}
        for _, event in self.client.get_events(TOPIC):
            if isinstance(event, dict) and event.get("batch") == batch:
                found.setdefault(event["name"], []).append(event["worker"])
        return found


# -- doctor: a node where the grader is not root ---------------------------------------------------------

NOBODY = 65534


def non_root_doctor() -> str:
    """What `resource-grader doctor` adds about a node where the grader runs as an ordinary user (a Slurm job, a
    pod without privileges): there the user layer is off (it needs root) and the limits are on; the namespaces
    layer needs bubblewrap, unprivileged user namespaces from the kernel, and an interpreter that other users can
    reach. Run as root, it tries the namespaces layer as the unprivileged user `nobody`; run as an ordinary user,
    `doctor`'s own lines above are that user's answer, and this adds what stands in its way."""
    import shutil
    import subprocess

    from grader.harness import sandbox

    lines = ["", "On a node where the grader is not root (a Slurm job, a pod without privileges):",
             "  limits      on   (rlimits need no privilege)",
             "  user        off  (a uid of its own per grading needs root)"]
    private = sandbox._private_ancestor()
    if shutil.which("bwrap") is None:
        namespaces = "off  bwrap not found (Debian/Ubuntu package bubblewrap)"
    elif os.geteuid() == 0:
        with tempfile.TemporaryDirectory(prefix="ra-probe-") as tmp:
            os.chmod(tmp, 0o777)
            spec = sandbox.Spec(["namespaces"], home=tmp, tree=tmp, binds=sandbox._interpreter_paths())
            command = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                       *spec.command([sys.executable, "-c", sandbox.PROBE])]
            try:
                done = subprocess.run(command, env=spec.env(), cwd=tmp, capture_output=True, timeout=60)
                why = (done.stderr.decode(errors="replace").strip().splitlines() or [f"exit {done.returncode}"])[-1]
                failed = done.returncode != 0
            except (OSError, subprocess.TimeoutExpired) as exc:
                failed, why = True, str(exc)
        namespaces = f"off  tried as user nobody: {why}" if failed else "on   (tried as user nobody)"
    else:
        namespaces = "see above (this user)"
    lines.append(f"  namespaces  {namespaces}")
    userns = Path("/proc/sys/user/max_user_namespaces")
    if userns.exists() and userns.read_text().strip() == "0":
        lines.append("  the kernel allows no user namespaces (sysctl user.max_user_namespaces=0)")
    restricted = Path("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
    if restricted.exists() and restricted.read_text().strip() == "1":
        lines.append("  AppArmor restricts unprivileged user namespaces (Ubuntu 24.04: bwrap needs a profile)")
    if private:
        lines.append(f"  {private} is closed to other users: an ordinary user's grader needs its own Python "
                     "installation (a venv on a path all users can cross)")
    lines.append("  With neither user nor namespaces, batch on such a node refuses other people's code unless "
                 "--no-sandbox (its gradings would run as the job's user, with its files and network).")
    return "\n".join(lines)
