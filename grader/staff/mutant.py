"""`pytest --impl reference --mutant PROBLEM:MISTAKE`: the reference with one catalogued mistake (tests/mistakes/)
swapped in, in this process (TAs, and the mutation tooling of tests/meta). A pytest plugin that conftest.py loads
where the course staff's tools are; the harness's `impl` fixture takes the functions it swaps in from
`config._ra_overrides`."""

import pytest


def pytest_addoption(parser):
    parser.getgroup("resource-accounting").addoption(
        "--mutant", default=None, metavar="PROBLEM:MISTAKE",
        help="TAs: the reference with one catalogued mistake swapped in (see tests/mistakes/)")


def pytest_configure(config):
    spec = config.getoption("--mutant")
    if not spec:
        return
    if config.getoption("--impl") != "reference" or config.getoption("--isolated"):
        raise pytest.UsageError("--mutant applies to the reference, in-process: use --impl reference")
    from tests.mistakes import find_mistake

    mistake = find_mistake(spec)
    config._ra_overrides = {f"{mistake.problem}.{name}": value for name, value in mistake.replaces.items()}
