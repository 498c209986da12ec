"""The meta-tests in parallel: `make meta` (all but those marked slow) and `make slow` (those) run them on
pytest-xdist's workers, a test file (or a test class) to a worker at a time (`--dist loadscope`), so that a file's
module fixtures (a grading, a built image) are made once.
The hostile corpus is a class per sandbox mode: its two gradings run side by side.

- The costliest files and classes are handed out first (COSTLIEST_FIRST, then the rest in the order collected;
  `--no-loadscope-reorder` keeps that order), so that no worker starts a long one as the others finish.
- The catalogue of mistakes is graded once per session (`catalogue`, tests/meta/catalogue.py), whichever worker
  asks first, and read by every meta-test of it.
- Each xdist worker's gradings take their sandbox uids from a range of their own: a test that checks what its
  gradings' uids left behind (processes, files, IPC objects) sees only its own.
- A meta-test's time limit (pytest-timeout's `timeout`) is CPU seconds of its process tree, with a wall-clock
  backstop ten times longer (tests/meta/processes.py): a busy machine slows a meta-test, never fails it.
"""

import os
from pathlib import Path

import pytest

from grader.harness import uids
from tests.meta import catalogue as catalogue_of_mistakes
from tests.meta import processes
from tests.meta.suite import problems_selected

# The longest first, ordered by what `make test` and `make slow` print (--durations=20): the corpus in each mode,
# then the grader's own tests, the catalogue of mistakes, the Gradescope image.
COSTLIEST_FIRST = ("test_hostile.py::TestWithEveryLayer", "test_hostile.py::TestWithTheUserLayerAlone",
                   "test_grader.py", "test_mistakes.py", "test_gradescope_image.py", "test_gradescope.py",
                   "test_class_report.py", "test_web_report.py::TestInABrowser", "test_cluster.py", "test_compare.py")

_WORKER = os.environ.get("PYTEST_XDIST_WORKER")  # "gw0", "gw1", ...: set in each xdist worker
if _WORKER:
    uids.UID_BASE += 10_000 * (1 + int(_WORKER.removeprefix("gw")))
    os.environ["RA_SANDBOX_UID_BASE"] = str(uids.UID_BASE)  # the gradings this worker starts


def scope_of(item) -> str:
    """What xdist's loadscope hands to one worker: the test's class where it has one, else its file."""
    return item.path.name + (f"::{item.cls.__name__}" if item.cls else "")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """After pytest's own reordering (by fixture), the costliest scopes first."""
    rank = {scope: i for i, scope in enumerate(COSTLIEST_FIRST)}
    items.sort(key=lambda item: rank.get(scope_of(item), len(rank)))  # stable: within a scope, as before


META = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item, settings):
    if not Path(item.path).is_relative_to(META) or settings.method != "signal":
        return None  # pytest-timeout's own (a graded test's: grader/harness/time_limit.py)
    processes.set_cpu_timer(item, settings.timeout)
    return True


@pytest.fixture(scope="session")
def catalogue(request, tmp_path_factory) -> dict[tuple[str, str], dict]:
    """Every catalogued mistake, graded as `grade` grades it (tests/meta/catalogue.py), once for the session:
    (problem, mistake id) -> its result. `-k <problem>`: that problem's mistakes alone."""
    return catalogue_of_mistakes.graded(problems_selected(request, "catalogue"),
                                        catalogue_of_mistakes.shared_folder(tmp_path_factory))
