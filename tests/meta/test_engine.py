"""How batch's engine hands out its tasks (grader/batch/engine.py `completed`), on the in-process cluster with
task functions that grade nothing: no task waits behind a grading while another worker is free.

Dask gives a task to a worker when it is submitted: a class submitted at once leaves tasks queued behind a long
grading (a loop graded to its time limits) while the other worker idles, until Dask's work stealing moves them
(seconds later, or never where it judges a move not worth it). The engine keeps no more tasks in flight than the
workers have threads, so the next task goes to the worker that freed.
"""

import threading

import pytest

from grader.batch import engine, task
from grader.job import Job

pytest.importorskip("distributed", reason="the `cluster` extra (pip install -e '.[cluster]')")
pytestmark = [pytest.mark.meta, pytest.mark.timeout(120)]

others_ended = threading.Event()  # module-level, as the task functions are: Dask pickles a task's function


def tasks(names):
    """What the engine hands out (a job and its submission's bytes), for submissions of these names."""
    return [(Job(batch="b").of(name), b"") for name in names]


def name_of(text):
    return Job.from_json(text).name


def grade_long_last(text, data):
    """The long task runs until the others have ended and returns how many tasks its worker held queued behind it
    at most (sampled every 10 ms); the others return at once."""
    if name_of(text) != "long":
        return 0
    from distributed import get_worker

    state, queued = get_worker().state, 0
    while not others_ended.wait(0.01):
        queued = max(queued, len(state.ready) + len(state.constrained))
    return queued


def grade_until_another_runs(text, data):
    if name_of(text) == "first":
        return another_ran.wait(30)
    another_ran.set()
    return True


another_ran = threading.Event()


def grade_slowly(text, data):
    threading.Event().wait(0.5 if name_of(text) == "first" else 5)
    return name_of(text)


def test_a_long_grading_holds_up_no_other_task(monkeypatch):
    """One grading runs until every other has ended: the other worker grades them all meanwhile, and none of them
    ever waits in the long one's worker."""
    others_ended.clear()
    monkeypatch.setattr(task, "grade_task", grade_long_last)
    names = ["long"] + [f"short{i}" for i in range(6)]
    ended, queued_behind = [], None
    with engine.open_engine(None, 2, 0) as running:
        for index, future in engine.completed(running, tasks(names)):
            ended.append(names[index])
            if names[index] == "long":
                queued_behind = future.result()
            if len(ended) == len(names) - 1:
                others_ended.set()
    assert ended[-1] == "long" and sorted(ended) == sorted(names)
    assert queued_behind == 0, f"{queued_behind} tasks waited behind the long grading while a worker was free"


def test_no_more_are_in_flight_than_threads_and_leaving_early_cancels_them(monkeypatch):
    """A batch that stops at a result (a worker's refusal) leaves nothing running on the cluster, and never handed
    out what waited."""
    monkeypatch.setattr(task, "grade_task", grade_slowly)
    with engine.open_engine(None, 2, 0) as running:
        submitted = []
        submit = running.submit
        monkeypatch.setattr(running, "submit", lambda *args, key: submitted.append(submit(*args, key=key)) or
                            submitted[-1])
        handed = engine.completed(running, tasks(("first", "second", "third")))
        index, future = next(handed)
        assert index == 0 and future is submitted[0]
        handed.close()
        assert len(submitted) == 2, "no more were handed out than the 2 workers' threads"
        assert submitted[1].status == "cancelled"


def test_a_worker_that_joins_while_every_thread_is_busy_takes_the_next_task(monkeypatch):
    """The first grading runs until another does: only a worker that joins while it runs can take one, and the
    engine hands it one without waiting for the first to end (it looks again every WAKE seconds)."""
    another_ran.clear()
    monkeypatch.setattr(task, "grade_task", grade_until_another_runs)
    monkeypatch.setattr(engine, "WAKE", 0.2)
    with engine.open_engine(None, 1, 0) as running:
        threading.Timer(1.0, running.cluster.scale, (2,)).start()
        results = {index: future.result() for index, future in
                   engine.completed(running, tasks(("first", "second", "third")))}
    assert results == {0: True, 1: True, 2: True}, "the first grading ran alone to its end"
