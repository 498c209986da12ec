"""Problem (roofline): arithmetic intensity. See handout.md, "Problem (roofline)".

Conventions (this course uses these):
- FLOPs: a multiply-add is 2 FLOPs; element-wise work counts too: one FLOP per element for each
  element-wise operation (ReLU: 1 per element; GELU: the element-wise operations of PyTorch's own
  decomposition of it, 5 per element exact with erf, 9 with the tanh approximation).
- Bytes: every input is read from memory once and every output written once, in the given dtype (no
  caching, no fusion, nothing kept in registers between operations). Reads and writes both count.
- Hardware: `HardwareSpec` from `assignment/given.py`; peaks are dense, per dtype (`hw.peak(dtype)`,
  FLOP/s), bandwidth in bytes/s.
- An operation whose arithmetic intensity is at least the accelerator's is compute-bound; below it,
  memory-bound.
"""

import torch

from assignment.given import HardwareSpec, OpCost

COMPUTE_BOUND, MEMORY_BOUND = "compute-bound", "memory-bound"


def relu_cost(n: int, dtype: torch.dtype) -> OpCost:
    """ReLU over `n` elements: 1 FLOP each; read n, write n. In bfloat16 the intensity is 0.25."""
    raise NotImplementedError("relu_cost")


def gelu_cost(n: int, dtype: torch.dtype, approximate: str = "none") -> OpCost:
    """GELU over `n` elements, as `torch.nn.functional.gelu(x, approximate=...)`: 5 FLOPs per element for
    "none" (x * 0.5 * (1 + erf(x / sqrt 2)): mul, mul, erf, add, mul) and 9 for "tanh"; read n, write n.
    Raise ValueError for any other `approximate`."""
    raise NotImplementedError("gelu_cost")


def dot_cost(n: int, dtype: torch.dtype) -> OpCost:
    """Dot product of two `n`-vectors: 2n FLOPs; read both vectors, write one scalar. In bfloat16 the
    intensity approaches 0.5."""
    raise NotImplementedError("dot_cost")


def matvec_cost(m: int, n: int, dtype: torch.dtype) -> OpCost:
    """(m x n) matrix times an n-vector: 2mn FLOPs; read the matrix and the vector, write m values. In
    bfloat16 the intensity approaches 1."""
    raise NotImplementedError("matvec_cost")


def matmul_cost(b: int, d: int, k: int, dtype: torch.dtype) -> OpCost:
    """(b x d) @ (d x k): 2bdk FLOPs; read both matrices, write the b x k result. A 1024 x 1024 x 1024
    matmul in bfloat16 has intensity 1024/3, about 341."""
    raise NotImplementedError("matmul_cost")


def arithmetic_intensity(cost: OpCost) -> float:
    """FLOPs per byte moved."""
    raise NotImplementedError("arithmetic_intensity")


def accelerator_intensity(hw: HardwareSpec, dtype: torch.dtype) -> float:
    """The ridge point of `hw`'s roofline in `dtype`: peak FLOP/s over memory bandwidth, the intensity an
    operation needs to keep the chip busy. H100 SXM in bfloat16: 989.5e12 / 3.35e12, about 295."""
    raise NotImplementedError("accelerator_intensity")


def classify(cost: OpCost, hw: HardwareSpec, dtype: torch.dtype) -> str:
    """`COMPUTE_BOUND` ("compute-bound") if the operation's intensity is at least the accelerator's,
    else `MEMORY_BOUND` ("memory-bound"). Exactly at the ridge it is compute-bound."""
    raise NotImplementedError("classify")


def roofline_time(cost: OpCost, hw: HardwareSpec, dtype: torch.dtype) -> float:
    """Seconds the operation takes on the roofline model: the compute (FLOPs at the peak) and the memory
    traffic (bytes at the bandwidth) overlap perfectly, so the slower of the two decides."""
    raise NotImplementedError("roofline_time")


def attainable_flops_per_sec(intensity: float, hw: HardwareSpec, dtype: torch.dtype) -> float:
    """The roof: the FLOP/s an operation of this intensity can reach, limited by the peak and by what the
    bandwidth can feed (intensity x bandwidth)."""
    raise NotImplementedError("attainable_flops_per_sec")


def min_compute_bound_batch(d: int, k: int, hw: HardwareSpec, dtype: torch.dtype) -> int:
    """The smallest batch b >= 1 for which the matmul (b x d) @ (d x k) in `dtype` is compute-bound on
    `hw` (by `classify` and `matmul_cost`). For large d and k the intensity is about b * 2 / itemsize,
    so in bfloat16 on an H100 the answer is near the ridge, ~295.

    Raise ValueError when no batch is enough: the intensity grows with b towards 2dk / (itemsize (d + k))
    and never reaches it."""
    raise NotImplementedError("min_compute_bound_batch")


def plot_roofline(hw: HardwareSpec, points: dict[str, OpCost], path: str,
                  dtype: torch.dtype = torch.bfloat16) -> None:
    """Write a PNG of `hw`'s roofline in `dtype` to `path`: log-log axes (arithmetic intensity in FLOP/byte
    against attainable FLOP/s), the roof, the ridge point marked and labelled with its intensity, and
    each operation of `points` (label -> cost) drawn on the roof and labelled. Readable at a glance: axis
    labels with units, a title naming the GPU and dtype.

    Import matplotlib inside this function and use its "Agg" backend (matplotlib is installed with the
    project; where an environment lacks it, raise ImportError whose message says to run pip install -e '.[plot]')."""
    raise NotImplementedError("plot_roofline")


__all__ = [
    "HardwareSpec",
    "OpCost",
    "relu_cost",
    "gelu_cost",
    "dot_cost",
    "matvec_cost",
    "matmul_cost",
    "arithmetic_intensity",
    "accelerator_intensity",
    "classify",
    "roofline_time",
    "attainable_flops_per_sec",
    "min_compute_bound_batch",
    "plot_roofline",
]
