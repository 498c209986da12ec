"""pytest's side of the harness (loaded by the root conftest.py): which implementation the tests see, and how
(in-process or isolated).

    pytest                          # your code (assignment/), in-process: pdb works
    pytest -m flops                 # one problem
    pytest --impl reference         # the reference solution (TAs, CI)
    pytest --isolated               # the code under test runs in a worker process (the grader's mode)
    pytest --all-failures           # every failure, those of problems not started or not importing too

What a student reads (a problem not started is one line, and the like) is feedback.py's; the hypothesis
profiles, and how a grading run applies its budgets and seed, are grader/profiles.py's.

Tests never import `assignment` or `reference` by name: they take the `impl` fixture (the package under
test) and, for expected values, the `ref` fixture (the reference, in this process; skipped where the
reference is not installed, as in the student release).
"""

import gc
import importlib
import importlib.util
from pathlib import Path

import pytest
import torch.testing._comparison
from hypothesis import settings

from grader import grading_budget, profiles
from grader.harness import feedback, front_end, time_limit
from grader.harness.feedback import ROOT
from grader.harness.typecheck import checked, install_given_checks
from grader.registry import EXTRA_MARKERS, PROBLEMS
from grader.seed import pin_hypothesis_constants

front_end.install()  # torch's compiler front end only where something needs more of it than eager code does
# torch.testing.assert_close imports torch.distributed.tensor at its first call (0.5 s of CPU, torch 2.13, 2026-12),
# to unwrap DTensors:
# none is compared here (a worker's tensors are decoded plain, the oracles make none, and no problem asks for one)
torch.testing._comparison._HAS_DTENSOR = False
pin_hypothesis_constants()  # a test's inputs, whatever this process imported before it draws them

# The stubs' annotations are checked where the tests call the package under test (`impl`: typecheck.checked), and
# the official dataclasses of assignment.given as this process builds them: installed before it is imported.
install_given_checks()

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
    group.addoption("--meta", action="store_true", help="also collect tests/meta (the suite's own tests)")
    group.addoption("--all-failures", action="store_true",
                    help="report every failure, those of problems not started (only stubs) or whose module does "
                         "not compile included (by default each such problem is one line)")


def pytest_configure(config):
    config.pluginmanager.register(time_limit, "resource-accounting-time-limit")
    config.pluginmanager.register(feedback, "resource-accounting-feedback")
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
            profiles.seed_generated_test(item, seed)
        if profile in profiles.GRADING_PROFILES:
            profiles.apply_grading_budget(item, at_least=grading_budget.FLOOR if profile == "floor" else 0)


def pytest_collection_finish(session):
    gc.freeze()  # what collection imported (torch, hypothesis, the tests) stays: no collection walks it again
    # A full collection every 100 middle ones, not every 10: what the tests keep alive between them (hypothesis'
    # records of each test's examples) made twenty full collections of 25 ms each in a grading's test process
    # (0.5 s); now six, at the same peak memory (393 against 395 MiB RSS; measured 2026-12 with gc.callbacks).
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, 100)


problem_of = time_limit.problem_of  # the problem id a test belongs to (its marker), or None


def reference_available() -> bool:
    return importlib.util.find_spec("reference") is not None and (ROOT / "reference").is_dir()


@pytest.fixture(scope="session")
def impl(request):
    """The package under test: `impl.flops.matmul_flops(...)`, `impl.run(scenario, ...)`."""
    from grader.harness.client import IsolatedPackage
    from grader.harness.local import LocalPackage

    options = request.config.option
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
        # a catalogued mistake swapped into the reference: grader/staff/mutant.py (`--mutant`), where it is
        package = LocalPackage(options.impl, getattr(request.config, "_ra_overrides", None))
    request.config._impl_package = package
    # created in the setup of the first test that needs it, after pytest_runtest_setup: told of that test here
    _begin_test(package, request.config._impl_item)
    yield checked(package)  # the stubs' annotations on every call a test makes (grader/harness/typecheck.py)
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
