"""What a student reads from pytest (a plugin of grader/harness/plugin.py): a problem whose module is the untouched
stub, or does not compile or import, is one line (or the error) after the run, its tests' failures counted there
rather than printed; a stub's NotImplementedError ends a generated test at once and is reported in a few lines;
pytest's own `assert ...` explanation is cut after the course's message, and the profiler's lines (the audits'
record of ops) are not shown.
"""

import functools
import importlib.util
import linecache
import re
import traceback
from pathlib import Path

import pytest
from _pytest._code.code import TerminalRepr
from _pytest.outcomes import Skipped

import tests
from grader.harness.client import WorkerTimeout
from grader.harness.time_limit import problem_of

ROOT = Path(tests.__file__).resolve().parent.parent  # the tree under test: its suite, stubs and reference


def pytest_collection_modifyitems(config, items):
    config._ra_folded = {} if config.getoption("--all-failures") else folded_problems(config, items)
    for item in items:
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            _stop_at_not_implemented(item.obj.hypothesis)
        if isinstance(item, pytest.Function):
            item.repr_failure = _short_for_not_implemented(item, item.repr_failure)


NOT_STARTED, NOT_COMPILING, NOT_IMPORTING = "not started", "not compiling", "not importing"
FOLDED = (NOT_STARTED, NOT_COMPILING, NOT_IMPORTING)


def folded_problems(config, items) -> dict[str, tuple[str, str]]:
    """The problems of `items` whose failures are reported as one line: {problem: (NOT_STARTED, NOT_COMPILING
    or NOT_IMPORTING, the compiler's or the import's message)}. Read from `assignment/`'s source
    (grader/sources.py's `not_started`); in-process, a module that compiles is also imported once to see that it
    does."""
    if config.getoption("--impl") != "assignment":
        return {}
    from grader.sources import not_started

    folded = {}
    for problem in sorted({problem_of(item) for item in items} - {None}):
        path = ROOT / "assignment" / f"{problem}.py"
        if not path.is_file():
            continue
        source = path.read_bytes()
        try:
            compile(source, str(path.relative_to(ROOT)), "exec")
        except (SyntaxError, ValueError, RecursionError, MemoryError) as error:  # nesting past the compiler's depth
            folded[problem] = (NOT_COMPILING, _compile_error(error))
            continue
        if not config.getoption("--isolated") and (error := _import_error(path, problem)):
            folded[problem] = (NOT_IMPORTING, error)  # first: a stub with a broken import is not "not started"
        elif not_started(source):
            folded[problem] = (NOT_STARTED, "")
    return folded


def _compile_error(error: Exception) -> str:
    return "".join(traceback.format_exception_only(type(error), error)).rstrip()


def _import_error(path: Path, problem: str) -> str | None:
    """Why the module does not import (where in it, and the error), or None: run once, in this process (the
    tests run it here too: in-process mode only), under a name of its own, left out of sys.modules."""
    spec = importlib.util.spec_from_file_location(f"assignment._ra_import_check_{problem}", path)
    try:
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    except (Exception, SystemExit) as error:  # noqa: BLE001 - whatever the module raises is the message
        frames = [f for f in traceback.extract_tb(error.__traceback__) if Path(f.filename) == path]
        where = "".join(traceback.format_list(frames[-1:])).replace(str(path), str(path.relative_to(ROOT)))
        return (where + _compile_error(error)).rstrip()
    return None


def pytest_report_teststatus(report, config):
    """A failure of a folded problem is counted under its problem's line, not reported on its own."""
    folded = getattr(config, "_ra_folded", {})
    if report.failed and folded:
        problem = problem_of(report)
        if problem in folded:
            return folded[problem][0], "F", folded[problem][0].upper()
    return None


PROFILER_CHATTER = re.compile(r"^(USDT|STAGE):\S+ \S+ \d+:\d+ \S+\.cpp:\d+\] .*\n?", re.MULTILINE)
DIFFERENTIAL_SKIP = "differential test"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """The course's assertion message alone (pytest's rewritten `assert ...` explanation after it cut: the message
    already says what was expected), and no lines of torch's profiler (the audits' record of every op) in what
    the test printed."""
    if call.excinfo is not None and call.excinfo.errisinstance(AssertionError):
        _cut_assertion_explanation(call.excinfo.value)
    outcome = yield
    report = outcome.get_result()
    report.sections = [(name, PROFILER_CHATTER.sub("", text)) for name, text in report.sections
                       if PROFILER_CHATTER.sub("", text).strip() or not text.strip()]


def _cut_assertion_explanation(error: AssertionError) -> None:
    text = str(error)
    cut = text.find("\nassert ")
    if error.args and cut > 0 and not text.startswith("assert "):
        error.args = (text[:cut],)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """One line per folded problem; the differential tests' skip, said once without -rs."""
    folded = getattr(config, "_ra_folded", {})
    counts: dict[str, int] = {}
    for kind in FOLDED:
        for report in terminalreporter.stats.get(kind, []):
            problem = problem_of(report)
            counts[problem] = counts.get(problem, 0) + (report.when == "call" or report.when == "setup")
    shown = {p: v for p, v in folded.items() if counts.get(p)}
    if shown:
        terminalreporter.section("problems not started, not compiling or not importing", sep="-")
        for problem, (kind, message) in shown.items():
            n = counts[problem]
            tests = f"{n} test{'s' if n > 1 else ''}"
            if kind == NOT_STARTED:
                terminalreporter.line(f"{problem}: not started, every function raises NotImplementedError ({tests} "
                                      f"fail; `pytest -m {problem} --all-failures` shows each)")
            else:
                does = "does not compile" if kind == NOT_COMPILING else "does not import"
                terminalreporter.line(f"{problem}: assignment/{problem}.py {does}, so its {tests} fail:")
                terminalreporter.line(message)
    skipped = [r for r in terminalreporter.stats.get("skipped", [])
               if isinstance(r.longrepr, tuple) and DIFFERENTIAL_SKIP in str(r.longrepr[-1])]
    if skipped and "s" not in (config.option.reportchars or "").replace("a", "s").replace("A", "s"):
        reason = str(skipped[0].longrepr[-1]).removeprefix("Skipped: ")
        terminalreporter.line(f"SKIPPED {len(skipped)} test{'s' if len(skipped) > 1 else ''}: {reason}")


class _NotImplementedStop(Skipped):
    """Carries a NotImplementedError (or a timeout: every example would fail alike) out of hypothesis at once:
    hypothesis re-raises a skip without shrinking or replaying it (on a first run on the stubs, shrinking examples
    that all fail alike was half the time); `pytest_pyfunc_call` below turns it back into the error, a failure."""

    def __init__(self, error: Exception):
        super().__init__(str(error))
        self.error = error


# What ends a generated test at once: a function not implemented yet, and the time limits of isolated mode (a
# function that ran out of time is not called again: each later example would fail alike, at once)
STOPPING = (NotImplementedError, WorkerTimeout)


def _stop_at_not_implemented(handle) -> None:
    """Wrap a hypothesis test's inner function (once: parametrized items share it) so that the code under
    test raising NotImplementedError, or running out of time, ends the test with that error and the example that
    raised it, as leaving the function unfinished does. Only that changes: any other exception, or a pass, goes
    to hypothesis as before."""
    inner = handle.inner_test
    if getattr(inner, "_stops_at_not_implemented", False):
        return

    @functools.wraps(inner)
    def stopping(*args, **kwargs):
        try:
            return inner(*args, **kwargs)
        except STOPPING as error:
            shown = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())])
            what = "a NotImplementedError" if isinstance(error, NotImplementedError) else "a timeout"
            error.add_note(f"Failing test case (the first example that raised it: {what} is not shrunk): "
                           f"{inner.__name__}({shown})")
            raise _NotImplementedStop(error) from error

    stopping._stops_at_not_implemented = True
    handle.inner_test = stopping


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    try:
        return (yield)
    except _NotImplementedStop as stop:
        raise stop.error from None


class _ShortRepr(TerminalRepr):
    """A failure report of a few lines; `reprcrash` gives the short summary its "- NotImplementedError: ..."."""

    def __init__(self, lines: list[str], errors: list[str], reprcrash):
        self.lines, self.errors, self.reprcrash = lines, errors, reprcrash

    def toterminal(self, tw) -> None:
        for line in self.lines:
            tw.line(line)
        for line in self.errors:
            tw.line(f"E   {line}", red=True, bold=True)


def _short_for_not_implemented(item, repr_failure):
    """An untouched stub's NotImplementedError, reported short: each frame's location and line, the error and
    its notes (hypothesis' failing example). pytest's default (long) report parses each frame's whole source
    file to show the statement, and hypothesis asks for it twice more per failing test: on the untouched
    stubs that was a third of the run. Any other failure, or a traceback style chosen on the command line,
    is reported as pytest would."""

    def short_repr_failure(excinfo):
        config = item.config
        if (not excinfo.errisinstance(NotImplementedError) or config.getoption("tbstyle", "auto") != "auto"
                or config.getoption("fulltrace", False)):
            return repr_failure(excinfo)
        root, lines = item.config.rootpath, []
        for entry in item._traceback_filter(excinfo):
            path = Path(entry.path)
            where = path.relative_to(root) if path.is_absolute() and path.is_relative_to(root) else path
            lines.append(f"{where}:{entry.lineno + 1}: in {entry.name}")
            source = linecache.getline(str(path), entry.lineno + 1).strip()
            if source:
                lines.append(f"    {source}")
        exc = excinfo.value
        errors = [f"{type(exc).__name__}: {exc}", *(str(note) for note in getattr(exc, "__notes__", ()))]
        return _ShortRepr(lines, [line for text in errors for line in text.splitlines()], excinfo._getreprcrash())

    return short_repr_failure
