"""Benchmarking in the style of course benchmarking scripts: a `timeit.default_timer` clock, a `cuda_sync`
helper, the `statistics` module for the summary, and the device's name matched with `in` tests; written to this
assignment's spec (syncs before the clock starts and before it stops; the population standard deviation). The
scripts it is modelled on sync only after the call, or report `torch.tensor(times).std()` (the sample's): SLIPS.

Graded by tests/meta/test_honest.py."""

import statistics
import time

import torch

from assignment.given import HARDWARE, Measurement, Timing

CASE = {"problem": "benchmarking", "score": 4}
SLIPS = {
    "sample_std": ("std=statistics.pstdev(trial_times)", "std=float(torch.tensor(trial_times).std()) if "
                   "len(trial_times) > 1 else 0.0", ("summarize",)),
    "sync_after_only": ("        run_sync()\n        start = clock()", "        start = clock()",
                        ("benchmark: the order of calls", "benchmark: times each trial's work",
                         "benchmark: the default sync")),
}


def summarize(times):
    if len(times) == 0:
        raise ValueError("summarize needs at least one time")
    trial_times = tuple(float(t) for t in times)
    return Timing(times=trial_times, mean=statistics.fmean(trial_times), median=statistics.median(trial_times),
                  std=statistics.pstdev(trial_times))


def cuda_sync():
    torch.cuda.synchronize()


def no_sync():
    return None


def benchmark(fn, *, warmup, trials, sync=None, clock=time.perf_counter):
    if warmup < 0 or trials < 1:
        raise ValueError(f"benchmark needs warmup >= 0 and trials >= 1 (got {warmup}, {trials})")
    run_sync = sync if sync is not None else (cuda_sync if torch.cuda.is_available() else no_sync)
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(trials):
        run_sync()
        start = clock()
        fn()
        run_sync()
        times.append(clock() - start)
    return summarize(times)


def hardware_for_name(name):
    if "NVL" in name or "GH200" in name:
        return None
    if "H100" in name:
        return HARDWARE["H100 PCIe"] if "PCIe" in name else HARDWARE["H100 SXM"]
    if "H200" in name:
        return HARDWARE["H200"]
    return None


def device_spec(device):
    device = torch.device(device)
    if device.type != "cuda":
        return None
    return hardware_for_name(torch.cuda.get_device_name(device))


def _measure(op, n, dtype, device, flops, nbytes, fn, warmup, trials, sync, clock, hardware):
    timing = benchmark(fn, warmup=warmup, trials=trials, sync=sync, clock=clock)
    seconds = timing.median
    sheet = hardware if hardware is not None else device_spec(device)
    flops_per_sec, bytes_per_sec = flops / seconds, nbytes / seconds
    mfu = None
    if sheet is not None and dtype in sheet.peak_flops:
        mfu = flops_per_sec / sheet.peak(dtype)
    bandwidth = None if sheet is None else bytes_per_sec / sheet.memory_bandwidth
    return Measurement(op=op, n=n, dtype=dtype, device=str(torch.device(device)), flops=flops, bytes=nbytes,
                       seconds=seconds, flops_per_sec=flops_per_sec, bytes_per_sec=bytes_per_sec, mfu=mfu,
                       bandwidth_utilization=bandwidth)


def measure_matmul(n, dtype, device, *, warmup=3, trials=10, sync=None, clock=time.perf_counter, hardware=None):
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    size = torch.empty((), dtype=dtype).element_size()
    return _measure("matmul", n, dtype, device, 2 * n**3, 3 * n * n * size, lambda: a @ b, warmup, trials, sync,
                    clock, hardware)


def measure_bandwidth(n, dtype, device, *, warmup=3, trials=10, sync=None, clock=time.perf_counter, hardware=None):
    x = torch.randn(n, device=device).to(dtype)
    size = torch.empty((), dtype=dtype).element_size()
    return _measure("relu", n, dtype, device, n, 2 * n * size, lambda: torch.relu(x), warmup, trials, sync, clock,
                    hardware)


__all__ = ["HARDWARE", "Measurement", "Timing", "summarize", "benchmark", "hardware_for_name", "device_spec",
           "measure_matmul", "measure_bandwidth"]
