"""pytest loads this file first, from the project root: it brings in the test suite's options and
fixtures (`--impl`, `--isolated`, `impl`, `ref`; see tests/plugin.py) before the command line is parsed."""

pytest_plugins = ["tests.plugin"]
