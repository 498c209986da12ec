"""pytest's side of the harness (loaded by the root conftest.py): which implementation the tests see, and how
(in-process or isolated).

    pytest                          # your code (assignment/), in-process: pdb works
    pytest -m flops                 # one problem
    pytest --impl reference         # the reference solution (TAs, CI)
    pytest --isolated               # the code under test runs in a worker process (the grader's mode)
    pytest --all-failures           # every failure, those of problems not started or not importing too

A problem whose module is the untouched stub, or does not compile or import, is one line (or the error)
after the run, its tests' failures counted there rather than printed; pytest's own `assert ...` explanation
is cut after the course's message, and the profiler's lines (the audits' record of ops) are not shown.

Tests never import `assignment` or `reference` by name: they take the `impl` fixture (the package under
test) and, for expected values, the `ref` fixture (the reference, in this process; skipped where the
reference is not installed, as in the student release).
"""

import contextlib
import functools
import gc
import hashlib
import importlib
import importlib.util
import linecache
import os
import re
import traceback
from pathlib import Path

import hypothesis
import pytest
import torch.testing._comparison
from _pytest._code.code import TerminalRepr
from _pytest.outcomes import Skipped
from hypothesis import HealthCheck, Phase, settings

import tests
from grader import grading_budget
from grader.harness import front_end, time_limit
from grader.harness.typecheck import install_shape_checks
from grader.registry import BY_ID, EXTRA_MARKERS, PROBLEMS
from grader.seed import pin_hypothesis_constants

ROOT = Path(tests.__file__).resolve().parent.parent  # the tree under test: its suite, stubs and reference

front_end.install()  # torch's compiler front end only where something needs more of it than eager code does
# torch.testing.assert_close imports torch.distributed.tensor at its first call (0.5 s of CPU), to unwrap DTensors:
# none is compared here (a worker's tensors are decoded plain, the oracles make none, and no problem asks for one)
torch.testing._comparison._HAS_DTENSOR = False
pin_hypothesis_constants()  # a test's inputs, whatever this process imported before it draws them

# Shape annotations are checked at run time, on both packages: installed before either is imported.
install_shape_checks(["assignment", "reference"])

# No "explain" phase anywhere: it reruns a failing example many times to annotate it, which turns a run on
# the stubs from seconds into a minute; the shrunk example is what a student needs.
_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow],
               phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink])
settings.register_profile("dev", max_examples=20, **_COMMON)
# ci and grade: reproducible (derandomized, no example database, and a failing test reports its first bug,
# shrunk: the search for further bugs after it lasts up to 10 s of wall time, so that how much it ran, and what it
# reported, depended on the machine's speed).
_REPRODUCIBLE = dict(derandomize=True, database=None, print_blob=False, report_multiple_bugs=False, **_COMMON)
settings.register_profile("ci", max_examples=40, **_REPRODUCIBLE)
# grade: what the grader runs; a test's examples are its budget, or FLOOR (grader/grading_budget.py)
settings.register_profile("grade", max_examples=grading_budget.FLOOR, **_REPRODUCIBLE)
# calibrate: grade's inputs and budgets, but a failing test is not shrunk (tests/meta/mutation.py --every-test
# records where each test first failed, which is all a budget needs)
settings.register_profile("calibrate", settings.get_profile("grade"),
                          phases=[Phase.explicit, Phase.reuse, Phase.generate])
# floor: grade with no budget under FLOOR, as it graded before they were calibrated (what
# tests/meta/test_automatic_mutants.py compares the budgets with)
settings.register_profile("floor", settings.get_profile("grade"))
GRADING_PROFILES = ("grade", "calibrate", "floor")
# thorough: a student's most thorough local check before submitting, new random inputs every run
settings.register_profile("thorough", max_examples=200, database=None, print_blob=True, **_COMMON)
# mutation: each catalogued mistake must be caught within a few derandomized examples (tests/meta/mutation.py)
settings.register_profile("mutation", max_examples=10, **_REPRODUCIBLE)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

pytest_plugins = ["grader.harness.report"]


def pytest_addoption(parser):
    group = parser.getgroup("resource-accounting")
    group.addoption("--impl", choices=["assignment", "reference"], default="assignment",
                    help="the package under test (default: assignment, your code)")
    group.addoption("--isolated", action="store_true",
                    help="run the code under test in a separate worker process, as the grader does")
    group.addoption("--call-timeout", type=float, default=20.0,
                    help="isolated mode: seconds one call into the code under test may take (default 20)")
    group.addoption("--test-cpu-timeout", type=float, default=0.0,
                    help="isolated mode: seconds of the worker's CPU time that the calls of one test may use "
                         "together (default: no limit; pytest-timeout's --timeout is the wall-clock backstop)")
    group.addoption("--worker-memory-mb", type=int, default=0,
                    help="isolated mode: address-space limit of the worker in MiB (default: none)")
    group.addoption("--test-memory-mb", type=int, default=0,
                    help="isolated mode: address-space limit of this test process in MiB (the grader sets it, "
                         "so that no reply from the worker can take the test process down)")
    group.addoption("--run-seconds", type=float, default=0.0, metavar="S",
                    help="the grader: the seconds the whole run has; each problem gets its share, by its points, of "
                         "what is left when it starts (grader/harness/time_limit.py)")
    group.addoption("--grading-seed", type=int, default=None, metavar="N",
                    help="the grader: every generated test draws its inputs from N (see grader/seed.py) "
                         "instead of the profile's fixed ones")
    group.addoption("--sandbox", default=None, metavar="SPEC",
                    help="isolated mode: start the worker in the sandbox that SPEC describes (set by the grader)")
    group.addoption("--mutant", default=None, metavar="PROBLEM:MISTAKE",
                    help="TAs: the reference with one catalogued mistake swapped in (see tests/mistakes/)")
    group.addoption("--meta", action="store_true", help="also collect tests/meta (the suite's own tests)")
    group.addoption("--all-failures", action="store_true",
                    help="report every failure, those of problems not started (only stubs) or whose module does "
                         "not compile included (by default each such problem is one line)")


def pytest_configure(config):
    config.pluginmanager.register(time_limit, "resource-accounting-time-limit")
    if config.getoption("--test-memory-mb"):
        import resource

        limit = config.getoption("--test-memory-mb") * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    for problem in PROBLEMS:
        config.addinivalue_line("markers", f"{problem.id}: problem '{problem.id}' ({problem.points} points)")
    for name, text in EXTRA_MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")


def pytest_ignore_collect(collection_path, config):
    if collection_path == ROOT / "tests" / "meta":
        return not config.getoption("--meta")
    return None


def pytest_collection_modifyitems(config, items):
    config._ra_folded = {} if config.getoption("--all-failures") else folded_problems(config, items)
    seed = config.getoption("--grading-seed")
    profile = settings.get_current_profile_name()
    if config.getoption("--isolated"):
        from grader.harness.client import FORK_GROUPS

        # the problems whose workers a fork server serves, each group together, first and in its order: each server
        # is started once, and closed before any other problem's worker starts (grader/harness/forkserver.py)
        order = {problem: (rank, i) for rank, group in enumerate(FORK_GROUPS) for i, problem in enumerate(group)}
        items.sort(key=lambda item: order.get(problem_of(item), (len(FORK_GROUPS), 0)))
    for item in items:
        if "ref" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.differential)
        if seed is not None:
            _seed_generated_test(item, seed)
        if profile in GRADING_PROFILES:
            _apply_grading_budget(item, at_least=grading_budget.FLOOR if profile == "floor" else 0)
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            _stop_at_not_implemented(item.obj.hypothesis)
        if isinstance(item, pytest.Function):
            item.repr_failure = _short_for_not_implemented(item, item.repr_failure)


def pytest_collection_finish(session):
    gc.freeze()  # what collection imported (torch, hypothesis, the tests) stays: no collection walks it again
    # A full collection every 100 middle ones, not every 10: what the tests keep alive between them (hypothesis'
    # records of each test's examples) made twenty full collections of 25 ms each in a grading's test process
    # (0.5 s); now six, at the same peak memory (393 against 395 MiB RSS).
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, 100)


# -- what a student reads: one line per problem not started, one message for a module that does not import --

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
        except (SyntaxError, ValueError) as error:
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


def _report_problem(report) -> str | None:
    return next((k for k in report.keywords if k in BY_ID), None)


def pytest_report_teststatus(report, config):
    """A failure of a folded problem is counted under its problem's line, not reported on its own."""
    folded = getattr(config, "_ra_folded", {})
    if report.failed and folded:
        problem = _report_problem(report)
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
            problem = _report_problem(report)
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
    """Carries a NotImplementedError out of hypothesis at once: hypothesis re-raises a skip without shrinking
    or replaying it (on a first run on the stubs, shrinking examples that all fail alike was half the time);
    `pytest_pyfunc_call` below turns it back into the NotImplementedError, a failure."""

    def __init__(self, error: NotImplementedError):
        super().__init__(str(error))
        self.error = error


def _stop_at_not_implemented(handle) -> None:
    """Wrap a hypothesis test's inner function (once: parametrized items share it) so that the code under
    test raising NotImplementedError ends the test with that error and the example that raised it. Only
    that changes: any other exception, or a pass, goes to hypothesis as before."""
    inner = handle.inner_test
    if getattr(inner, "_stops_at_not_implemented", False):
        return

    @functools.wraps(inner)
    def stopping(*args, **kwargs):
        try:
            return inner(*args, **kwargs)
        except NotImplementedError as error:
            shown = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())])
            error.add_note(f"Failing test case (the first example that raised it: a NotImplementedError is not "
                           f"shrunk): {inner.__name__}({shown})")
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


def _apply_grading_budget(item, at_least: int = 0) -> None:
    """A generated test listed in grader/grading_budget.py runs its own number of examples when it grades, where
    that is at least `at_least` (set once per test function: the items of a parametrized test share it, and so
    do the runs of one process). A test with settings of its own asks `graded_examples` for its budget."""
    test = getattr(item, "obj", None)
    examples, _why = grading_budget.BUDGET.get(getattr(test, "__name__", None), (None, ""))
    if examples and examples < at_least:
        return
    if examples and getattr(test, "is_hypothesis_test", False) and getattr(test, "_grading_budget", None) is None:
        test._grading_budget = examples
        with contextlib.suppress(hypothesis.errors.InvalidArgument):  # settings of its own: already its budget
            settings(settings.default, max_examples=examples)(test)


def graded_examples(test_name: str, otherwise: int) -> int:
    """The examples of a generated test with settings of its own: its budget (grader/grading_budget.py) where the
    run grades (a grading profile), else `otherwise`."""
    if settings.get_current_profile_name() in GRADING_PROFILES and test_name in grading_budget.BUDGET:
        return grading_budget.BUDGET[test_name][0]
    return otherwise


def _seed_generated_test(item, seed: int) -> None:
    """Seed a hypothesis test from the grading seed and its own name (a seed overrides derandomization)."""
    test = getattr(item, "obj", None)
    if getattr(test, "is_hypothesis_test", False):
        name = f"{seed}:{item.module.__name__}:{test.__qualname__}".encode()
        hypothesis.seed(int.from_bytes(hashlib.sha256(name).digest()[:8], "big"))(test)


problem_of = time_limit.problem_of  # the problem id a test belongs to (its marker), or None


def reference_available() -> bool:
    return importlib.util.find_spec("reference") is not None and (ROOT / "reference").is_dir()


def _mutant_overrides(spec: str) -> dict:
    if not (ROOT / "tests" / "mistakes").is_dir():
        raise pytest.UsageError("--mutant: the catalogue of mistakes (tests/mistakes/) is course staff's; it is not "
                                "in the student release")
    # imported by name, not by an import statement: the release's check refuses any import of the catalogue,
    # and this one only runs where the catalogue is (guarded above)
    from tests.mistakes import find_mistake  # course staff's: boundary.RUN_WHERE_PRESENT

    mistake = find_mistake(spec)
    return {f"{mistake.problem}.{name}": value for name, value in mistake.replaces.items()}


@pytest.fixture(scope="session")
def impl(request):
    """The package under test: `impl.flops.matmul_flops(...)`, `impl.run(scenario, ...)`."""
    from grader.harness.client import IsolatedPackage
    from grader.harness.local import LocalPackage

    options = request.config.option
    if options.mutant and (options.impl != "reference" or options.isolated):
        raise pytest.UsageError("--mutant applies to the reference, in-process: use --impl reference")
    if options.impl == "reference" and not reference_available():
        pytest.skip("the reference solution is not installed here")
    if options.sandbox and not options.isolated:
        raise pytest.UsageError("--sandbox applies to isolated mode: add --isolated")
    if options.isolated:
        sandbox = None
        if options.sandbox:
            from grader.harness.sandbox import Spec

            sandbox = Spec.load(options.sandbox)
        package = IsolatedPackage(options.impl, ROOT, call_timeout=options.call_timeout,
                                  memory_limit_mb=options.worker_memory_mb, sandbox=sandbox,
                                  test_cpu_seconds=options.test_cpu_timeout)
    else:
        overrides = _mutant_overrides(options.mutant) if options.mutant else None
        package = LocalPackage(options.impl, overrides)
    request.config._impl_package = package
    # created in the setup of the first test that needs it, after pytest_runtest_setup: told of that test here
    _begin_test(package, request.config._impl_item)
    yield package
    package.close()


@pytest.fixture
def writable_dir(impl, tmp_path) -> Path:
    """A folder where the code under test may write a file that the test then reads (the sandbox's home
    when the grader runs it)."""
    return impl.writable or tmp_path


@pytest.fixture(scope="session")
def ref():
    """The reference solution, in this process: the source of expected values in differential tests."""
    from grader.harness.local import LocalPackage

    if not reference_available():
        pytest.skip("differential test: needs the reference solution, which the grader has and the "
                    "student release does not")
    return LocalPackage("reference")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    item.config._impl_item = item  # the test whose setup may create the package (the `impl` fixture)
    _begin_test(getattr(item.config, "_impl_package", None), item)


def _begin_test(package, item) -> None:
    """Tell an isolated package's worker the test it serves next, before any call: a worker serves one problem,
    with that problem's oracles absent."""
    if package is not None and package.isolated:
        package.worker.begin_test(item.nodeid, problem_of(item))


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item):
    package = getattr(item.config, "_impl_package", None)
    if package is not None and package.isolated:  # grading: keep the test process's memory down
        from grader.harness import heap

        heap.release()
