"""benchmarking: the tolerance of every timing figure (tests/test_benchmarking.py's docstring says why)."""

REL, ABS = 1e-9, 1e-12  # fake clocks: exact sums of a few floats, and zero where nothing was timed
