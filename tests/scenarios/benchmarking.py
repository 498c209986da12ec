"""Scenarios for problem benchmarking: a simulated asynchronous device (a fake clock, a fake sync and a fake
workload that share one simulated timeline, and log every call), patched CUDA queries, and fake clocks for
the measurements; the code under test runs beside them and returns event logs, Timings and Measurements as
data. The oracles (the expected event sequence and the times it implies, the statistics module, the FLOP
and byte counts of the operations) are computed in the test process (tests/oracles.py).

A benchmark spec (tests/strategies/benchmarking.py `benchmark_specs`): {"warmup": int, "trials": int, "durations":
[seconds of work each call of fn queues, in call order, warm-up calls first], "launch": seconds the host
spends launching one call, "start": the clock's first reading}.
"""

import types

import torch


class FakeDevice:
    """An accelerator that runs asynchronously, simulated. `fn()` queues work of the next duration and returns
    after `launch` seconds of host time; `sync()` waits (in host time) until all queued work is done;
    `clock()` reads the host time. Every call is logged in `events`."""

    def __init__(self, spec: dict):
        self.durations, self.launch = spec["durations"], spec["launch"]
        self.host = self.busy_until = spec["start"]
        self.calls = 0
        self.events: list[str] = []

    def fn(self) -> None:
        self.events.append("fn")
        duration = self.durations[self.calls % len(self.durations)]
        self.calls += 1
        self.busy_until = max(self.busy_until, self.host) + duration
        self.host += self.launch

    def sync(self, *args, **kwargs) -> None:
        self.events.append("sync")
        self.host = max(self.host, self.busy_until)

    def clock(self) -> float:
        self.events.append("clock")
        return self.host


def run_benchmark(pkg, spec: dict, with_sync: bool = True) -> dict:
    """Scenario: benchmark under test on the fake device (its sync passed in, or not: `with_sync`). Returns
    the Timing, the event log and `summarized`: summarize under test on the Timing's times (None where it raises:
    the Timing's statistics are then not compared)."""
    device = FakeDevice(spec)
    kwargs = {"sync": device.sync} if with_sync else {}
    timing = pkg.benchmarking.benchmark(device.fn, warmup=spec["warmup"], trials=spec["trials"],
                                        clock=device.clock, **kwargs)
    try:
        summarized = pkg.benchmarking.summarize(list(timing.times))
    except Exception:  # noqa: BLE001 - summarize's own tests say what is wrong with it
        summarized = None
    return {"timing": timing, "events": device.events, "summarized": summarized}


def run_benchmark_default_sync(pkg, spec: dict, cuda_available: bool) -> dict:
    """Scenario: benchmark under test with sync=None, while torch.cuda reports itself (un)available and its
    synchronize is the fake device's. Returns the Timing and the event log."""
    device = FakeDevice(spec)
    saved = torch.cuda.is_available, torch.cuda.synchronize
    torch.cuda.is_available = lambda: cuda_available
    torch.cuda.synchronize = device.sync
    try:
        timing = pkg.benchmarking.benchmark(device.fn, warmup=spec["warmup"], trials=spec["trials"],
                                            clock=device.clock)
    finally:
        torch.cuda.is_available, torch.cuda.synchronize = saved
    return {"timing": timing, "events": device.events}


def benchmark_error(pkg, warmup: int, trials: int) -> str | None:
    """Scenario: the name of the exception benchmark raises for these counts (None if it returns)."""
    device = FakeDevice({"durations": [1e-3], "launch": 1e-6, "start": 0.0})
    try:
        pkg.benchmarking.benchmark(device.fn, warmup=warmup, trials=trials, sync=device.sync, clock=device.clock)
    except NotImplementedError:  # an untouched stub: a failure, not an answer
        raise
    except Exception as exc:  # noqa: BLE001 - the type is the answer
        return type(exc).__name__
    return None


# -- device names -------------------------------------------------------------------------------------------

def spec_of_named_cuda_device(pkg, name: str, device: str = "cuda:0"):
    """Scenario: device_spec under test for a CUDA device while torch.cuda names it `name` (both
    get_device_name and get_device_properties(...).name are patched)."""
    saved = torch.cuda.get_device_name, torch.cuda.get_device_properties
    torch.cuda.get_device_name = lambda *args, **kwargs: name
    torch.cuda.get_device_properties = lambda *args, **kwargs: types.SimpleNamespace(name=name)
    try:
        return pkg.benchmarking.device_spec(device)
    finally:
        torch.cuda.get_device_name, torch.cuda.get_device_properties = saved


# -- measurements with a fake clock ----------------------------------------------------------------------

class TickClock:
    """A clock that returns the given readings in order, and fails when they run out."""

    def __init__(self, ticks: list[float]):
        self.ticks, self.reads = ticks, 0

    def __call__(self) -> float:
        if self.reads >= len(self.ticks):
            raise RuntimeError(f"the clock was read more than {len(self.ticks)} times (2 per timed trial)")
        self.reads += 1
        return self.ticks[self.reads - 1]


def measure(pkg, op: str, n: int, dtype: torch.dtype, spec: dict):
    """Scenario: measure_matmul (op "matmul") or measure_bandwidth (op "relu") under test on the CPU, with the
    fake clock of `spec["ticks"]` and the spec's warmup, trials and hardware (a HardwareSpec or None)."""
    function = pkg.benchmarking.measure_matmul if op == "matmul" else pkg.benchmarking.measure_bandwidth
    return function(n, dtype, spec.get("device", "cpu"), warmup=spec["warmup"], trials=spec["trials"],
                     clock=TickClock(spec["ticks"]), hardware=spec["hardware"])


# -- GPU ----------------------------------------------------------------------------------------------------

def synced_and_unsynced_matmul(pkg, n: int, trials: int) -> dict:
    """Scenario (GPU): the median time of a bf16 (n x n) matmul on CUDA, benchmarked with the default sync and
    with a sync that does nothing."""
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    synced = pkg.benchmarking.benchmark(lambda: a @ b, warmup=3, trials=trials)
    unsynced = pkg.benchmarking.benchmark(lambda: a @ b, warmup=3, trials=trials, sync=lambda: None)
    torch.cuda.synchronize()
    return {"synced": synced.median, "unsynced": unsynced.median}
