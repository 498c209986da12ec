"""What a student reads on a first run: a screen, not thousands of lines.

A copy of the tree as the release has it (stubs, tests without the catalogue and the meta-tests, no
reference), then plain `pytest` there: the untouched stubs are one line per problem, the differential tests'
skip is said without -rs, and the run still fails; a problem module that does not compile, or raises while
it is imported, is one message.
"""

import shutil
import subprocess
import sys

import pytest

from tests.meta.suite import ROOT, grader_env

pytestmark = [pytest.mark.meta, pytest.mark.timeout(900)]

FIRST_RUN_LINES = 300
NOT_COMPILING_LINES = 30


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    out = tmp_path_factory.mktemp("student")
    ignore = shutil.ignore_patterns("__pycache__", "mistakes", "meta", "benchmarks")
    for folder in ("assignment", "tests", "grader"):
        shutil.copytree(ROOT / folder, out / folder, ignore=ignore)
    for name in ("conftest.py", "pyproject.toml"):
        shutil.copy(ROOT / name, out / name)
    return out


def pytest_in(tree, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=tree,
                          env=grader_env(), capture_output=True, text=True, timeout=900)


def test_the_first_run_on_the_stubs_is_a_line_per_problem(tree):
    done = pytest_in(tree)
    lines = done.stdout.splitlines()
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert len(lines) < FIRST_RUN_LINES, f"{len(lines)} lines:\n" + done.stdout[-3000:]
    for problem in ("tensors", "flops", "memory"):
        assert sum(line.startswith(f"{problem}: not started") for line in lines) == 1, done.stdout[-3000:]
    assert any(line.startswith("SKIPPED") and "differential test" in line for line in lines), done.stdout[-3000:]
    assert "USDT" not in done.stdout and "FAILURES" not in done.stdout


def test_a_module_that_does_not_compile_is_one_message(tree):
    module = tree / "assignment" / "tensors.py"
    source = module.read_text()
    module.write_text(source.replace("    raise NotImplementedError", "  x = 1\n    raise NotImplementedError", 1))
    try:
        done = pytest_in(tree, "-m", "tensors")
    finally:
        module.write_text(source)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert len(done.stdout.splitlines()) < NOT_COMPILING_LINES, done.stdout
    assert done.stdout.count("IndentationError") == 1 and "assignment/tensors.py" in done.stdout, done.stdout


@pytest.mark.parametrize("top_level", ["import a_module_that_is_not_there\n", "SIZE = 1 / 0\n"])
def test_a_module_that_does_not_import_is_one_message(tree, top_level):
    module = tree / "assignment" / "memory.py"
    source = module.read_text()
    module.write_text(top_level + source)
    try:
        done = pytest_in(tree, "-m", "memory")
    finally:
        module.write_text(source)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert len(done.stdout.splitlines()) < NOT_COMPILING_LINES, done.stdout
    assert "assignment/memory.py does not import" in done.stdout and done.stdout.count(top_level.strip()) == 1, \
        done.stdout


def test_every_failure_is_a_flag_away(tree):
    done = pytest_in(tree, "-m", "memory", "--all-failures", "-x")
    assert done.returncode == 1 and "NotImplementedError" in done.stdout and "not started" not in done.stdout, (
        done.stdout[-3000:])
