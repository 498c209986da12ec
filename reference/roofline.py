"""Problem (roofline): arithmetic intensity. Reference solution; the spec is in assignment/roofline.py."""

import math

import torch

from assignment.given import HardwareSpec, OpCost

COMPUTE_BOUND, MEMORY_BOUND = "compute-bound", "memory-bound"
_GELU_FLOPS_PER_ELEMENT = {"none": 5, "tanh": 9}


def relu_cost(n: int, dtype: torch.dtype) -> OpCost:
    return OpCost(flops=n, bytes=2 * n * dtype.itemsize)


def gelu_cost(n: int, dtype: torch.dtype, approximate: str = "none") -> OpCost:
    if approximate not in _GELU_FLOPS_PER_ELEMENT:
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    return OpCost(flops=_GELU_FLOPS_PER_ELEMENT[approximate] * n, bytes=2 * n * dtype.itemsize)


def dot_cost(n: int, dtype: torch.dtype) -> OpCost:
    return OpCost(flops=2 * n, bytes=(2 * n + 1) * dtype.itemsize)


def matvec_cost(m: int, n: int, dtype: torch.dtype) -> OpCost:
    return OpCost(flops=2 * m * n, bytes=(m * n + n + m) * dtype.itemsize)


def matmul_cost(b: int, d: int, k: int, dtype: torch.dtype) -> OpCost:
    return OpCost(flops=2 * b * d * k, bytes=(b * d + d * k + b * k) * dtype.itemsize)


def arithmetic_intensity(cost: OpCost) -> float:
    return cost.flops / cost.bytes


def accelerator_intensity(hw: HardwareSpec, dtype: torch.dtype) -> float:
    return hw.peak(dtype) / hw.memory_bandwidth


def classify(cost: OpCost, hw: HardwareSpec, dtype: torch.dtype) -> str:
    compute_bound = arithmetic_intensity(cost) >= accelerator_intensity(hw, dtype)
    return COMPUTE_BOUND if compute_bound else MEMORY_BOUND


def roofline_time(cost: OpCost, hw: HardwareSpec, dtype: torch.dtype) -> float:
    return max(cost.flops / hw.peak(dtype), cost.bytes / hw.memory_bandwidth)


def attainable_flops_per_sec(intensity: float, hw: HardwareSpec, dtype: torch.dtype) -> float:
    return min(hw.peak(dtype), intensity * hw.memory_bandwidth)


def min_compute_bound_batch(d: int, k: int, hw: HardwareSpec, dtype: torch.dtype) -> int:
    # 2bdk / (s(bd + dk + bk)) >= R  <=>  b (2dk - Rs(d + k)) >= R s d k
    ridge, size = accelerator_intensity(hw, dtype), dtype.itemsize
    slope = 2 * d * k - ridge * size * (d + k)
    if slope <= 0 or classify(matmul_cost(2**62, d, k, dtype), hw, dtype) != COMPUTE_BOUND:
        raise ValueError(f"no batch size makes a (b x {d}) @ ({d} x {k}) matmul in {dtype} compute-bound on "
                         f"{hw.name}: its intensity stays below {ridge:.1f} FLOP/byte")
    b = max(1, math.ceil(ridge * size * d * k / slope))

    def bound(batch: int) -> bool:
        return classify(matmul_cost(batch, d, k, dtype), hw, dtype) == COMPUTE_BOUND

    while not bound(b):  # the closed form is rounded: settle the boundary exactly
        b += 1
    while b > 1 and bound(b - 1):
        b -= 1
    return b


def plot_roofline(hw: HardwareSpec, points: dict[str, OpCost], path: str,
                  dtype: torch.dtype = torch.bfloat16) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("plot_roofline needs matplotlib: pip install -e '.[plot]'") from exc

    peak, bandwidth, ridge = hw.peak(dtype), hw.memory_bandwidth, accelerator_intensity(hw, dtype)
    intensities = [arithmetic_intensity(c) for c in points.values()] + [ridge]
    lo, hi = min(intensities) / 4, max(intensities) * 4
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]

    fig, ax = plt.subplots(figsize=(9, 6), dpi=120)
    ax.loglog(xs, [attainable_flops_per_sec(x, hw, dtype) for x in xs], color="black", lw=2,
              label=f"roof: min({peak:.3g} FLOP/s, intensity x {bandwidth:.3g} B/s)")
    ax.axvline(ridge, color="tab:red", ls="--", lw=1)
    ax.plot([ridge], [peak], "o", color="tab:red", ms=8)
    ax.annotate(f"ridge: {ridge:.0f} FLOP/byte", (ridge, peak), textcoords="offset points", xytext=(-10, 12),
                ha="right", color="tab:red", fontweight="bold")
    ordered = sorted(points.items(), key=lambda item: arithmetic_intensity(item[1]))
    for i, (label, cost) in enumerate(ordered):
        x = arithmetic_intensity(cost)
        y = attainable_flops_per_sec(x, hw, dtype)
        ax.plot([x], [y], "o", color="tab:blue" if x < ridge else "tab:green", ms=7)
        above = i % 2 == 0  # alternate sides of the roof, so neighbouring labels do not overlap
        ax.annotate(f"{label}\n{x:.3g} FLOP/B", (x, y), textcoords="offset points", fontsize=9,
                    xytext=(0, 12) if above else (8, -28), ha="center" if above else "left")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel(f"attainable {str(dtype).removeprefix('torch.')} FLOP/s")
    ax.set_title(f"Roofline of {hw.name} ({str(dtype).removeprefix('torch.')}): memory-bound left of the "
                 "ridge, compute-bound right")
    ax.set_ylim(top=peak * 3)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)


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
