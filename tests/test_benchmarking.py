"""Problem (benchmarking): timing code on an accelerator.

Oracles:
- Call order and times: a simulated asynchronous device (tests/scenarios/benchmarking.py `FakeDevice`):
  `fn` queues work and returns after a short launch, `sync` waits for the queue, `clock` reads host time,
  and each call is logged. The expected log (warm-up calls, then per trial sync, clock, fn, sync, clock) and
  the times it implies are played on the same simulated device in the test process; the statistics come
  from Python's `statistics` module (`fmean`, `median`, `pstdev`: the population standard deviation) in
  summarize's tests, and from your own summarize in benchmark's (a timing test checks the times).
- The default sync: with torch.cuda patched to report itself available (its synchronize the fake's), a sync
  before every clock read with no call of fn between them; reported unavailable, no sync at all (a sync test
  checks the syncs, and that fn ran warmup + trials times with the clock read around it, the evidence that
  something was timed; the order of the other calls is the order test's).
- Measurements on the CPU with a fake clock whose readings are given: the FLOPs of the matmul from
  `torch.utils.flop_counter.FlopCounterMode`, the bytes from the sizes of the tensors each operation
  reads and writes (meta tensors, measured by torch), the times from the readings, the peaks and the
  bandwidth from `assignment/given.py`'s `HARDWARE`.
- GPU tests (marked `gpu`, worth no points, skipped unless an H100 or H200 is present) measure for real:
  bf16 matmul MFU and ReLU bandwidth in a sane share of the spec sheet, synced against unsynced timing,
  both points under the roofline.

Tolerances: counts are exact integers. Times and statistics to 1e-9 relative (and 1e-12 s absolute): the
fake clock's readings are differences of floats near 1e4 s at most, rounding at ~2e-12 s, while every
catalogued mistake is off by a whole duration (1 ms or more), a factor n/(n-1), or a different element.
Rates and utilisations to 1e-12 relative: one or two float divisions of the same numbers.
"""

import math
import statistics

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st
from torch.utils.flop_counter import FlopCounterMode

from assignment.given import HARDWARE, Measurement
from tests import oracles
from tests.checks import call_text, expect_equal, expect_int
from tests.common.benchmarking import ABS, REL
from tests.documented import cases, expect_documented_error
from tests.scenarios import benchmarking as scenarios
from tests.strategies.benchmarking import benchmark_specs, tick_specs

pytestmark = pytest.mark.benchmarking

ORDER_HINT = ("warm-up calls untimed first; then per trial: sync(), start = clock(), fn(), sync(), "
              "stop = clock() — sync before starting the clock (the queue may still hold earlier work) and "
              "before stopping it (fn only queued its work)")


def close(got, expected, rel=REL, abs_=ABS) -> bool:
    return type(got) in (int, float) and math.isclose(got, expected, rel_tol=rel, abs_tol=abs_)


def expect_times(got, expected: dict, what: str, source: str = "the fake device's clock", hint: str = ORDER_HINT
                 ) -> None:
    assert type(got).__name__ == "Timing", f"{what} should return a Timing (assignment.given), got {got!r}"
    times = list(got.times)
    assert len(times) == len(expected["times"]) and all(
        close(g, e) for g, e in zip(times, expected["times"], strict=True)), (
        f"{what}: per-trial times {times}, expected {expected['times']} ({source})\n  hint: {hint}")


def expect_statistics(got, expected: dict, what: str, source: str | None = None, only: str | None = None) -> None:
    """The Timing's mean, median and std (or `only` one of them) against `expected`'s (the statistics module's,
    unless `source` says)."""
    assert type(got).__name__ == "Timing", f"{what} should return a Timing (assignment.given), got {got!r}"
    for stat, oracle in (("mean", "statistics.fmean"), ("median", "statistics.median"),
                         ("std", "statistics.pstdev, the population standard deviation")):
        if only not in (None, stat):
            continue
        assert close(getattr(got, stat), expected[stat]), (
            f"{what}: {stat} is {getattr(got, stat)!r}, expected {expected[stat]!r} ({source or oracle} of the trial "
            f"times {expected['times']})\n  hint: over the timed trials only; median of an even count is the mean "
            f"of the two middle values; std with denominator n")


def expect_timing(got, expected: dict, what: str) -> None:
    """summarize's whole Timing (its worked examples, the reference's): no call order is involved."""
    expect_times(got, expected, what, source="the times given", hint="keep the times as given, in their order")
    expect_statistics(got, expected, what)


def timed_faults(events: list[str], spec: dict) -> list[str]:
    """The evidence, in a call log, that benchmark ran and timed the work (not how well: the order, the syncs and
    the times are other tests'): fn called warmup + trials times, and the clock read before and after a call of fn.
    A benchmark that checks its counts and returns a Timing of zeros without timing anything leaves neither."""
    faults = []
    calls = events.count("fn")
    if calls != spec["warmup"] + spec["trials"]:
        faults.append(f"fn was called {calls} times, not warmup + trials = {spec['warmup'] + spec['trials']}")
    reads = [i for i, event in enumerate(events) if event == "clock"]
    if len(reads) < 2 or "fn" not in events[reads[0]:reads[-1]]:
        faults.append(f"the clock was read {len(reads)} times, never before and after a call of fn: nothing was timed")
    return faults


def sync_faults(events: list[str], spec: dict, synced: bool) -> list[str]:
    """What is wrong with the syncs of a call log (what a sync test checks; the order of the other calls and the
    times are other tests'): that it timed fn at all (`timed_faults`: without it, code that times nothing
    "syncs correctly" on the CPU); with a sync (`synced`), every clock read preceded by a sync with no call of fn
    between them (the queue emptied before the clock starts and before it stops); without one, no sync at all."""
    faults = timed_faults(events, spec)
    if not synced:
        if "sync" in events:
            faults.append(f"it synchronised {events.count('sync')} times")
        return faults
    if "clock" not in events:
        faults.append("the clock was never read")
    last = None
    for i, event in enumerate(events):
        if event == "clock" and last != "sync":
            faults.append(f"call {i} (a clock read) follows {last or 'nothing'}, not a sync")
        if event in ("sync", "fn"):
            last = event
    return faults


# -- summarize ---------------------------------------------------------------------------------------------

positive_times = st.floats(1e-6, 10.0, allow_nan=False)


# one item per field of the Timing: a slip in one statistic costs that share (and the worked examples)
@pytest.mark.parametrize("field", ["times", "mean", "median", "std"])
@given(times=st.lists(positive_times, min_size=1, max_size=8))
def test_summarize_matches_statistics(impl, field, times):
    got = impl.benchmarking.summarize(times)
    expected = {"times": times, "mean": statistics.fmean(times), "median": statistics.median(times),
                "std": statistics.pstdev(times)}
    if field == "times":
        expect_times(got, expected, call_text("summarize", times), source="the times given",
                     hint="keep the times as given, in their order, as a tuple")
    else:
        expect_statistics(got, expected, call_text("summarize", times), only=field)


@pytest.mark.parametrize("times", [[0.5, 0.1, 0.4, 0.2], [3.0, 1.0], [2.0]])
def test_summarize_worked_examples(impl, times):
    got = impl.benchmarking.summarize(times)
    expected = {"times": times, "mean": statistics.fmean(times), "median": statistics.median(times),
                "std": statistics.pstdev(times)}
    expect_timing(got, expected, call_text("summarize", times))


@given(times=st.lists(positive_times, min_size=1, max_size=8))
def test_summarize_rejects_no_times(impl, times):
    """No times raise ValueError; generated times beside them return a Timing of those times (in any order) whose
    mean and median lie between the smallest and the largest, as any average does (the evidence that the check
    is on the input and that summarize computes from the times: a function that always raises, a constant, a
    table or a Timing of zeros fails; the order, and which mean, median and deviation, are the statistics row's)."""
    with pytest.raises(ValueError):
        impl.benchmarking.summarize([])
        pytest.fail("summarize([]) should raise ValueError; it returned")
    got = impl.benchmarking.summarize(times)
    what = call_text("summarize", times)
    assert type(got).__name__ == "Timing" and sorted(got.times) == sorted(times), (
        f"{what} should return a Timing of the {len(times)} times given; got {got!r}")
    low, high = min(times) * (1 - REL), max(times) * (1 + REL)  # fmean may round past equal times
    outside = {name: value for name, value in (("mean", got.mean), ("median", got.median))
               if not low <= value <= high}
    assert not outside, f"{what}: {outside} should lie between the smallest and the largest time, as any average does"


# -- benchmark: the order of calls, on a simulated asynchronous device ----------------------------------

@given(spec=benchmark_specs())
def test_benchmark_calls_in_order(impl, spec):
    got = impl.run(scenarios.run_benchmark, spec)
    expected = oracles.expected_benchmark(spec)
    expect_equal(got["events"], expected["events"],
                 what=f"the calls benchmark(fn, warmup={spec['warmup']}, trials={spec['trials']}, sync, clock) made",
                 source="warm-up fn calls, then per trial sync, clock, fn, sync, clock", hint=ORDER_HINT)


@given(spec=benchmark_specs())
def test_benchmark_times_the_work_of_each_trial(impl, spec):
    got = impl.run(scenarios.run_benchmark, spec)
    expected = oracles.expected_benchmark(spec)
    what = (f"benchmark(fn, warmup={spec['warmup']}, trials={spec['trials']}) on a simulated device whose calls take "
            f"{spec['durations']} s")
    expect_times(got["timing"], expected, what)
    # its statistics are those of its times, as your summarize computes them (whose own test checks them)
    own = got["summarized"]
    if own is not None:
        expect_statistics(got["timing"], {"times": list(got["timing"].times), "mean": own.mean,
                                          "median": own.median, "std": own.std}, what,
                          source="your own summarize")


@given(spec=benchmark_specs())
def test_benchmark_default_sync_on_cuda_is_cuda_synchronize(impl, spec):
    got = impl.run(scenarios.run_benchmark_default_sync, spec, True)
    faults = sync_faults(got["events"], spec, synced=True)
    assert not faults, (
        f"benchmark(fn, warmup={spec['warmup']}, trials={spec['trials']}, sync=None) while torch.cuda.is_available() "
        f"made the calls {got['events']}: {'; '.join(faults)}\n"
        f"  hint: sync=None on CUDA means torch.cuda.synchronize (looked up when benchmark is called), called before "
        f"each clock read")


@given(spec=benchmark_specs())
def test_benchmark_default_sync_on_cpu_does_nothing(impl, spec):
    got = impl.run(scenarios.run_benchmark_default_sync, spec, False)
    faults = sync_faults(got["events"], spec, synced=False)
    assert not faults, (
        f"benchmark(fn, warmup={spec['warmup']}, trials={spec['trials']}, sync=None) without CUDA made the calls "
        f"{got['events']}: {'; '.join(faults)}\n"
        f"  hint: without CUDA there is nothing to synchronise (and torch.cuda.synchronize would fail)")


# (warmup, trials) the docstring refuses: a negative warm-up count, or fewer than one trial
bad_counts = st.one_of(st.tuples(st.integers(-5, -1), st.integers(-3, 6)),
                       st.tuples(st.integers(0, 3), st.integers(-3, 0)))


@given(counts=bad_counts, spec=benchmark_specs())
def test_benchmark_rejects_bad_counts(impl, counts, spec):
    """Negative warm-ups or fewer than one trial raise ValueError; the spec's valid counts beside them return a
    Timing after calling fn once per warm-up and trial and reading the clock before and after a call of fn (the
    evidence that the check is on the counts and the work was timed: a function that always raises, a constant,
    a table or a Timing of zeros fails; the order of the calls, the syncs and the times, how many of them too,
    are other rows')."""
    warmup, trials = counts
    got = impl.run(scenarios.benchmark_error, warmup, trials)
    assert got == "ValueError", f"benchmark(fn, warmup={warmup}, trials={trials}) should raise ValueError, raised {got}"
    got = impl.run(scenarios.run_benchmark, spec)
    what = f"benchmark(fn, warmup={spec['warmup']}, trials={spec['trials']}, sync, clock)"
    faults = timed_faults(got["events"], spec)
    assert not faults, f"{what} made the calls {got['events']}: {'; '.join(faults)}"
    assert type(got["timing"]).__name__ == "Timing", f"{what} should return a Timing; got {got['timing']!r}"


# -- spec sheets -------------------------------------------------------------------------------------------

NAMES = [
    ("NVIDIA H100 80GB HBM3", "H100 SXM"),
    ("NVIDIA H100 PCIe", "H100 PCIe"),
    ("NVIDIA H200", "H200"),
    ("NVIDIA H100 NVL", None),
    ("NVIDIA GH200 480GB", None),
    ("NVIDIA A100-SXM4-80GB", None),
    ("NVIDIA GeForce RTX 4090", None),
]


@pytest.mark.parametrize(("name", "key"), NAMES)
def test_hardware_for_name(impl, name, key):
    got = impl.benchmarking.hardware_for_name(name)
    expected = None if key is None else HARDWARE[key]
    assert got == expected, (f"{call_text('hardware_for_name', name)} should be "
                             f"{'None' if key is None else f'HARDWARE[{key!r}]'}, got {got!r}")


@pytest.mark.parametrize(("name", "key"), NAMES[:3] + NAMES[5:6])
def test_device_spec_of_a_cuda_device_goes_by_its_name(impl, name, key):
    got = impl.run(scenarios.spec_of_named_cuda_device, name)
    expected = None if key is None else HARDWARE[key]
    assert got == expected, (f"device_spec('cuda:0') for a GPU named {name!r} should be "
                             f"{'None' if key is None else f'HARDWARE[{key!r}]'}, got {got!r}")


@pytest.mark.parametrize("device", ["cpu", torch.device("cpu")])
def test_device_spec_of_the_cpu_is_none(impl, device):
    got = impl.benchmarking.device_spec(device)
    assert got is None, f"{call_text('device_spec', device)} should be None (no spec sheet), got {got!r}"


# -- measurements on the CPU, with a fake clock ------------------------------------------------------------

def matmul_counts(n: int, dtype: torch.dtype) -> tuple[int, int]:
    """FLOPs from FlopCounterMode, bytes from the meta tensors read and written."""
    a, b = (torch.empty(n, n, dtype=dtype, device="meta") for _ in range(2))
    with FlopCounterMode(display=False) as counter:
        c = a @ b
    return counter.get_total_flops(), sum(t.numel() * t.element_size() for t in (a, b, c))


def relu_counts(n: int, dtype: torch.dtype) -> tuple[int, int]:
    """1 FLOP per output element (the roofline convention), bytes from the meta tensors read and written."""
    x = torch.empty(n, dtype=dtype, device="meta")
    y = torch.relu(x)
    return y.numel(), sum(t.numel() * t.element_size() for t in (x, y))


def expect_measurement(got, op: str, n: int, dtype: torch.dtype, spec: dict) -> None:
    what = f"measure_{'matmul' if op == 'matmul' else 'bandwidth'}({n}, {dtype}, 'cpu', ...) with a fake clock {spec}"
    assert isinstance(got, Measurement), f"{what} should return a Measurement (assignment.given), got {got!r}"
    flops, nbytes = (matmul_counts if op == "matmul" else relu_counts)(n, dtype)
    expect_equal((got.op, got.n, got.dtype, got.device), (op, n, dtype, "cpu"), what=f"{what}: (op, n, dtype, device)",
                 source="the call")
    expect_int(got.flops, flops, what=f"{what}.flops",
               source="FlopCounterMode" if op == "matmul" else "one FLOP per element",
               hint="2n^3 for an (n x n) @ (n x n) matmul (a multiply-add is 2 FLOPs); n for ReLU")
    expect_int(got.bytes, nbytes, what=f"{what}.bytes", source="the tensors read and written, measured by torch",
               hint="every input read once and every output written once, at the dtype's element size")
    times = [b - a for a, b in zip(spec["ticks"][::2], spec["ticks"][1::2], strict=True)]
    seconds = statistics.median(times)
    assert close(got.seconds, seconds), (f"{what}.seconds is {got.seconds!r}, expected the median trial time "
                                         f"{seconds!r} of {times}")
    rates = {"flops_per_sec": flops / seconds, "bytes_per_sec": nbytes / seconds}
    hw = spec["hardware"]
    rates["mfu"] = None if hw is None or dtype not in hw.peak_flops else rates["flops_per_sec"] / hw.peak(dtype)
    rates["bandwidth_utilization"] = None if hw is None else rates["bytes_per_sec"] / hw.memory_bandwidth
    for field, expected in rates.items():
        value = getattr(got, field)
        ok = value is None if expected is None else close(value, expected, rel=1e-12, abs_=0.0)
        assert ok, (f"{what}.{field} is {value!r}, expected {expected!r} (on {hw.name if hw else 'no spec sheet'})\n"
                    f"  hint: rates are per median second; MFU against the peak for the dtype used "
                    f"(hardware.peak(dtype); None without a sheet or a peak for it), bandwidth utilisation "
                    f"against memory_bandwidth")


hardware = st.sampled_from([None, HARDWARE["H100 SXM"], HARDWARE["H200"], HARDWARE["A100"]])
measured_dtypes = st.sampled_from([torch.float32, torch.bfloat16, torch.float16, torch.float64])


@given(n=st.integers(1, 24), dtype=measured_dtypes, spec=tick_specs(), hw=hardware)
def test_measure_matmul_with_a_fake_clock(impl, n, dtype, spec, hw):
    spec = dict(spec, hardware=hw)
    expect_measurement(impl.run(scenarios.measure, "matmul", n, dtype, spec), "matmul", n, dtype, spec)


@given(n=st.integers(1, 5000), dtype=measured_dtypes, spec=tick_specs(), hw=hardware)
def test_measure_bandwidth_with_a_fake_clock(impl, n, dtype, spec, hw):
    spec = dict(spec, hardware=hw)
    expect_measurement(impl.run(scenarios.measure, "relu", n, dtype, spec), "relu", n, dtype, spec)


@pytest.mark.parametrize("op", ["matmul", "relu"])
@given(n=st.integers(1, 24), dtype=measured_dtypes, spec=tick_specs(), hw=hardware)
@example(n=16, dtype=torch.bfloat16, spec={"warmup": 0, "trials": 2, "ticks": [1.0, 1.5, 2.0, 2.5]},
         hw=HARDWARE["H100 SXM"])
def test_utilisation_is_against_the_peak_of_the_dtype_used_and_none_on_the_cpu(impl, op, n, dtype, spec, hw):
    # MFU alone, and both utilisations without a spec sheet (bandwidth utilisation's value is measure_bandwidth's)
    got = impl.run(scenarios.measure, op, n, dtype, dict(spec, hardware=hw))
    what = f"measure_{'matmul' if op == 'matmul' else 'bandwidth'}({n}, {dtype}, 'cpu', ...) with a fake clock {spec}"
    assert isinstance(got, Measurement), f"{what} should return a Measurement (assignment.given), got {got!r}"
    if hw is None:
        assert got.mfu is None and got.bandwidth_utilization is None, (
            f"{what} without a spec sheet (hardware=None, as device_spec gives on the CPU): MFU and bandwidth "
            f"utilisation are None, got {got.mfu!r} and {got.bandwidth_utilization!r}")
        return
    flops = (matmul_counts if op == "matmul" else relu_counts)(n, dtype)[0]
    seconds = statistics.median(b - a for a, b in zip(spec["ticks"][::2], spec["ticks"][1::2], strict=True))
    expected = flops / seconds / hw.peak(dtype) if dtype in hw.peak_flops else None
    ok = got.mfu is None if expected is None else close(got.mfu, expected, rel=1e-12, abs_=0.0)
    assert ok, (f"{what} on {hw.name}: MFU {got.mfu!r}, expected {expected!r} (the achieved FLOP/s, {flops} FLOPs "
                f"over the median trial time {seconds!r}, against the peak for {dtype}: "
                f"{'none on the sheet' if expected is None else f'{hw.peak(dtype):.4g} FLOP/s'})")


# -- differential ------------------------------------------------------------------------------------------

@given(times=st.lists(positive_times, min_size=1, max_size=12))
def test_summarize_matches_reference(impl, ref, times):
    got = impl.benchmarking.summarize(times)
    expected = ref.benchmarking.summarize(times)
    expect_timing(got, {"times": list(expected.times), "mean": expected.mean, "median": expected.median,
                        "std": expected.std}, call_text("summarize", times))


# -- GPU (worth no points; skipped unless an H100 or H200 is present) -------------------------------------

def _hopper() -> str | None:
    if not torch.cuda.is_available():
        return None
    name = torch.cuda.get_device_name()
    return name if ("H100" in name or "H200" in name) else None


needs_hopper = pytest.mark.skipif(_hopper() is None, reason="needs an H100 or H200 GPU (CUDA)")


@pytest.mark.gpu
@needs_hopper
@pytest.mark.parametrize("n", [4096, 8192])
def test_gpu_bf16_matmul_mfu_is_sane(impl, n):
    got = impl.benchmarking.measure_matmul(n, torch.bfloat16, "cuda", warmup=5, trials=20)
    assert got.mfu is not None and 0.3 < got.mfu < 1.05, (
        f"bf16 {n}^3 matmul on {_hopper()}: MFU {got.mfu} ({got.flops_per_sec:.4g} FLOP/s); a large bf16 matmul "
        f"runs at 30-100% of the dense peak: far outside means unsynced timing or the wrong peak")


@pytest.mark.gpu
@needs_hopper
def test_gpu_relu_bandwidth_near_the_spec(impl):
    got = impl.benchmarking.measure_bandwidth(2**28, torch.bfloat16, "cuda", warmup=3, trials=20)
    assert got.bandwidth_utilization is not None and 0.4 < got.bandwidth_utilization < 1.05, (
        f"ReLU on 2^28 bf16 elements on {_hopper()}: {got.bytes_per_sec:.4g} B/s, "
        f"{got.bandwidth_utilization} of the spec's HBM bandwidth; expected 40-105%")


@pytest.mark.gpu
@needs_hopper
def test_gpu_synced_timing_is_much_longer_than_unsynced(impl):
    got = impl.run(scenarios.synced_and_unsynced_matmul, 8192, 10)
    assert got["unsynced"] < 0.25 * got["synced"], (
        f"bf16 8192^3 matmul: synced median {got['synced']:.3g} s, unsynced {got['unsynced']:.3g} s; without a "
        f"sync the clock measures only the launch")


@pytest.mark.gpu
@needs_hopper
def test_gpu_measured_points_are_under_the_roofline(impl):
    hw = impl.benchmarking.device_spec("cuda")
    assert hw is not None, "device_spec('cuda') is None on a Hopper GPU"
    for m in (impl.benchmarking.measure_matmul(8192, torch.bfloat16, "cuda", warmup=5, trials=10),
              impl.benchmarking.measure_bandwidth(2**28, torch.bfloat16, "cuda", warmup=3, trials=10)):
        intensity = m.flops / m.bytes
        roof = min(hw.peak(torch.bfloat16), intensity * hw.memory_bandwidth)
        assert m.flops_per_sec <= 1.05 * roof, (
            f"{m.op} at intensity {intensity:.3g} FLOP/B: {m.flops_per_sec:.4g} FLOP/s, above the roof {roof:.4g}")
        assert m.flops_per_sec >= 0.2 * roof, (
            f"{m.op} at intensity {intensity:.3g} FLOP/B: {m.flops_per_sec:.4g} FLOP/s, under 20% of the roof "
            f"{roof:.4g}")


# -- every error the docstrings promise, on a fixed call (tests/documented.py) -------------------------------

@pytest.mark.parametrize("case", cases("benchmarking"))
def test_documented_errors_are_raised(impl, case):
    expect_documented_error(impl, "benchmarking", case)
