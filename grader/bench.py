"""Benchmark the suite and the grader (figures printed, never asserted):

    python -m grader.bench        # or: make bench

1. the default suite's wall time on the reference and on the untouched stubs (2 cores here);
2. the grader on the sample submission: wall time and peak memory (the grading processes together).
"""

import os
import subprocess
import sys
import time

from grader import OFFICIAL_ROOT


def timed(command: list[str]) -> float:
    start = time.monotonic()
    subprocess.run(command, cwd=OFFICIAL_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.monotonic() - start


def main() -> None:
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly"]
    print(f"suite, reference, in-process:  {timed(pytest + ['--impl', 'reference']):6.1f} s")
    print(f"suite, reference, isolated:    {timed(pytest + ['--impl', 'reference', '--isolated']):6.1f} s")
    print(f"suite, untouched stubs:        {timed(pytest + ['--impl', 'assignment']):6.1f} s")
    grade = [sys.executable, "-m", "grader", "grade", "grader/samples/partial", "--out", "/tmp/ra-bench-results.json"]
    seconds, peak = run_with_peak_memory(grade)
    print(f"grader, sample submission:     {seconds:6.1f} s, peak resident memory of all its processes {peak:.0f} MiB")


def _session_rss_mib(session: int) -> float:
    """Resident memory of every process in the session `session` (the grader, pytest, the worker)."""
    total = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            if int(fields[3]) == session:  # field 6 of stat, the session id
                total += int(fields[21]) * os.sysconf("SC_PAGE_SIZE")  # field 24, rss in pages
        except (OSError, IndexError, ValueError):
            continue
    return total / 2**20


def run_with_peak_memory(command: list[str]) -> tuple[float, float]:
    start, peak = time.monotonic(), 0.0
    process = subprocess.Popen(command, cwd=OFFICIAL_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    while process.poll() is None:
        peak = max(peak, _session_rss_mib(process.pid))
        time.sleep(0.1)
    return time.monotonic() - start, peak


if __name__ == "__main__":
    main()
