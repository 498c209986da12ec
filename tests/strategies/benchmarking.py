"""Strategies of problem benchmarking (tests/test_benchmarking.py): fake devices and clock readings."""

from hypothesis import strategies as st


@st.composite
def benchmark_specs(draw) -> dict:
    """Specs of tests/scenarios/benchmarking.py's fake device: 0-3 warm-up calls, 1-6 trials (even and odd
    counts), each call's work a distinct duration (warm-up calls among the longest, as first calls are), a
    launch overhead far below any duration, a clock that does not start at 0."""
    warmup, trials = draw(st.integers(0, 3)), draw(st.integers(1, 6))
    millis = draw(st.lists(st.integers(1, 500), min_size=warmup + trials, max_size=warmup + trials, unique=True))
    durations = [m * 1e-3 for m in millis]
    durations[:warmup] = [d + 1.0 for d in durations[:warmup]]  # compilation, autotuning: slow first calls
    return {"warmup": warmup, "trials": trials, "durations": durations,
            "launch": draw(st.sampled_from([1e-6, 5e-6])), "start": draw(st.sampled_from([0.0, 12.5, 1e4]))}


@st.composite
def tick_specs(draw) -> dict:
    """Fake clock readings for a measurement: 0-2 warm-up calls, 1-5 trials, 2 increasing readings per trial
    whose differences (the trial times) are distinct."""
    warmup, trials = draw(st.integers(0, 2)), draw(st.integers(1, 5))
    gaps = draw(st.lists(st.integers(1, 1000), min_size=2 * trials, max_size=2 * trials, unique=True))
    ticks, now = [], 3.0
    for gap in gaps:
        now += gap * 1e-4
        ticks.append(now)
    return {"warmup": warmup, "trials": trials, "ticks": ticks}
