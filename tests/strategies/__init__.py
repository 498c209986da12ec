"""Hypothesis strategies, a module per problem (tests/strategies/<problem>.py); the sizes every problem draws
are here.

Sizes per named dimension are distinct, so an answer with two dimensions swapped cannot pass.
"""

from hypothesis import strategies as st


def distinct_sizes(n: int, min_value: int = 1, max_value: int = 16):
    """`n` distinct sizes (a list)."""
    return st.lists(st.integers(min_value, max_value), min_size=n, max_size=n, unique=True)


def big_sizes(n: int):
    """`n` distinct sizes up to a trillion: counting formulas must not overflow or round."""
    return st.lists(st.integers(1, 10**12), min_size=n, max_size=n, unique=True)
