"""The task a batch's worker runs for each submission (`grade_task`), on this machine or on a Dask cluster's node.

A worker shares nothing with the coordinator (grader/batch/run.py) but the installed package: the task carries the
job as JSON (grader/job.py) and the submission as bytes (grader/batch/submissions.py `pack`), and answers with JSON
(the grading's Outcome, grader/outcome.py); the coordinator writes the files. Before anything else a worker decides
whether it may grade the job at all (grader/batch/identity.py `settle`), and says why not. Each start of a task is
logged as a Dask event (topic TOPIC), from which the coordinator counts the retries.
"""

import contextlib
import json
import os
import queue
import sys
import tempfile
import threading
from pathlib import Path

from grader.batch import identity
from grader.batch.cpushare import CpuShare
from grader.grading import grade_submission
from grader.job import Job, shared_fingerprinter

TOPIC = "resource-grader-start"


def _address() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return "local"


def _log_start(job: Job, address: str) -> None:
    try:
        from distributed import get_worker

        get_worker().log_event(TOPIC, {"batch": job.batch, "name": job.name, "worker": address})
    except (ImportError, ValueError):
        pass


_slots_lock = threading.Lock()
_slots: list = []  # this process's queue of CPU-share slots, made by the first grading that asks
_told_share: list = []  # whether this process has said what a grading's CPU share is


@contextlib.contextmanager
def cpu_share(shares: int | None):
    """A fixed share of this machine's CPUs for one grading (grader/batch/cpushare.py): the cores divided by
    `shares`, the gradings that run here at once, each in a slot of its own (with affinity: its own cores).
    None (a cluster's workers, sized by whoever started them): no share, the CPU-time limits alone."""
    if not shares:
        yield None
        return
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


def grade_task(text: str, data: bytes) -> str:
    """Grade one packed submission (`data`) as the job `text` (grader.job.Job's JSON) asks, on this worker
    (grader.grading.grade_submission, in its sandbox, within its limits), and return, as JSON: `outcome` (its
    grader.outcome.Outcome's data, the similarity digest of the submission in it) and `worker`, or `refused` (why
    this worker must not grade it: its first answer to every task, grader/batch/identity.py) and `worker`."""
    job = Job.from_json(text)
    address = _address()
    _log_start(job, address)
    settings = identity.settle(job, address)
    if isinstance(settings, str):
        return json.dumps({"refused": settings, "worker": address})
    with tempfile.TemporaryDirectory(prefix="ra-batch-") as tmp:
        path = Path(tmp, job.name if job.name.endswith(".zip") else "submission.zip")
        path.write_bytes(data)
        with cpu_share(job.cpu_shares) as share:
            outcome = grade_submission(path, Path(tmp, "out", "results.json"), settings, cpu_share=share,
                                       kept=job.kept)
        outcome = outcome.but(name=job.name)  # its digest computed in its analysis's box (grader/analysis.py)
        # the student reads the submission's name, not this worker's temporary folder
        outcome = outcome.replacing(tmp + os.sep, "")
    return json.dumps({"outcome": outcome.to_data(), "worker": address})


def descriptions_task(text: str) -> str:
    """The catalogued mistakes' descriptions for the class report, from this worker's Fingerprinter for the job
    `text` (JSON): [descriptions, why there are none]."""
    job = Job.from_json(text)
    shared, skipped = shared_fingerprinter(job.ids, job.sandbox, job.limits)
    return json.dumps([shared.descriptions() if shared else {}, skipped])
