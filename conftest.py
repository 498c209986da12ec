"""pytest loads this file first, from the project root: it brings in the test suite's options and
fixtures (`--impl`, `--isolated`, `impl`, `ref`; see grader/harness/plugin.py) before the command line is parsed."""

pytest_plugins = ["grader.harness.plugin"]
