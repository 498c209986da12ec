"""The run-time type checks (grader/harness/typecheck.py): the stubs' annotations, at the calls the tests make, in the
test process; never the student's own, anywhere."""

import sys

import pytest
import torch
from jaxtyping import Float
from torch import Tensor

from grader.harness import typecheck
from grader.harness.report import raised_by
from grader.harness.typecheck import StubArgumentError, StubTypeError, call, checked, is_type_check_error
from tests.meta.suite import ROOT

pytestmark = pytest.mark.meta


def test_the_interface_is_the_stubs():
    """interface.py holds the stubs' imports and headers as assignment/ has them (the student's copy of the stubs,
    which they edit, is never where the annotations come from)."""
    assert typecheck.interface_source(ROOT) == typecheck.INTERFACE.read_text(), \
        "the stubs changed: run `python -m grader.harness.typecheck --write`"


def transpose(x: Float[Tensor, "rows cols"], k: int) -> Float[Tensor, "cols rows"]:
    """A stub: its body is never run."""


def test_a_value_the_stub_refuses_fails_with_one_line_naming_the_function():
    assert call("m.transpose", transpose, lambda x, k: (x * k).T, torch.ones(2, 3), 2).shape == (3, 2)
    first_lines = set()
    for rows, cols in ((2, 3), (4, 5)):  # every example: the same first line, shown once per problem
        with pytest.raises(StubTypeError) as failure:
            call("m.transpose", transpose, lambda x, k: x * k, torch.ones(rows, cols), 2)
        first_lines.add(str(failure.value).splitlines()[0])
        assert f"rows={rows}, cols={cols}" in str(failure.value), "it says the dimensions the arguments bound"
        assert is_type_check_error(failure.value) and raised_by(failure.value) == "check"
    assert first_lines == {"m.transpose returned a float32 tensor of 2 dimensions where its stub's annotation says "
                           "`Float[Tensor, 'cols rows']`"}, first_lines
    with pytest.raises(StubTypeError, match="returned a float where"):
        call("m.count", count, lambda n: n / 2, 4)


def count(n: int) -> int:
    """A stub."""


def test_an_argument_the_stub_refuses_is_the_suites_own_error():
    with pytest.raises(StubArgumentError, match=r"m.count: the test sent n=2.5, which its stub's annotation `int`") as \
            failure:
        call("m.count", count, lambda n: n, 2.5)
    assert raised_by(failure.value) == "grader", "never presented as the student's failure"


STUDENT_MEMORY = '''
import math
from typing import Any, Tuple

import torch


def _elements(shape: list, group: list) -> int:  # a private helper's loose annotation: `group` is sometimes None
    return math.prod(shape)


def tensor_bytes(shape: Tuple[Any], dtype: str) -> float:  # the stub's function, annotated by the student, wrongly
    return _elements(list(shape), None) * torch.empty((), dtype=dtype).element_size()
'''


@pytest.fixture
def student_package(tmp_path, monkeypatch):
    """assignment/ whose memory.py is STUDENT_MEMORY (the rest the stubs), under a name of its own for in-process."""
    from grader.harness.boundary import copy_worker_files

    copy_worker_files(tmp_path)
    (tmp_path / "assignment" / "memory.py").write_text(STUDENT_MEMORY)
    name = f"ra_student_{id(tmp_path)}"
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / name / "memory.py").write_text(STUDENT_MEMORY)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path, name
    for module in [m for m in sys.modules if m.startswith(name)]:
        del sys.modules[module]


def test_the_students_own_annotations_are_never_checked(student_package):
    """A private helper's annotation the student's call does not fit, and a stub function the student annotated
    otherwise: neither is checked, in-process or in the worker. The stub's annotation is, on the value returned."""
    from grader.harness.client import IsolatedPackage
    from grader.harness.local import LocalPackage

    root, name = student_package
    local = checked(LocalPackage(name))
    assert local.memory.tensor_bytes((2, 3), torch.float32) == 24
    isolated = IsolatedPackage("assignment", root, call_timeout=60)
    try:
        isolated.worker.begin_test("test_shape_checks::isolated", "memory")
        assert checked(isolated).memory.tensor_bytes((2, 3), torch.float32) == 24
    finally:
        isolated.close()


def test_a_type_check_is_shown_once_for_the_tests_that_saw_it():
    """The same refusal on 80 examples of 3 tests: one line at the top of the table, none among the failures; on
    Gradescope, once per behaviour."""
    from grader import messages
    from grader.scoring import BehaviourScore, ProblemScore, TestScore, behaviour_output, table

    first = "memory.tensor_bytes returned a float where its stub's annotation says `int`"
    tests = [TestScore(f"tests/test_memory.py::test_{i}", "memory", 0.1, False, "failed",
                       f"StubTypeError: {first}\n(it returned {i}.0)\n{typecheck.TYPE_CHECK_HINT}", "b", "check")
             for i in range(3)]
    passing = TestScore("tests/test_memory.py::test_other", "memory", 0.1, True, "passed", "", "b")
    behaviour = BehaviourScore("b", 0.4, [*tests, passing])
    text = table([ProblemScore("memory", "Counting bytes", 8, [behaviour])], [])
    assert text.count(first) == 1 and messages.TYPE_CHECKS_HEADER in text, text
    assert messages.FAILURES_HEADER not in text, "the type checks are its only failures: no list of them below"
    assert behaviour_output(behaviour).count(first) == 1
