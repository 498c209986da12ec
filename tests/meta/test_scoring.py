"""The grader's table, without running a suite: untouched stubs are one line per problem."""

import pytest

from grader.scoring import ProblemScore, not_started, table
from grader.scoring import TestScore as Score  # not collected as a test class
from tests.meta.suite import ROOT
from tests.registry import PROBLEMS

pytestmark = pytest.mark.meta


@pytest.mark.parametrize("problem", [p.id for p in PROBLEMS])
def test_every_stub_is_not_started_and_no_reference_is(problem):
    assert not_started((ROOT / "assignment" / f"{problem}.py").read_bytes())
    assert not not_started((ROOT / "reference" / f"{problem}.py").read_bytes())


def test_a_started_function_or_a_broken_file_is_not_untouched():
    stub = (ROOT / "assignment" / "flops.py").read_text()
    started = stub.replace('    raise NotImplementedError("mfu")', '    return flops / seconds / peak_flops_per_sec')
    assert started != stub and not not_started(started)
    assert not not_started("def f(:\n")
    assert not not_started("X = 1\n")


def test_an_untouched_problem_is_one_line_whatever_its_tests_reported():
    messages = ["NotImplementedError: matmul_flops", "AssertionError: got {'raised': ['NotImplementedError']}",
                "AssertionError: hint: return an int, not dict"]
    tests = [Score(f"tests/test_flops.py::test_{i}", "flops", 1.0, False, "failed", m)
             for i, m in enumerate(messages)]
    text = table([ProblemScore("flops", "Counting compute", 3, tests)], [], frozenset({"flops"}))
    assert "flops: not started, every function raises NotImplementedError (3 tests)" in text
    assert "Failures" not in text and "{'raised'" not in text and "hint" not in text
    partial = table([ProblemScore("flops", "Counting compute", 3, tests)], [])
    assert "Failures" in partial  # a started problem still lists what is not a NotImplementedError
