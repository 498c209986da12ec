"""Problem (benchmarking): timing code on an accelerator. Reference solution; the spec is in
assignment/benchmarking.py."""

import statistics
import time
from collections.abc import Callable

import torch

from assignment.given import HARDWARE, HardwareSpec, Measurement, Timing


def summarize(times: list[float]) -> Timing:
    if not times:
        raise ValueError("no times to summarize")
    times = tuple(float(t) for t in times)
    return Timing(times=times, mean=statistics.fmean(times), median=statistics.median(times),
                  std=statistics.pstdev(times))


def _no_sync() -> None:
    pass


def benchmark(
    fn: Callable[[], object],
    *,
    warmup: int,
    trials: int,
    sync: Callable[[], None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> Timing:
    if warmup < 0 or trials < 1:
        raise ValueError(f"need warmup >= 0 and trials >= 1, got warmup={warmup}, trials={trials}")
    if sync is None:
        sync = torch.cuda.synchronize if torch.cuda.is_available() else _no_sync
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(trials):
        sync()  # the queue is empty: nothing earlier is billed to this trial
        start = clock()
        fn()
        sync()  # the work is done, not merely queued
        times.append(clock() - start)
    return summarize(times)


def hardware_for_name(name: str) -> HardwareSpec | None:
    if "NVL" in name or "GH200" in name:
        return None
    if "H100" in name:
        return HARDWARE["H100 PCIe" if "PCIe" in name else "H100 SXM"]
    if "H200" in name:
        return HARDWARE["H200"]
    return None


def device_spec(device: torch.device | str) -> HardwareSpec | None:
    device = torch.device(device)
    if device.type != "cuda":
        return None
    return hardware_for_name(torch.cuda.get_device_name(device))


def _measurement(op: str, n: int, dtype: torch.dtype, device: torch.device | str, flops: int, nbytes: int,
                 timing: Timing, hardware: HardwareSpec | None) -> Measurement:
    hardware = hardware if hardware is not None else device_spec(device)
    seconds = timing.median
    flops_per_sec, bytes_per_sec = flops / seconds, nbytes / seconds
    mfu = None
    if hardware is not None and dtype in hardware.peak_flops:
        mfu = flops_per_sec / hardware.peak(dtype)
    bandwidth = None if hardware is None else bytes_per_sec / hardware.memory_bandwidth
    return Measurement(op=op, n=n, dtype=dtype, device=str(torch.device(device)), flops=flops, bytes=nbytes,
                       seconds=seconds, flops_per_sec=flops_per_sec, bytes_per_sec=bytes_per_sec, mfu=mfu,
                       bandwidth_utilization=bandwidth)


def _element_size(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype, device="meta").element_size()


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
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    timing = benchmark(lambda: a @ b, warmup=warmup, trials=trials, sync=sync, clock=clock)
    return _measurement("matmul", n, dtype, device, 2 * n**3, 3 * n * n * _element_size(dtype), timing, hardware)


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
    x = torch.randn(n, device=device).to(dtype)
    timing = benchmark(lambda: torch.relu(x), warmup=warmup, trials=trials, sync=sync, clock=clock)
    return _measurement("relu", n, dtype, device, n, 2 * n * _element_size(dtype), timing, hardware)


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
