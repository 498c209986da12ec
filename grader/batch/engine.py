"""Where batch's gradings run, behind one small protocol (`Engine`): it runs a function as a task and says when tasks
end, it asks every worker a question, it lists the events workers logged. What runs is decided here and in
grader/batch/task.py, never by an engine:

- `DaskEngine`: Dask distributed, an in-process cluster by default (one single-threaded worker per job; each grading
  is its own processes anyway), or the scheduler at `--scheduler` (`dask scheduler` and `dask worker` started by
  hand, dask_jobqueue's SLURMCluster, a Kubernetes operator);
- `PoolEngine`: a thread pool running the same task function, where distributed is not installed.

A worker that dies while it grades (killed, out of memory, its node lost) costs no points: the scheduler gives the
task to another worker, at most `distributed.scheduler.allowed-failures` times (the embedded cluster: `retries`),
then the future raises KilledWorker and the submission is `error`. Each start of a task is logged as an event (topic
task.TOPIC), from which the coordinator counts the retries (`starts`). Time limits stay the sandbox's, on the worker.
"""

import collections
import concurrent.futures
import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from grader.batch import identity, task
from grader.job import Job

WAKE = 10  # seconds: how often a batch looks for workers that joined while every thread was busy


class ClusterError(RuntimeError):
    """The cluster cannot grade this batch (no scheduler, a worker refused): the batch stops, with this reason."""


class Engine(Protocol):
    """Where tasks run. `where`: in words, for the report; `address`: the scheduler's (None: this machine)."""

    where: str
    address: str | None

    def threads(self) -> int:
        """How many tasks its workers run at once, now."""

    def submit(self, function: Callable[..., str], *args: object, key: str) -> Any:
        """`function(*args)` as a task (a future; `key` names it)."""

    def ended(self, futures: list[Any], seconds: float) -> set[Any]:
        """Those of `futures` that have ended, waiting at most `seconds` for one."""

    def ask(self, function: Callable[..., str], *args: object) -> dict[str, str]:
        """Every worker's answer to `function(*args)`, by its address (none where the workers are this process)."""

    def events(self, topic: str) -> list[Any]:
        """What the workers logged under `topic`."""


def completed(engine: Engine, tasks: list[tuple[Job, bytes]]) -> Iterator[tuple[int, Any]]:
    """Grade `tasks` (each a job and its submission's bytes) on `engine`, yielding (index in `tasks`, future) as
    each ends. No more are in flight than the workers have threads: Dask gives a task to a worker when it is
    submitted, and there it waits behind that worker's grading while another worker may sit idle (one long grading,
    a loop say, left one worker busy twice as long as the other). The count is read again at each end and every
    WAKE seconds, so a worker that joins late takes the next task. Leaving early (a refusal) cancels those in
    flight."""
    waiting = collections.deque(enumerate(tasks))
    running: dict[Any, int] = {}
    try:
        while waiting or running:
            free = engine.threads() - len(running)
            while waiting and (free > 0 or not running):
                index, (job, data) = waiting.popleft()
                key = f"grade-{job.name}-{job.batch}"  # names the submission in Dask's dashboard
                running[engine.submit(task.grade_task, job.to_json(), data, key=key)] = index
                free -= 1
            for future in engine.ended(list(running), WAKE):
                yield running.pop(future), future
    finally:
        for future in running:
            future.cancel()


def check_workers(engine: Engine, job: Job) -> None:
    """Every worker of a running cluster, asked up front (identity.identity); a ClusterError naming those that would
    refuse `job` (identity.mismatch, the rule each worker applies to each task)."""
    found = {address: json.loads(text) for address, text in engine.ask(identity.identity, job.secret_file).items()}
    wrong = [why.replace(identity.WORKER, f"worker {address}") for address, info in sorted(found.items())
             if (why := identity.mismatch(job, info["official"], info["secret"]))]
    if wrong:
        raise ClusterError("refused by the cluster's workers:\n  " + "\n  ".join(wrong))


def descriptions(engine: Engine, job: Job) -> tuple[dict[str, dict[str, str]], str | None]:
    """The catalogued mistakes' descriptions of `job`'s problems, from a worker, and why there are none."""
    future = engine.submit(task.descriptions_task, job.to_json(), key=f"descriptions-{job.batch}")
    found, skipped = json.loads(future.result())
    return found, skipped


def starts(engine: Engine, batch: str) -> dict[str, list[str]]:
    """Submission name -> the workers each start of its task ran on, in order (the thread pool: none)."""
    found: dict[str, list[str]] = {}
    for _, event in engine.events(task.TOPIC):
        if isinstance(event, dict) and event.get("batch") == batch:
            found.setdefault(event["name"], []).append(event["worker"])
    return found


@contextlib.contextmanager
def open_engine(address: str | None, jobs: int, retries: int) -> Iterator[Engine]:
    """The engine for `--scheduler` `address` (None: this machine, `jobs` at a time; `retries`: how often the
    embedded cluster gives a task whose worker died to another worker), closed on leaving."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        if address is not None:
            raise ClusterError("--scheduler needs Dask distributed: pip install -e '.[cluster]'") from None
        with PoolEngine(jobs) as pool:
            yield pool
        return
    with DaskEngine(address, jobs, retries) as dask:
        yield dask


class PoolEngine:
    """A thread pool of `jobs` running the task functions (where Dask distributed is not installed)."""

    address: str | None = None

    def __init__(self, jobs: int):
        self.jobs = jobs
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs)
        self.where = f"a thread pool of {jobs} (Dask distributed is not installed)"

    def __enter__(self) -> "PoolEngine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)

    def threads(self) -> int:
        return self.jobs

    def submit(self, function: Callable[..., str], *args: object, key: str) -> Any:
        return self.pool.submit(function, *args)

    def ended(self, futures: list[Any], seconds: float) -> set[Any]:
        return concurrent.futures.wait(futures, seconds, concurrent.futures.FIRST_COMPLETED).done

    def ask(self, function: Callable[..., str], *args: object) -> dict[str, str]:
        return {}  # its workers are this process

    def events(self, topic: str) -> list[Any]:
        return []


class DaskEngine:
    """Dask distributed: an in-process cluster of `jobs` single-threaded workers (inproc transport: no port opened)
    where `address` is None, else the scheduler at `address`."""

    def __init__(self, address: str | None, jobs: int, retries: int):
        import dask
        from distributed import Client, LocalCluster

        self.address, self.cluster = address, None
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
            return
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

    def __enter__(self) -> "DaskEngine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close()
        if self.cluster:
            self.cluster.close()

    def threads(self) -> int:
        return sum(self.client.nthreads().values())

    def submit(self, function: Callable[..., str], *args: object, key: str) -> Any:
        # pure=False: a regrade of the same bytes is a new task
        return self.client.submit(function, *args, pure=False, key=key)

    def ended(self, futures: list[Any], seconds: float) -> set[Any]:
        from distributed import wait

        try:
            return wait(futures, seconds, "FIRST_COMPLETED").done
        except TimeoutError:
            return set()

    def ask(self, function: Callable[..., str], *args: object) -> dict[str, str]:
        if self.address is None:
            return {}  # the embedded cluster's workers are this process
        try:
            self.client.wait_for_workers(1, timeout=60)
        except TimeoutError:
            raise ClusterError(f"no worker joined the scheduler at {self.address} within 60 s") from None
        return self.client.run(function, *args)

    def events(self, topic: str) -> list[Any]:
        return list(self.client.get_events(topic))
