"""Benchmarks: scripts run by hand (`python -m tests.benchmarks.<name>`), not collected by pytest.

The micro-benchmarks time CPU, not wall clock (`cpu_timer`): on a shared machine a wall-clock figure measures the
other work as much as the call (ratios of 0.02x to 44.7x for the same two calls under load), where this
process's CPU seconds, with one torch thread, stay put. Each prints the load it ran under (`load_line`)."""

import os
import time

cpu_timer = time.process_time  # timeit's timer: the CPU seconds of this process, every thread's


def load_line() -> str:
    """The machine's load as a benchmark starts: CPU-timed figures hold under it, a wall-clock one would not."""
    one, five, _ = os.getloadavg()
    return f"CPU time of this process; load average {one:.1f} (5 min: {five:.1f}) on {os.cpu_count()} cores"
