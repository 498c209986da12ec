"""flops: the tolerance of every FLOP count (tests/test_flops.py's docstring says why)."""

REL = 1e-9  # relative: counts are exact integers; float formulas (6ND, days, MFU) round once or twice
