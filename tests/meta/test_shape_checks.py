"""The run-time type checks (grader/harness/typecheck.py): what a student's module is checked for, and what its
nested functions cost."""

import sys
import textwrap

import pytest

from grader.harness.typecheck import install_shape_checks, is_type_check_error

pytestmark = pytest.mark.meta

MODULE = textwrap.dedent('''
    import torch
    from jaxtyping import Float

    def scale(x: Float[torch.Tensor, "rows cols"], k: int) -> Float[torch.Tensor, "rows cols"]:
        return x * k

    class Meter:
        def add(self, n: int) -> int:
            return n

    def outer(n: int) -> int:
        def helper(m: str) -> str:  # a nested function's annotations are its author's, never checked
            return m
        return helper(n)
''')


@pytest.fixture
def package(tmp_path, monkeypatch):
    name = f"ra_shape_checks_{id(tmp_path)}"
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / name / "mod.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    hook = install_shape_checks([name])
    __import__(f"{name}.mod")
    yield sys.modules[f"{name}.mod"]
    hook.uninstall()  # the meta-tests' process keeps no finder for a package that is gone
    for module in [m for m in sys.modules if m.startswith(name)]:
        del sys.modules[module]


def test_module_level_functions_and_methods_are_checked(package):
    import torch

    assert package.scale(torch.ones(2, 3), 2).shape == (2, 3)
    for call in (lambda: package.scale(torch.ones(2), 2), lambda: package.scale(torch.ones(2, 3), 2.5),
                 lambda: package.Meter().add("one")):
        with pytest.raises(Exception) as failure:  # noqa: PT011 - which type is jaxtyping's or beartype's choice
            call()
        assert is_type_check_error(failure.value), failure.value


def test_a_nested_function_is_not_decorated_each_time_it_is_defined(package):
    assert package.outer(3) == 3  # its annotation says str: unchecked
