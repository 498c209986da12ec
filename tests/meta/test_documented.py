"""No documented error is left to chance: every exception class that a public docstring of assignment/ names
(the function's own, its class's, or the module's) has a fixed call in tests/documented.py's
`DOCUMENTED_ERRORS`, which the problem's graded `test_documented_errors_are_raised` runs. Each entry raises its
error on the reference and returns on its allowed call there; each fails on the stubs.

The extraction is deliberately crude: any word ending in "Error" or "Exception" in a docstring is a promise,
except in the paragraphs listed in IGNORED_PARAGRAPHS (with the reason). A new promise with no entry fails here,
and so does an entry for an error no docstring names (a stale entry, or an extraction that missed a phrasing).
`python -m tests.meta.test_documented` prints what the extraction finds.
"""

import ast
import builtins
import importlib
import re
from collections import defaultdict

import pytest

from grader.harness.local import LocalPackage
from tests.documented import DOCUMENTED_ERRORS, Call, expect_documented_error
from tests.meta.suite import ROOT, problems_with_tests
from tests.scenarios import documented as scenarios

pytestmark = pytest.mark.meta

ERROR_NAME = re.compile(r"\b([A-Z][A-Za-z0-9]*(?:Error|Exception))\b")

# Paragraphs of a docstring that name an exception without promising it: (module, the paragraph's start, why).
IGNORED_PARAGRAPHS = (
    ("mini_einops", "Out of scope", "what these functions need not do; the reference's errors there are its own "
                                    "choice, and einops' NotImplementedError and RuntimeError are einops'"),
)

# A module docstring's promise applies to these public functions (every module docstring that names an error
# must be listed: a promise with no function to test would be unchecked).
MODULE_PROMISES_APPLY_TO = {
    "mini_einops": ("rearrange", "reduce", "repeat", "einsum"),
}


def _paragraphs(module: str, doc: str | None) -> list[str]:
    paragraphs = re.split(r"\n\s*\n", doc or "")
    ignored = tuple(start for m, start, _ in IGNORED_PARAGRAPHS if m == module)
    return [p for p in paragraphs if not p.strip().startswith(ignored)] if ignored else paragraphs


def _errors(module: str, doc: str | None) -> set[str]:
    return {name for p in _paragraphs(module, doc) for name in ERROR_NAME.findall(p)}


def documented_errors(module: str) -> dict[str, set[str]]:
    """function -> the exception classes its docstrings promise, for the public names of assignment/<module>.py
    (a class's constructor under the class's name, a method as "Class.method")."""
    public = set(importlib.import_module(f"assignment.{module}").__all__)
    tree = ast.parse((ROOT / "assignment" / f"{module}.py").read_text())
    found: dict[str, set[str]] = defaultdict(set)
    module_errors = _errors(module, ast.get_docstring(tree))
    if module_errors:
        assert module in MODULE_PROMISES_APPLY_TO, (
            f"assignment/{module}.py's module docstring names {sorted(module_errors)}: say in "
            f"MODULE_PROMISES_APPLY_TO which functions that promise is about")
        for function in MODULE_PROMISES_APPLY_TO[module]:
            found[function] |= module_errors
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in public:
            found[node.name] |= _errors(module, ast.get_docstring(node))
        elif isinstance(node, ast.ClassDef) and node.name in public:
            found[node.name] |= _errors(module, ast.get_docstring(node))
            for member in node.body:
                if isinstance(member, ast.FunctionDef) and (member.name == "__init__"
                                                            or not member.name.startswith("_")):
                    key = node.name if member.name == "__init__" else f"{node.name}.{member.name}"
                    found[key] |= _errors(module, ast.get_docstring(member))
    return {function: errors for function, errors in found.items() if errors}


def _covers(problem: str, error: str) -> set[str]:
    """The names an entry for `error` covers: its class and its bases ("EinopsError (a ValueError)")."""
    cls = getattr(importlib.import_module(f"assignment.{problem}"), error, None) or getattr(builtins, error, None)
    assert isinstance(cls, type) and issubclass(cls, BaseException), f"{problem}: {error} is no exception class"
    return {c.__name__ for c in cls.__mro__ if c not in (BaseException, Exception, object)}


def _table(problem: str) -> dict[str, set[str]]:
    """function -> the exception classes its entries cover."""
    table: dict[str, set[str]] = defaultdict(set)
    for case in DOCUMENTED_ERRORS.get(problem, []):
        table[case.function] |= _covers(problem, case.error)
    return dict(table)


def test_the_extraction_finds_promises():
    # a regex that stopped matching would make every other test here pass vacuously
    found = {problem: documented_errors(problem) for problem in problems_with_tests()}
    assert sum(len(errors) for functions in found.values() for errors in functions.values()) >= 20, found
    assert found["mini_einops"]["rearrange"] == {"EinopsError", "ValueError"}
    assert found["adamw"]["AdamW"] == {"ValueError"}
    assert found["roofline"]["plot_roofline"] == {"ImportError"}


@pytest.mark.parametrize("problem", problems_with_tests())
def test_every_documented_error_has_a_fixed_example(problem):
    documented, table = documented_errors(problem), _table(problem)
    missing = sorted((f, e) for f, errors in documented.items() for e in errors - table.get(f, set()))
    assert not missing, (
        f"assignment/{problem}.py's docstrings promise these errors, with no fixed example in tests/documented.py "
        f"DOCUMENTED_ERRORS[{problem!r}]: {missing}")
    extra = sorted((c.function, c.error) for c in DOCUMENTED_ERRORS.get(problem, [])
                   if c.error not in documented.get(c.function, set()))
    assert not extra, (
        f"tests/documented.py DOCUMENTED_ERRORS[{problem!r}] has entries for errors that no docstring of "
        f"assignment/{problem}.py names (stale, or a phrasing the extraction here misses): {extra}")


@pytest.mark.parametrize("problem", problems_with_tests())
def test_the_graded_test_runs_the_table(problem):
    module = importlib.import_module(f"tests.test_{problem}")
    calls = [c for c in DOCUMENTED_ERRORS.get(problem, []) if c.call is not None]
    has_test = hasattr(module, "test_documented_errors_are_raised")
    assert has_test == bool(calls), (
        f"tests/test_{problem}.py: test_documented_errors_are_raised runs DOCUMENTED_ERRORS[{problem!r}]'s calls: "
        f"it is needed exactly when there are some ({len(calls)})")
    for case in DOCUMENTED_ERRORS.get(problem, []):
        assert (case.call is None) != (case.covered_by is None), f"{case.id}: a call or covered_by, not both"
        if case.covered_by:
            test = getattr(module, case.covered_by, None)
            assert test is not None, f"{case.id}: tests/test_{problem}.py has no {case.covered_by}"
            assert not getattr(test, "is_hypothesis_test", False), (
                f"{case.id}: {case.covered_by} is a generated test: it may never draw the call that raises")


def _entries():
    return [pytest.param(problem, case, id=f"{problem}.{case.id}")
            for problem, entries in DOCUMENTED_ERRORS.items() for case in entries if case.call is not None]


@pytest.mark.parametrize(("problem", "case"), _entries())
def test_each_entry_raises_on_the_reference_and_its_allowed_call_returns(problem, case):
    expect_documented_error(LocalPackage("reference"), problem, case)


@pytest.mark.parametrize(("problem", "case"), _entries())
def test_each_entry_fails_on_the_stubs(problem, case):
    with pytest.raises(NotImplementedError):
        scenarios.raised(LocalPackage("assignment"), problem, case.function, list(case.call.args),
                         dict(case.call.kwargs))


def test_placeholders_name_built_objects():
    def names(value):
        if type(value) is dict and set(value) == {"$object"}:
            yield value["$object"]
        elif isinstance(value, list | tuple):
            for v in value:
                yield from names(v)

    for entries in DOCUMENTED_ERRORS.values():
        for case in entries:
            for call in (case.call, case.allowed):
                if isinstance(call, Call):
                    unknown = set(names(list(call.args) + list(call.kwargs.values()))) - set(scenarios.OBJECTS)
                    assert not unknown, f"{case.id}: no object {sorted(unknown)} in tests/scenarios/documented.py"


if __name__ == "__main__":
    for problem in problems_with_tests():
        for function, errors in sorted(documented_errors(problem).items()):
            entries = [c for c in DOCUMENTED_ERRORS.get(problem, []) if c.function == function]
            print(f"{problem}.{function}: {', '.join(sorted(errors))} - {len(entries)} fixed example(s)")
