"""The grading CLI: `resource-grader grade SUBMISSION` (see `resource-grader --help`)."""

import importlib.util
import sys
from pathlib import Path

OFFICIAL_ROOT = Path(__file__).resolve().parent.parent  # the official assignment, tests and reference


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
