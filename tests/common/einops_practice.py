"""einops_practice: the functions, seeded inputs, and one small call of each (the audit's and compare's)."""

import torch

# rtol = atol of the differential test against the reference (tests/test_einops_practice.py, Tolerances)
# two programs of the same function sum in different orders: ~1e-6 apart, mistakes 1e-1
DIFFERENTIAL_TOL = 1e-5

FUNCTIONS = ("matmul", "attention_scores", "sum_hidden", "split_heads", "merge_heads", "per_head_linear",
             "patchify", "unpatchify", "pool2d", "pairwise_sq_distances", "repeat_kv", "multihead_attention",
             "two_layer_backward")


def randn(seed: int, *shape: int, contiguous: bool = True) -> torch.Tensor:
    """Standard normal values from `seed`; non-contiguous (a transposed buffer) unless `contiguous`."""
    t = torch.randn(*reversed(shape), generator=torch.Generator().manual_seed(seed))
    t = t.permute(*reversed(range(len(shape))))
    return t.contiguous() if contiguous else t


def audit_calls(seed: int = 0) -> list[tuple[str, list]]:
    """One small call of every function (sizes distinct per dimension), inputs from `seed`."""

    def r(k, *shape):
        return randn(seed + k, *shape)

    x3, x4 = r(0, 2, 3, 6), r(1, 2, 3, 4, 6)
    return [
        ("matmul", [r(2, 3, 4), r(3, 4, 5)]),
        ("attention_scores", [x4, r(4, 2, 3, 5, 6)]),
        ("sum_hidden", [x3]),
        ("split_heads", [x3, 2]),
        ("merge_heads", [x4]),
        ("per_head_linear", [x3, r(5, 2, 3, 4)]),
        ("patchify", [x4, 2, 3]),
        ("unpatchify", [r(6, 2, 2, 18), 2, 6, 2, 3]),
        ("pool2d", [x4, 2, 3, "max"]),
        ("pairwise_sq_distances", [r(7, 3, 4), r(8, 5, 4)]),
        ("repeat_kv", [x4, 2]),
        ("multihead_attention", [x3, *(r(9 + i, 6, 6) for i in range(4)), 2]),
        ("two_layer_backward", [r(13, 2, 3), r(14, 3, 4), r(15, 4, 5), r(16, 2, 5)]),
    ]
