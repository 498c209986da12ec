"""The roofline in the style of public roofline calculators: a bytes-per-element helper (`torch.finfo(dtype).bits //
8`), FLOPs per element of each element-wise op in a dict, a cost built from the element counts read and written,
the bottleneck decided by comparing the two times (compute time >= memory time), the roof as `min(peak, intensity
* bandwidth)`, the smallest compute-bound batch solved in closed form (`math.ceil`) and then checked against the
classification, and a matplotlib figure with `loglog`, `axvline` at the ridge and `annotate`d points. Such
calculators often count a matmul's bytes without the output's write, or decide "memory" when the two times tie:
SLIPS.

Graded by tests/meta/test_honest.py."""

import math

import torch

from assignment.given import HardwareSpec, OpCost

CASE = {"problem": "roofline", "score": 7}
SLIPS = {
    "matmul_output_not_written": ("elements = b * d + d * k + b * k", "elements = b * d + d * k",
                                  ("dot, matvec and matmul costs", "the lecture's numbers",
                                   "intensity grows with matmul size", "min_compute_bound_batch",
                                   "differential: all functions")),
    "tie_goes_to_memory": ("compute_time >= memory_time", "compute_time > memory_time", ("classify",)),
}

COMPUTE_BOUND, MEMORY_BOUND = "compute-bound", "memory-bound"

FLOPS_PER_ELEMENT = {"relu": 1, "gelu": 5, "gelu_tanh": 9}


def bytes_per_element(dtype):
    return torch.finfo(dtype).bits // 8


def _elementwise(op, n, dtype):
    return OpCost(flops=FLOPS_PER_ELEMENT[op] * n, bytes=2 * n * bytes_per_element(dtype))


def relu_cost(n, dtype):
    return _elementwise("relu", n, dtype)


def gelu_cost(n, dtype, approximate="none"):
    if approximate == "none":
        return _elementwise("gelu", n, dtype)
    if approximate == "tanh":
        return _elementwise("gelu_tanh", n, dtype)
    raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")


def dot_cost(n, dtype):
    return OpCost(flops=2 * n, bytes=(2 * n + 1) * bytes_per_element(dtype))


def matvec_cost(m, n, dtype):
    return OpCost(flops=2 * m * n, bytes=(m * n + n + m) * bytes_per_element(dtype))


def matmul_cost(b, d, k, dtype):
    elements = b * d + d * k + b * k
    return OpCost(flops=2 * b * d * k, bytes=elements * bytes_per_element(dtype))


def arithmetic_intensity(cost):
    return cost.flops / cost.bytes


def accelerator_intensity(hw, dtype):
    return hw.peak(dtype) / hw.memory_bandwidth


def classify(cost, hw, dtype):
    compute_time = cost.flops / hw.peak(dtype)
    memory_time = cost.bytes / hw.memory_bandwidth
    return COMPUTE_BOUND if compute_time >= memory_time else MEMORY_BOUND


def roofline_time(cost, hw, dtype):
    return max(cost.flops / hw.peak(dtype), cost.bytes / hw.memory_bandwidth)


def attainable_flops_per_sec(intensity, hw, dtype):
    return min(hw.peak(dtype), intensity * hw.memory_bandwidth)


def min_compute_bound_batch(d, k, hw, dtype):
    # 2bdk / (s (bd + dk + bk)) >= r  <=>  b (2dk - r s (d + k)) >= r s dk
    ridge, size = accelerator_intensity(hw, dtype), bytes_per_element(dtype)
    denominator = 2 * d * k - ridge * size * (d + k)
    if denominator <= 0:
        raise ValueError(f"no batch makes a ({d} x {k}) matmul compute-bound on {hw.name} in {dtype}")
    batch = max(1, math.ceil(ridge * size * d * k / denominator))
    # the closed form is exact on paper; in floats it may land one off either way
    while batch > 1 and classify(matmul_cost(batch - 1, d, k, dtype), hw, dtype) == COMPUTE_BOUND:
        batch -= 1
    while classify(matmul_cost(batch, d, k, dtype), hw, dtype) == MEMORY_BOUND:
        batch += 1
    return batch


def plot_roofline(hw: HardwareSpec, points, path, dtype=torch.bfloat16):
    try:
        import matplotlib
    except ImportError as error:
        raise ImportError("plot_roofline needs matplotlib: pip install -e '.[plot]'") from error
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    peak, bandwidth = hw.peak(dtype), hw.memory_bandwidth
    ridge = peak / bandwidth
    intensities = [arithmetic_intensity(c) for c in points.values()] + [ridge]
    low, high = min(intensities) / 10, max(intensities) * 10
    xs = [low * (high / low) ** (i / 200) for i in range(201)]
    fig, ax = plt.subplots(figsize=(9, 6), dpi=100)
    ax.loglog(xs, [attainable_flops_per_sec(x, hw, dtype) for x in xs], color="black", label="roofline")
    ax.axvline(ridge, linestyle="--", color="gray")
    ax.annotate(f"ridge {ridge:.0f} FLOP/B", (ridge, peak), textcoords="offset points", xytext=(5, -15))
    for label, cost in points.items():
        x = arithmetic_intensity(cost)
        y = attainable_flops_per_sec(x, hw, dtype)
        ax.plot([x], [y], "o")
        ax.annotate(label, (x, y), textcoords="offset points", xytext=(5, 5))
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("attainable performance (FLOP/s)")
    ax.set_title(f"{hw.name} roofline, {dtype}")
    ax.grid(True, which="both", alpha=0.3)
    fig.savefig(path, format="png")
    plt.close(fig)


__all__ = ["HardwareSpec", "OpCost", "relu_cost", "gelu_cost", "dot_cost", "matvec_cost", "matmul_cost",
           "arithmetic_intensity", "accelerator_intensity", "classify", "roofline_time", "attainable_flops_per_sec",
           "min_compute_bound_batch", "plot_roofline"]
