"""Time that one slip cannot spend for the others: a share of the run per problem, and a test in pytest's own
process that ends by itself.

A grading's run has its seconds (`--run-seconds`, the grader's), and so its time to share: those seconds times the
CPU the grading may use (`cputime.cpu_allowance`: a cgroup's quota, the cores it may run on; at most one, as a
grading computes in one process at a time). Each problem, as its first test starts, gets its share of the time left:
by its points, among the problems still to come (`share`), and at least twice a call's time limit while that much
is left (`floor_of`). A problem's time is counted as its processes got it (`spent`): wall-clock time less the time
this process and its workers spent runnable, waiting for a CPU. What they computed counts, and so does what they
spent waiting or sleeping (a problem that sleeps takes no other's time either); what a busy machine or a CPU quota
took from them does not, so a starved grading cuts no problem short (the run's own wall-clock deadline, the
grader's, still ends it). A problem past its share loses its remaining tests, each failing at once with a message
naming the share, and never another problem's: time a problem leaves unused goes to those after it. A loop costs a
problem one call's limit (grader/harness/client.py), and fits in any problem's share, at Gradescope's half CPU too,
even where every problem before it looped (tests/meta/test_loops.py).

A graded test that runs in pytest's own process (plain `pytest`, a student's first check) ends by itself.

pytest-timeout's signal method fails a test that runs past its `timeout` by raising pytest's `Failed`, which
hypothesis catches as any failure: it then runs the test's examples again to shrink it, each calling the looping
function again, and the alarm has gone off. A loop in a generated test ran on for as long as anyone waited.

So for a graded test in this process (the grader's isolated runs have their own limit per call:
grader/harness/client.py), the alarm raises `TimeLimitReached`, which is no `Exception`: neither hypothesis nor
the code under test's `except Exception` catches it, and the test fails at once, naming the limit. The alarm
repeats every second after that, should the code under test catch it all the same. The limit is CPU time of this
process (a busy laptop slows a test, never fails it), pyproject's `timeout` or IN_PROCESS_SECONDS (more for a
profile of more examples: `thorough`'s 200 get the whole `timeout`), the lower; a test that waits or sleeps is
stopped by a wall-clock backstop WALL_FACTOR times longer.
"""

import os
import signal
import threading
import time

import hypothesis
import pytest

from grader.harness.cputime import WALL_FACTOR, cpu_allowance, run_queue_wait
from grader.registry import BY_ID

# The reference's slowest graded test takes 5 s here in the `ci` profile (40 examples), 29 s in `thorough` (200) on a
# loaded machine: the limit grows with the examples, so that a slower laptop does not stop an honest test.
IN_PROCESS_SECONDS = 60.0
EXAMPLES = 40  # the examples IN_PROCESS_SECONDS is for


class TimeLimitReached(BaseException):
    """A graded test ran past its time limit in pytest's own process: an infinite loop, most likely."""


def message(seconds: float, waited: bool = False) -> str:
    """What a test stopped at its limit of `seconds` of CPU time says (`waited`: at its wall-clock backstop)."""
    why = (f"ran {WALL_FACTOR * seconds:g} s of wall-clock time using little CPU: is the code it calls waiting or "
           "sleeping?" if waited else f"used more than {seconds:g} s of CPU time and was stopped: an infinite loop, or "
           "a very slow one, in the code it calls?")
    return (f"this test {why} (`pytest --isolated` runs your code in a process of its own, each call limited to "
            "--call-timeout seconds, as the grader does)")


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item, settings):
    graded = any(m.name in BY_ID for m in item.iter_markers()) and not item.config.option.isolated
    if not graded or not settings.timeout or settings.method != "signal" or \
            threading.current_thread() is not threading.main_thread():
        return None  # pytest-timeout's own timer
    examples = hypothesis.settings.default.max_examples
    seconds = min(settings.timeout, IN_PROCESS_SECONDS * max(1.0, examples / EXAMPLES))

    def alarm(signum, frame):
        __tracebackhide__ = True  # the failure shows the student's line that was running, not this one
        raise TimeLimitReached(message(seconds, waited=signum == signal.SIGALRM))

    def cancel():
        for timer, sig in TIMERS:
            signal.setitimer(timer, 0)
            signal.signal(sig, signal.SIG_DFL)

    item.cancel_timeout = cancel
    for (timer, sig), after in zip(TIMERS, (seconds, WALL_FACTOR * seconds), strict=True):
        signal.signal(sig, alarm)
        signal.setitimer(timer, after, 1.0)
    return True


# this process's CPU time (user and system, every thread), then the wall-clock backstop
TIMERS = ((signal.ITIMER_PROF, signal.SIGPROF), (signal.ITIMER_REAL, signal.SIGALRM))


def problem_of(item) -> str | None:
    """The problem id a pytest item (or its report) belongs to: the one whose test file, tests/test_<problem>.py,
    holds it, or None. Its file decides, never its ids: a parametrization named after another problem stays put."""
    name = item.nodeid.partition("::")[0].rpartition("/")[2]
    problem = name.removeprefix("test_").removesuffix(".py")
    return problem if name == f"test_{problem}.py" and problem in BY_ID else None


@pytest.hookimpl(trylast=True)  # after the plugin has put them in the order they run
def pytest_collection_modifyitems(config, items):
    """Where the run's time starts, its seconds to share, and the problems in the order their tests run (the plugin
    has sorted them)."""
    config._ra_start, config._ra_waited = time.monotonic(), run_queue_wait(os.getpid())
    config._ra_seconds = config.getoption("--run-seconds") * min(1.0, cpu_allowance())
    config._ra_order = list(dict.fromkeys(filter(None, map(problem_of, items))))
    config._ra_share = {}  # the problem whose tests run now, the time its share ends at, its seconds


def share(problem: str, order: list[str], spent: float, budget: float, floor: float = 0.0) -> float:
    """The seconds `problem` may take when the run has `spent` of its `budget`: what is left, by its points among it
    and the problems after it in `order`, and at least `floor` where that much is left."""
    after, left = order[order.index(problem):], max(0.0, budget - spent)
    return min(left, max(floor, left * BY_ID[problem].points / sum(BY_ID[p].points for p in after)))


def floor_of(config) -> float:
    """The least share of a problem: one loop's timeout (a call's CPU limit, grader/harness/client.py) and as much
    again for the rest of its tests (a correct problem's take 1 to 5 CPU seconds of a grading)."""
    return 2 * config.getoption("--call-timeout")


def spent(config) -> float:
    """The run's time so far, as the shares count it: wall-clock time less the time this process and its workers
    (grader/harness/client.py) spent runnable, waiting for a CPU."""
    package = getattr(config, "_impl_package", None)
    workers = package.worker.starved() if package is not None and package.isolated else 0.0
    return time.monotonic() - config._ra_start - (run_queue_wait(os.getpid()) - config._ra_waited) - workers


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    problem = problem_of(item)
    if not item.config.getoption("--run-seconds") or problem is None:
        return
    now, _share = spent(item.config), item.config._ra_share
    if _share.get("problem") != problem:
        seconds = share(problem, item.config._ra_order, now, item.config._ra_seconds, floor_of(item.config))
        _share.update(problem=problem, end=now + seconds, seconds=seconds)
    if now > _share["end"]:
        pytest.fail(f"not run: {problem} used its share of the run's time ({_share['seconds']:.0f} s as its processes "
                    "got them, by its points of what was left when it started); the problems after it keep theirs",
                    pytrace=False)
