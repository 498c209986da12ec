"""Catalogs of plausible wrong solutions, one module per problem: what the suite must catch.

Each `Mistake` replaces one or more of the reference's public names with a wrong version. The meta-test
`tests/meta/test_mistakes.py` runs the problem's tests (not the differential ones: the oracle tests a
student sees must catch it) against the reference with the mistake swapped in, and asserts they fail:

    pytest --impl reference --mutant flops:macs -m "flops and not differential"

The catalogs double as TA documentation of what the suite catches and what students get wrong.
"""

import importlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Mistake:
    problem: str
    id: str
    description: str
    replaces: dict  # public name -> wrong implementation


def catalog(problem: str) -> list[Mistake]:
    """The mistakes catalogued for `problem` ([] if it has no catalog yet)."""
    try:
        module = importlib.import_module(f"tests.mistakes.{problem}")
    except ModuleNotFoundError:
        return []
    return list(module.MISTAKES)


def find_mistake(spec: str) -> Mistake:
    """`spec` is "problem:mistake_id"."""
    problem, _, mistake_id = spec.partition(":")
    for mistake in catalog(problem):
        if mistake.id == mistake_id:
            return mistake
    known = ", ".join(f"{problem}:{m.id}" for m in catalog(problem)) or "none"
    raise ValueError(f"unknown mistake {spec!r}; known for {problem!r}: {known}")
