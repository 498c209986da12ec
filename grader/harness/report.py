"""A pytest plugin that writes one JSON line per test as it finishes: `--report FILE`.

The grader and the meta-tests read it. A record's `evidence` lists what the worker's guard reported during the
test (grader/harness/guard.py): the grader asks a person to review a submission with any. Lines are appended and
flushed at once, so a run that is killed half-way still leaves the results of every test that finished.
A generated test's record also says how many examples it ran (`examples`, shrinking included) and which one
failed first (`first_failing_example`, counted from 1): what the grading budget of examples is calibrated from
(tests/meta/mutation.py).
"""

import functools
import json

import pytest
from hypothesis.errors import DeadlineExceeded, Flaky, StopTest, UnsatisfiedAssumption

from grader.harness.client import OracleReached, WorkerDied, WorkerTimeout
from grader.harness.codec import CodecError
from grader.harness.protocol import WORKER_NOTE, ProtocolError
from grader.harness.record import Collected, CollectedTest, Finished, ReportRecord
from grader.harness.time_limit import problem_of
from grader.harness.typecheck import TYPE_CHECK_HINT, StubTypeError, is_type_check_error

MAX_MESSAGE = 4000



def _student_frames(note: str) -> str:
    """A worker's traceback cut down to the frames in the code under test (assignment/...)."""
    lines = note.splitlines()
    kept = [lines[0]]
    for i, line in enumerate(lines):
        if line.lstrip().startswith("File ") and "/assignment/" in line:
            folder = line[line.index('"') + 1 : line.index("/assignment/") + 1]  # the workspace's path
            kept += [line.replace(folder, ""), *lines[i + 1 : i + 2]]
    return "\n".join(kept)


def read_test_records(path) -> list[ReportRecord]:
    """The per-test records of a report (neither the `collected` line nor the `finished` one)."""
    with open(path, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    return [r for r in records if "nodeid" in r]


def pytest_addoption(parser):
    parser.getgroup("resource-accounting").addoption(
        "--report", default=None, metavar="FILE", help="append one JSON line per finished test to FILE")


def failure_message(excinfo) -> str:
    """The exception in a few lines: type, message, notes (hypothesis' falsifying example among them)."""
    exc = excinfo.value
    text = f"{type(exc).__name__}: {exc}"
    for note in getattr(exc, "__notes__", ()):
        text += "\n" + (_student_frames(note) if note.startswith(WORKER_NOTE) else note)
    if len(text) > MAX_MESSAGE:
        text = text[: MAX_MESSAGE - 20] + "\n... (cut)"
    return text


# What a test raises about the code under test: its checks (pytest.fail's too, and a value its stub's annotation
# refuses), the worker's limits and replies, hypothesis' verdicts on it (several distinct failures, a flaky or slow
# example)
CHECKS = (AssertionError, pytest.fail.Exception, WorkerTimeout, WorkerDied, OracleReached, ProtocolError, CodecError,
          EOFError, Flaky, DeadlineExceeded, StubTypeError)


def raised_by(exc: BaseException) -> str:
    """Who raised a failure (record.RAISED_BY), from its exception's type: "submission" for one the code under test
    raised in the grading worker (rebuilt by client.rebuild_exception, which names its remote type), "check" for
    CHECKS, "grader" for any other raised in this process: the grading code's own error (an oracle that failed, a
    broken environment). A group (hypothesis' distinct failures) is the grading code's only if all of it is."""
    if hasattr(exc, "remote_type") or getattr(exc, "while_importing", False):  # the latter: a module's import ran
        return "submission"  # out of time (client.Worker._import_timed_out), as an error its import raised
    if isinstance(exc, BaseExceptionGroup):
        causes = {raised_by(e) for e in exc.exceptions}
        return "grader" if causes == {"grader"} else "check"
    return "check" if isinstance(exc, CHECKS) else "grader"


def _trim_type_check(exc: BaseException) -> None:
    """A failed run-time type check, cut to what matters: its own message (parameter, value, expected type),
    without the ~60 lines of jaxtyping's and beartype's internal re-checks chained to it, and a hint."""
    exc.__cause__, exc.__suppress_context__ = None, True
    if TYPE_CHECK_HINT not in getattr(exc, "__notes__", ()):
        exc.add_note(TYPE_CHECK_HINT)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    if call.excinfo is not None and is_type_check_error(call.excinfo.value):
        _trim_type_check(call.excinfo.value)
    outcome = yield
    report = outcome.get_result()
    package = getattr(item.config, "_impl_package", None)
    if call.when == "teardown" and package is not None and package.isolated:
        evidence = package.worker.take_evidence()  # the worker's guard (grader/harness/guard.py) during this test
        if evidence:
            report.user_properties.append(("evidence", evidence))
        ran_out = {name: package.worker.timed_out[name] for name, test in package.worker.timed_out_in.items()
                   if test == item.nodeid}  # not called again in this run, nor in the fingerprints' (grading.py)
        if ran_out:
            report.user_properties.append(("ran_out", ran_out))
    if call.excinfo is not None and report.outcome != "passed":
        if report.skipped:
            report.user_properties.append(("message", str(call.excinfo.value)))
        else:
            report.user_properties.append(("message", failure_message(call.excinfo)))
            report.user_properties.append(("raised_by", raised_by(call.excinfo.value)))


class _Recorder:
    def __init__(self, path: str):
        self.file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - lives as long as the session
        self.current: dict[str, ReportRecord] = {}
        self.examples: dict[str, list[int]] = {}  # nodeid -> [examples run, the first that failed (0: none)]
        self.running = ""  # the nodeid of the test that runs

    def _counting(self, test):
        """`test` (a generated test's body, shared by the items of a parametrized test), counting its examples
        into self.examples[the item that runs]. Wrapped (`functools.wraps`), so that hypothesis derives the
        same derandomized inputs from it as from the test itself: `grade --local` runs the public inputs of
        `pytest --hypothesis-profile=grade`, which has no report."""

        @functools.wraps(test)
        def counted(*args, **kwargs):
            counts = self.examples.setdefault(self.running, [0, 0])
            counts[0] += 1
            try:
                return test(*args, **kwargs)
            except (UnsatisfiedAssumption, StopTest):  # hypothesis' own control flow: the example was not valid
                raise
            except BaseException:
                counts[1] = counts[1] or counts[0]
                raise

        return counted

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item):
        self.running = item.nodeid

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report):
        entry = self.current.setdefault(report.nodeid, {
            "nodeid": report.nodeid, "problem": problem_of(report), "outcome": "passed",
            "gpu": "gpu" in report.keywords, "differential": "differential" in report.keywords,
            "duration": 0.0, "message": "",
        })
        entry["duration"] += report.duration
        properties = dict(report.user_properties)
        entry.setdefault("evidence", []).extend(properties.get("evidence", []))
        if "ran_out" in properties:
            entry["ran_out"] = properties["ran_out"]
        message = properties.get("message", "")
        if report.failed and entry["outcome"] != "failed":
            entry["outcome"], entry["message"] = "failed", message
            entry["raised_by"] = properties.get("raised_by", "check")
            if report.when != "call":
                entry["message"] = f"[{report.when}] " + (message or str(report.longrepr)[-MAX_MESSAGE:])
        elif report.skipped and entry["outcome"] == "passed":
            entry["outcome"], entry["message"] = "skipped", message or str(report.longrepr[-1])
        if report.when == "teardown":
            if report.nodeid in self.examples:
                entry["examples"], entry["first_failing_example"] = self.examples.pop(report.nodeid)
            self.file.write(json.dumps(self.current.pop(report.nodeid)) + "\n")
            self.file.flush()

    @pytest.hookimpl
    def pytest_collection_finish(self, session):
        """First line: every test that will run, so a reader knows what a killed run never reached."""
        handles = [getattr(getattr(item, "obj", None), "hypothesis", None) for item in session.items]
        for handle in {id(h): h for h in handles if h is not None}.values():  # one per test function
            # the body as written: a process that runs several sessions (tests/meta/mutation.py) wraps it once
            handle.uncounted_test = getattr(handle, "uncounted_test", handle.inner_test)
            handle.inner_test = self._counting(handle.uncounted_test)
        line = Collected(collected=[
            CollectedTest(nodeid=item.nodeid, problem=problem_of(item), gpu="gpu" in item.keywords,
                          differential="differential" in item.keywords) for item in session.items])
        self.file.write(json.dumps(line) + "\n")
        self.file.flush()

    @pytest.hookimpl
    def pytest_sessionfinish(self, session, exitstatus):
        """Last line: how pytest ended, so a reader can tell a finished run from a cut one."""
        self.file.write(json.dumps(Finished(finished=int(exitstatus))) + "\n")
        self.file.flush()

    @pytest.hookimpl
    def pytest_collectreport(self, report):
        if report.failed:
            self.file.write(json.dumps({
                "nodeid": report.nodeid, "problem": None, "outcome": "error", "gpu": False,
                "differential": False, "duration": 0.0, "message": str(report.longrepr)[-MAX_MESSAGE:],
            }) + "\n")
            self.file.flush()


def pytest_configure(config):
    path = config.getoption("--report", None)
    if path:
        config.pluginmanager.register(_Recorder(path), "ra-report")
