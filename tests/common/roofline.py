"""roofline: the dtypes the tests draw and the tolerance of every figure (tests/test_roofline.py's docstring
says why)."""

import torch

REL = 1e-12  # relative: each figure is a product or quotient of a few floats
DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.float8_e4m3fn, torch.float64]
