"""The grading CLI: `resource-grader grade SUBMISSION` (see `resource-grader --help`)."""

import importlib.util
import sys
from pathlib import Path

INSTALLED_TREE = "official"  # where a non-editable install (`pip install .`) keeps its copy of the tree (setup.py)


def _official_root() -> Path:
    """The official assignment, tests and reference: the repository that holds this package (a clone, an
    editable install, the Gradescope zip, the student release), else the copy of it that setup.py put
    inside the package when it was built as a wheel. Neither: the grader cannot grade, and says why."""
    here = Path(__file__).resolve().parent
    for root in (here.parent, here / INSTALLED_TREE):
        if (root / "tests" / "registry.py").is_file():
            return root
    raise SystemExit(f"resource-grader: no assignment tree here ({here.parent}/tests/registry.py is missing): the "
                     "grader runs the assignment's own tests, which this installation lacks. Install it from the "
                     "repository with `pip install -e .` (or `make venv`) and run it there.")


OFFICIAL_ROOT = _official_root()
# The grader's own imports of the official tree (tests.seam, tests.registry, ...) come from it, whatever the
# current folder (`python -m grader` run in a submission's folder takes that folder off the path: __main__.py)
if str(OFFICIAL_ROOT) not in sys.path:
    sys.path.insert(0, str(OFFICIAL_ROOT))
# True in a non-editable install: the tree is a copy, without the repository's README, kit and meta-tests
INSTALLED_COPY = OFFICIAL_ROOT.name == INSTALLED_TREE and OFFICIAL_ROOT.parent == Path(__file__).resolve().parent


def has_reference() -> bool:
    """Whether this tree holds the reference solution: the course's tree does, the student release
    (`resource-grader release`) does not, and there the grader runs the local tests only."""
    return (OFFICIAL_ROOT / "reference").is_dir()


def _load_registry():
    """tests/registry.py of the official tree, whatever the current folder (tests/ is not installed)."""
    if "tests.registry" in sys.modules:
        return sys.modules["tests.registry"]
    spec = importlib.util.spec_from_file_location("_ra_registry", OFFICIAL_ROOT / "tests" / "registry.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


registry = _load_registry()
