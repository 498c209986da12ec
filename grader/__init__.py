"""The grading CLI: `resource-grader grade SUBMISSION` (see `resource-grader --help`)."""

import sys
from pathlib import Path

TREE_MARK = "tests/scenarios/__init__.py"  # a file of the official tree: the suite's scenarios
INSTALLED_TREE = "official"  # where a non-editable install (`pip install .`) keeps its copy of the tree (setup.py)


def _official_root() -> Path:
    """The official assignment, tests and reference: the repository that holds this package (a clone, an
    editable install, the Gradescope zip, the student release), else the copy of it that setup.py put
    inside the package when it was built as a wheel. Neither: the grader cannot grade, and says why."""
    here = Path(__file__).resolve().parent
    for root in (here.parent, here / INSTALLED_TREE):
        if (root / TREE_MARK).is_file():
            return root
    raise SystemExit(f"resource-grader: no assignment tree here ({here.parent / TREE_MARK} is missing): the "
                     "grader runs the assignment's own tests, which this installation lacks. Install it from the "
                     "repository with `pip install -e .` (or `make venv`) and run it there.")


OFFICIAL_ROOT = _official_root()
# The grader's own imports of the official tree (tests.scenarios, tests.strategies, ...) come from it, whatever the
# current folder (`python -m grader` run in a submission's folder takes that folder off the path: __main__.py).
# Where a tree is on the path already, it is the one in use: the repository's own pytest, the grading
# workspace's (whose plugin, grader/harness/plugin.py, imports this package), the worker's tree.
if not any((Path(entry or ".") / TREE_MARK).is_file() for entry in sys.path):
    sys.path.insert(0, str(OFFICIAL_ROOT))
# True in a non-editable install: the tree is a copy, without the repository's README, kit and meta-tests
INSTALLED_COPY = OFFICIAL_ROOT.name == INSTALLED_TREE and OFFICIAL_ROOT.parent == Path(__file__).resolve().parent


def has_reference() -> bool:
    """Whether this tree holds the reference solution: the course's tree does, the student release
    (`resource-grader release`) does not, and there the grader runs the local tests only."""
    return (OFFICIAL_ROOT / "reference").is_dir()
