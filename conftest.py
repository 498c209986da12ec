"""pytest loads this file first, from the project root: it brings in the test suite's options and
fixtures (`--impl`, `--isolated`, `impl`, `ref`; see grader/harness/plugin.py) before the command line is parsed."""

import importlib.util

# `--mutant` (TAs: a catalogued mistake swapped into the reference) where the course staff's tools are
pytest_plugins = ["grader.harness.plugin"] + ["grader.staff.mutant"] * bool(importlib.util.find_spec("grader.staff"))
