"""Problem (benchmarking): timing code on an accelerator, and what share of the chip it used. See
handout.md, "Problem (benchmarking)".

Conventions:
- An accelerator runs asynchronously: a call such as `a @ b` on CUDA only *queues* the work and returns.
  A timer read right after it measures the launch, not the work. So every timed call is bracketed by
  synchronisations: sync, read the clock, call, sync, read the clock.
- Warm-up calls (which pay for compilation, autotuning, allocation, caches) are made first and not timed.
- Statistics are over the timed trials only: mean, median and the *population* standard deviation
  (denominator n), as `statistics.fmean`, `statistics.median` and `statistics.pstdev` compute them.
- FLOPs as everywhere in this course: an (n x n) @ (n x n) matmul is 2n^3; ReLU is 1 FLOP per element.
  Bytes: every input read once and every output written once (reads *and* writes).
- MFU (model FLOPs utilisation) is achieved FLOP/s over the device's dense peak *for the dtype used*.
"""

import time
from collections.abc import Callable

import torch

from assignment.given import HARDWARE, HardwareSpec, Measurement, Timing


def summarize(times: list[float]) -> Timing:
    """A `Timing` of these per-trial times (at least one): the times as a tuple, in order; their mean, their
    median (for an even count, the mean of the two middle values) and their population standard deviation
    (denominator n, `statistics.pstdev`). Raises ValueError for no times.

    Compute the spread in two passes (the mean first, then the mean squared deviation from it), or with the
    `statistics` module: the one-pass formula mean(x^2) - mean(x)^2 loses every digit of a small spread."""
    raise NotImplementedError("summarize")


def benchmark(
    fn: Callable[[], object],
    *,
    warmup: int,
    trials: int,
    sync: Callable[[], None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> Timing:
    """Time `fn()`: `warmup` untimed calls, then `trials` timed ones; returns their `Timing` (`summarize`).

    The exact order of calls, which the tests check with a fake clock and a fake sync that log them:
    first `fn()` `warmup` times (nothing else: no sync, no clock), then for each trial
    `sync(); start = clock(); fn(); sync(); stop = clock()`, whose time is `stop - start`.

    `sync=None` means: `torch.cuda.synchronize()` if `torch.cuda.is_available()` (looked up when
    `benchmark` is called), else no synchronisation at all (the CPU runs synchronously). `clock` is any
    function returning seconds. Raises ValueError if `warmup < 0` or `trials < 1`."""
    raise NotImplementedError("benchmark")


def hardware_for_name(name: str) -> HardwareSpec | None:
    """The spec sheet in `HARDWARE` for a device name as `torch.cuda.get_device_name` gives it, for the
    Hopper GPUs of the table; None for every other name.

    - a name with "NVL" or "GH200" in it: None (other parts, with other peaks, that the table lacks);
    - else "H100" and "PCIe" in it: HARDWARE["H100 PCIe"]; "H100" without "PCIe": HARDWARE["H100 SXM"]
      (e.g. "NVIDIA H100 80GB HBM3");
    - else "H200" in it: HARDWARE["H200"];
    - anything else (an A100, a laptop GPU): None."""
    raise NotImplementedError("hardware_for_name")


def device_spec(device: torch.device | str) -> HardwareSpec | None:
    """The spec sheet of `device`: for a CUDA device, `hardware_for_name(torch.cuda.get_device_name(device))`;
    for any other device (the CPU) None: there is no spec sheet to compare against, so no MFU."""
    raise NotImplementedError("device_spec")


def measure_matmul(
    n: int,
    dtype: torch.dtype,
    device: torch.device | str,
    *,
    warmup: int = 3,
    trials: int = 10,
    sync: Callable[[], None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
    hardware: HardwareSpec | None = None,
) -> Measurement:
    """Time an (n x n) @ (n x n) matmul in `dtype` on `device` and report it as a `Measurement`.

    The operands are created (random, on the device) before timing; each timed call is one `a @ b`, timed
    with `benchmark(..., warmup=warmup, trials=trials, sync=sync, clock=clock)`. Then:
    op="matmul", device=str(torch.device(device)), flops = 2n^3, bytes = the two operands read plus the
    product written (3 n^2 elements), seconds = the median trial time, flops_per_sec = flops / seconds,
    bytes_per_sec = bytes / seconds. Against the spec sheet `hardware` (None: `device_spec(device)`):
    mfu = flops_per_sec / hardware.peak(dtype) (None without a sheet, or if it lists no peak for `dtype`),
    bandwidth_utilization = bytes_per_sec / hardware.memory_bandwidth (None without a sheet)."""
    raise NotImplementedError("measure_matmul")


def measure_bandwidth(
    n: int,
    dtype: torch.dtype,
    device: torch.device | str,
    *,
    warmup: int = 3,
    trials: int = 10,
    sync: Callable[[], None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
    hardware: HardwareSpec | None = None,
) -> Measurement:
    """Time `torch.relu(x)` (out of place) on a vector of n elements in `dtype` on `device`, a memory-bound
    operation, and report it as a `Measurement` exactly as `measure_matmul` does, with op="relu",
    flops = n (one per element) and bytes = n elements read plus n written."""
    raise NotImplementedError("measure_bandwidth")


__all__ = [
    "HARDWARE",
    "HardwareSpec",
    "Measurement",
    "Timing",
    "summarize",
    "benchmark",
    "hardware_for_name",
    "device_spec",
    "measure_matmul",
    "measure_bandwidth",
]
