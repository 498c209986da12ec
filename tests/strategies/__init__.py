"""Hypothesis strategies, a module per problem (tests/strategies/<problem>.py); the sizes every problem draws
are here.

Sizes per named dimension are distinct, so an answer with two dimensions swapped cannot pass.
"""

import itertools

from hypothesis import example
from hypothesis import strategies as st


def distinct_sizes(n: int, min_value: int = 1, max_value: int = 16):
    """`n` distinct sizes (a list)."""
    return st.lists(st.integers(min_value, max_value), min_size=n, max_size=n, unique=True)


def big_sizes(n: int):
    """`n` distinct sizes up to a trillion: counting formulas must not overflow or round."""
    return st.lists(st.integers(1, 10**12), min_size=n, max_size=n, unique=True)


# Rare inputs, pinned. A generated test whose item caught a catalogued mistake only late under some grading seed
# (a rare input: one op of several, then its rare case) runs that input as its explicit example, `@example(data=
# PINNED)`, before any generated one and under every seed; the item then needs few generated examples
# (grader/grading_budget.py). In the test, `pinned_or_drawn` gives what one example checks.
PINNED = "the pinned inputs"


def pinned_or_drawn(data, pinned: list, strategy, label: str) -> list:
    """The item's pinned inputs for its explicit example (`data` is PINNED), else one input drawn from `strategy`."""
    return pinned if data is PINNED else [data.draw(strategy, label=label)]


def every(fixed: dict, **spaces):
    """Every combination of the small finite `spaces` (argument -> its values: the fused kernels, a list of dtypes)
    as an explicit example of the test, its other arguments `fixed`: a space this small is tried whole in every
    grading, never left to a draw that a resubmission could change."""
    names = list(spaces)

    def decorate(test):
        for values in reversed(list(itertools.product(*spaces.values()))):
            test = example(**fixed, **dict(zip(names, values, strict=True)))(test)
        return test

    return decorate
