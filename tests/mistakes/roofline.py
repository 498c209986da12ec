"""Classic mistakes in roofline analysis, each written as the wrong function a student would write."""

import math

from reference import roofline as ref
from tests.mistakes import Mistake


def relu_reads_only(n, dtype):
    return ref.OpCost(n, n * dtype.itemsize)


def gelu_one_flop(n, dtype, approximate="none"):
    ref.gelu_cost(n, dtype, approximate)  # same validation
    return ref.OpCost(n, 2 * n * dtype.itemsize)


def dot_macs(n, dtype):
    return ref.OpCost(n, (2 * n + 1) * dtype.itemsize)


def dot_fp32_bytes(n, dtype):
    return ref.OpCost(2 * n, (2 * n + 1) * 4)


def matvec_matrix_only(m, n, dtype):
    return ref.OpCost(2 * m * n, m * n * dtype.itemsize)


def matmul_no_write(b, d, k, dtype):
    return ref.OpCost(2 * b * d * k, (b * d + d * k) * dtype.itemsize)


def matmul_macs(b, d, k, dtype):
    return ref.OpCost(b * d * k, ref.matmul_cost(b, d, k, dtype).bytes)


def intensity_inverted(cost):
    return cost.bytes / cost.flops


def ridge_inverted(hw, dtype):
    return hw.memory_bandwidth / hw.peak(dtype)


def ridge_fp32_peak(hw, dtype):
    return hw.peak_flops[ref.torch.float32] / hw.memory_bandwidth


def classify_strict(cost, hw, dtype):
    compute_bound = ref.arithmetic_intensity(cost) > ref.accelerator_intensity(hw, dtype)
    return ref.COMPUTE_BOUND if compute_bound else ref.MEMORY_BOUND


def classify_swapped(cost, hw, dtype):
    bound = ref.classify(cost, hw, dtype)
    return ref.MEMORY_BOUND if bound == ref.COMPUTE_BOUND else ref.COMPUTE_BOUND


def time_sum(cost, hw, dtype):
    return cost.flops / hw.peak(dtype) + cost.bytes / hw.memory_bandwidth


def time_compute_only(cost, hw, dtype):
    return cost.flops / hw.peak(dtype)


def attainable_max(intensity, hw, dtype):
    return max(hw.peak(dtype), intensity * hw.memory_bandwidth)


def batch_is_the_ridge(d, k, hw, dtype):
    return math.ceil(ref.accelerator_intensity(hw, dtype))


def batch_off_by_one(d, k, hw, dtype):
    return ref.min_compute_bound_batch(d, k, hw, dtype) + 1


def plot_without_friendly_error(hw, points, path, dtype=ref.torch.bfloat16):
    import matplotlib  # noqa: F401 - a bare import: no word on how to install it

    return ref.plot_roofline(hw, points, path, dtype)


def plot_nothing(hw, points, path, dtype=ref.torch.bfloat16):
    return None


def _m(id, description, **replaces):
    return Mistake("roofline", id, description, replaces)


MISTAKES = [
    _m("relu_reads_only", "reads counted, writes not (ReLU at 0.5 FLOP/byte in bf16)", relu_cost=relu_reads_only),
    _m("gelu_one_flop", "GELU counted as 1 FLOP per element, like ReLU", gelu_cost=gelu_one_flop),
    _m("dot_macs", "dot product as n multiply-adds counted once (n FLOPs, not 2n)", dot_cost=dot_macs),
    _m("dot_fp32", "4 bytes per element whatever the dtype", dot_cost=dot_fp32_bytes),
    _m("matvec_matrix_only", "mat-vec bytes of the matrix alone", matvec_cost=matvec_matrix_only),
    _m("matmul_no_write", "matmul's output write not counted", matmul_cost=matmul_no_write),
    _m("matmul_macs", "matmul FLOPs as MACs (b*d*k)", matmul_cost=matmul_macs),
    _m("intensity_inverted", "intensity as bytes per FLOP", arithmetic_intensity=intensity_inverted),
    _m("ridge_inverted", "accelerator intensity as bandwidth over peak", accelerator_intensity=ridge_inverted),
    _m("ridge_fp32_peak", "the fp32 peak whatever the dtype", accelerator_intensity=ridge_fp32_peak),
    _m("classify_strict", "exactly at the ridge called memory-bound (> instead of >=)", classify=classify_strict),
    _m("classify_swapped", "high intensity called memory-bound", classify=classify_swapped),
    _m("time_sum", "compute and memory time added instead of overlapped", roofline_time=time_sum),
    _m("time_compute_only", "roofline time from the FLOPs alone", roofline_time=time_compute_only),
    _m("attainable_max", "the roof as the higher of peak and bandwidth x intensity",
       attainable_flops_per_sec=attainable_max),
    _m("batch_is_ridge", "the smallest compute-bound batch taken as the ridge, whatever d and k",
       min_compute_bound_batch=batch_is_the_ridge),
    _m("batch_off_by_one", "one more than the smallest compute-bound batch", min_compute_bound_batch=batch_off_by_one),
    _m("plot_bare_import", "matplotlib imported without a word on how to install it",
       plot_roofline=plot_without_friendly_error),
    _m("plot_nothing", "plot_roofline writes no file", plot_roofline=plot_nothing),
]


# The behaviours each mistake may cost: those whose tests it failed under the held-out grading seed of
# tests/meta/test_mistakes.py, which checks it (the behaviours that wait for them may lose their points too).
# `python -m tests.meta.mutation --every-test --profile grade --grading-seed 11 --costs` prints what a run saw.
COSTS = {
    "relu_reads_only": ("elementwise costs", "the lecture's numbers"),
    "gelu_one_flop": ("elementwise costs",),
    "dot_macs": ("dot, matvec and matmul costs", "the lecture's numbers"),
    "dot_fp32": ("dot, matvec and matmul costs", "the lecture's numbers"),
    "matvec_matrix_only": ("dot, matvec and matmul costs", "the lecture's numbers"),
    "matmul_no_write": ("dot, matvec and matmul costs", "intensity grows with matmul size", "the lecture's numbers"),
    "matmul_macs": ("dot, matvec and matmul costs", "the lecture's numbers"),
    "intensity_inverted": ("arithmetic and accelerator intensity", "attainable_flops_per_sec",
                           "intensity grows with matmul size", "the lecture's numbers"),
    "ridge_inverted": ("arithmetic and accelerator intensity", "the lecture's numbers"),
    "ridge_fp32_peak": ("arithmetic and accelerator intensity", "the lecture's numbers"),
    "classify_strict": ("classify",),
    "classify_swapped": ("classify",),
    "time_sum": ("attainable_flops_per_sec", "roofline_time"),
    "time_compute_only": ("attainable_flops_per_sec", "roofline_time"),
    "attainable_max": ("attainable_flops_per_sec",),
    "batch_is_ridge": ("min_compute_bound_batch",),
    "batch_off_by_one": ("min_compute_bound_batch",),
    "plot_bare_import": ("plot_roofline",),
    "plot_nothing": ("plot_roofline",),
}
