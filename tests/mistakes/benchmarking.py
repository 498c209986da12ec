"""Classic mistakes in benchmarking, each written as the wrong code a student would write."""

import dataclasses
import statistics
import time

import torch

from assignment.given import Timing
from reference import benchmarking as ref
from tests.mistakes import Mistake


def _sync_of(sync):
    if sync is not None:
        return sync
    return torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)


def _check(warmup, trials):
    if warmup < 0 or trials < 1:
        raise ValueError("bad counts")


def warmup_timed(fn, *, warmup, trials, sync=None, clock=time.perf_counter):
    """The warm-up calls inside the first timed trial: the clock starts before them."""
    _check(warmup, trials)
    sync = _sync_of(sync)
    times = []
    for i in range(trials):
        sync()
        start = clock()
        for _ in range(warmup if i == 0 else 0):
            fn()
        fn()
        sync()
        times.append(clock() - start)
    return ref.summarize(times)


def no_sync_before_start(fn, *, warmup, trials, sync=None, clock=time.perf_counter):
    """The clock starts while earlier work (the warm-up's) may still be queued."""
    _check(warmup, trials)
    sync = _sync_of(sync)
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(trials):
        start = clock()
        fn()
        sync()
        times.append(clock() - start)
    return ref.summarize(times)


def no_sync_before_stop(fn, *, warmup, trials, sync=None, clock=time.perf_counter):
    """The clock stops as soon as fn has queued its work: it measures the launch."""
    _check(warmup, trials)
    sync = _sync_of(sync)
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(trials):
        sync()
        start = clock()
        fn()
        times.append(clock() - start)
    sync()
    return ref.summarize(times)


def stats_over_warmup_too(fn, *, warmup, trials, sync=None, clock=time.perf_counter):
    """Every call timed, warm-up included, and the statistics taken over all of them."""
    _check(warmup, trials)
    sync = _sync_of(sync)
    times = []
    for _ in range(warmup + trials):
        sync()
        start = clock()
        fn()
        sync()
        times.append(clock() - start)
    return ref.summarize(times)


def one_clock_for_all_trials(fn, *, warmup, trials, sync=None, clock=time.perf_counter):
    """One start and one stop around all trials, the total split evenly: no per-trial times, no spread."""
    _check(warmup, trials)
    sync = _sync_of(sync)
    for _ in range(warmup):
        fn()
    sync()
    start = clock()
    for _ in range(trials):
        fn()
    sync()
    total = clock() - start
    return ref.summarize([total / trials] * trials)


def default_sync_never(fn, *, warmup, trials, sync=None, clock=time.perf_counter):
    """sync=None taken as 'no synchronisation' even on CUDA."""
    return ref.benchmark(fn, warmup=warmup, trials=trials, sync=sync or (lambda: None), clock=clock)


def default_sync_always_cuda(fn, *, warmup, trials, sync=None, clock=time.perf_counter):
    """sync=None taken as torch.cuda.synchronize even where there is no CUDA."""
    return ref.benchmark(fn, warmup=warmup, trials=trials, sync=sync or torch.cuda.synchronize, clock=clock)


def median_upper_middle(times):
    """The median of an even count taken as the upper middle value."""
    base = ref.summarize(times)
    return dataclasses.replace(base, median=sorted(times)[len(times) // 2])


def sample_std(times):
    """The standard deviation with denominator n - 1 (statistics.stdev) instead of n."""
    base = ref.summarize(times)
    return dataclasses.replace(base, std=statistics.stdev(times) if len(times) > 1 else 0.0)


def variance_for_std(times):
    base = ref.summarize(times)
    return dataclasses.replace(base, std=statistics.pvariance(times))


def sorted_times(times):
    """The per-trial times returned sorted, not in the order they were measured."""
    base = ref.summarize(times)
    return Timing(times=tuple(sorted(base.times)), mean=base.mean, median=base.median, std=base.std)


def mfu_bf16_peak(n, dtype, device, *, warmup=3, trials=10, sync=None, clock=time.perf_counter, hardware=None):
    """MFU against the bf16 peak whatever the dtype."""
    m = ref.measure_matmul(n, dtype, device, warmup=warmup, trials=trials, sync=sync, clock=clock, hardware=hardware)
    hw = hardware if hardware is not None else ref.device_spec(device)
    return m if hw is None else dataclasses.replace(m, mfu=m.flops_per_sec / hw.peak(torch.bfloat16))


def matmul_macs(n, dtype, device, *, warmup=3, trials=10, sync=None, clock=time.perf_counter, hardware=None):
    """n^3 (multiply-adds) instead of 2n^3 FLOPs."""
    m = ref.measure_matmul(n, dtype, device, warmup=warmup, trials=trials, sync=sync, clock=clock, hardware=hardware)
    return dataclasses.replace(m, flops=n**3, flops_per_sec=m.flops_per_sec / 2, mfu=m.mfu and m.mfu / 2)


def matmul_output_not_written(n, dtype, device, *, warmup=3, trials=10, sync=None, clock=time.perf_counter,
                              hardware=None):
    """Bytes of the two operands only, the product never written."""
    m = ref.measure_matmul(n, dtype, device, warmup=warmup, trials=trials, sync=sync, clock=clock, hardware=hardware)
    scale = 2 / 3
    return dataclasses.replace(m, bytes=m.bytes * 2 // 3, bytes_per_sec=m.bytes_per_sec * scale,
                               bandwidth_utilization=m.bandwidth_utilization and m.bandwidth_utilization * scale)


def relu_reads_only(n, dtype, device, *, warmup=3, trials=10, sync=None, clock=time.perf_counter, hardware=None):
    """ReLU's bytes counted as the reads only, not the writes."""
    m = ref.measure_bandwidth(n, dtype, device, warmup=warmup, trials=trials, sync=sync, clock=clock,
                              hardware=hardware)
    return dataclasses.replace(m, bytes=m.bytes // 2, bytes_per_sec=m.bytes_per_sec / 2,
                               bandwidth_utilization=m.bandwidth_utilization and m.bandwidth_utilization / 2)


def relu_mean_seconds(n, dtype, device, *, warmup=3, trials=10, sync=None, clock=time.perf_counter, hardware=None):
    """The rates computed from the mean trial time instead of the median."""
    x = torch.randn(n, device=device).to(dtype)
    timing = ref.benchmark(lambda: torch.relu(x), warmup=warmup, trials=trials, sync=sync, clock=clock)
    return ref._measurement("relu", n, dtype, device, n, 2 * n * x.element_size(),
                            dataclasses.replace(timing, median=timing.mean), hardware)


def h100_pcie_as_sxm(name):
    """Every H100 taken for the SXM part."""
    if "NVL" in name or "GH200" in name:
        return None
    if "H100" in name:
        return ref.HARDWARE["H100 SXM"]
    return ref.hardware_for_name(name)


def any_hopper_name(name):
    """Any name with H100 or H200 in it, NVL and Grace Hopper parts included."""
    if "H100" in name:
        return ref.HARDWARE["H100 PCIe" if "PCIe" in name else "H100 SXM"]
    if "H200" in name:
        return ref.HARDWARE["H200"]
    return None


def _m(id, description, **replaces):
    return Mistake("benchmarking", id, description, replaces)


MISTAKES = [
    _m("warmup_timed", "the warm-up calls inside the first timed trial", benchmark=warmup_timed),
    _m("no_sync_before_start", "the clock started without a sync: earlier queued work billed to the trial",
       benchmark=no_sync_before_start),
    _m("no_sync_before_stop", "the clock stopped without a sync: only the launch measured",
       benchmark=no_sync_before_stop),
    _m("stats_over_warmup_too", "warm-up calls timed and included in the statistics", benchmark=stats_over_warmup_too),
    _m("one_clock_for_all_trials", "all trials timed as one block and the total split evenly",
       benchmark=one_clock_for_all_trials),
    _m("default_sync_never", "sync=None never synchronises, even on CUDA", benchmark=default_sync_never),
    _m("default_sync_always_cuda", "sync=None calls torch.cuda.synchronize even without CUDA",
       benchmark=default_sync_always_cuda),
    _m("median_upper_middle", "median of an even count taken as the upper middle value",
       summarize=median_upper_middle),
    _m("sample_std", "standard deviation with denominator n - 1 instead of n", summarize=sample_std),
    _m("variance_for_std", "the variance reported as the standard deviation", summarize=variance_for_std),
    _m("sorted_times", "per-trial times returned sorted instead of in order", summarize=sorted_times),
    _m("mfu_bf16_peak", "MFU against the bf16 peak whatever the dtype", measure_matmul=mfu_bf16_peak),
    _m("matmul_macs", "matmul FLOPs counted as n^3 multiply-adds", measure_matmul=matmul_macs),
    _m("matmul_output_not_written", "matmul bytes without the product's write",
       measure_matmul=matmul_output_not_written),
    _m("relu_reads_only", "ReLU bytes counting reads but not writes", measure_bandwidth=relu_reads_only),
    _m("relu_mean_seconds", "rates from the mean trial time instead of the median",
       measure_bandwidth=relu_mean_seconds),
    _m("h100_pcie_as_sxm", "every H100 taken for the SXM part", hardware_for_name=h100_pcie_as_sxm),
    _m("any_hopper_name", "H100 NVL and GH200 taken for the table's parts", hardware_for_name=any_hopper_name),
]


# The behaviours each mistake may cost: those whose tests it failed under the held-out grading seed of
# tests/meta/test_mistakes.py, which checks it (the behaviours that wait for them may lose their points too).
# `python -m tests.meta.mutation --every-test --profile grade --grading-seed 11 --costs` prints what a run saw.
COSTS = {
    "warmup_timed": ("benchmark: the order of calls", "benchmark: times each trial's work"),
    "no_sync_before_start": ("benchmark: the default sync", "benchmark: the order of calls",
                             "benchmark: times each trial's work"),
    "no_sync_before_stop": ("benchmark: the default sync", "benchmark: the order of calls",
                            "benchmark: times each trial's work"),
    "stats_over_warmup_too": ("benchmark: the order of calls", "benchmark: times each trial's work"),
    "one_clock_for_all_trials": ("benchmark: the order of calls", "benchmark: times each trial's work"),
    "default_sync_never": ("benchmark: the default sync",),
    "default_sync_always_cuda": ("benchmark: the default sync",),
    "median_upper_middle": ("benchmark: times each trial's work", "summarize"),
    "sample_std": ("benchmark: times each trial's work", "summarize"),
    "variance_for_std": ("benchmark: times each trial's work", "summarize"),
    "sorted_times": ("summarize",),
    "mfu_bf16_peak": ("measure_matmul", "utilisation"),
    "matmul_macs": ("measure_matmul", "utilisation"),
    "matmul_output_not_written": ("measure_matmul",),
    "relu_reads_only": ("measure_bandwidth",),
    "relu_mean_seconds": ("measure_bandwidth", "utilisation"),
    "h100_pcie_as_sxm": ("device names",),
    "any_hopper_name": ("device names",),
}
