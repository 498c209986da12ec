"""Benchmark the suite and the grader (figures printed, never asserted):

    python -m grader.bench        # or: make bench

1. the default suite's wall time on the reference and on the untouched stubs (2 cores here);
2. the grader on the sample submission: wall time and peak memory (the grading processes together).
"""

import os
import shutil
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
    one_core = ["taskset", "-c", "0"] if shutil.which("taskset") else []  # Gradescope's default worker: one core
    seconds, peak = run_with_peak_memory(one_core + grade)
    print(f"grader, sample submission{', one core' if one_core else ''}: {seconds:6.1f} s, "
          f"peak resident memory of all its processes {peak:.0f} MiB")


def _tree_rss_mib(root: int) -> float:
    """Resident memory of `root` and all its descendants (the grader, pytest, the worker), from /proc."""
    parent, rss = {}, {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(pid)] = int(fields[1])  # stat field 4, the parent's pid
        rss[int(pid)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")  # stat field 24, resident pages
    tree, frontier = {root}, [root]
    while frontier:
        children = [pid for pid, ppid in parent.items() if ppid in frontier and pid not in tree]
        tree.update(children)
        frontier = children
    return sum(rss.get(pid, 0) for pid in tree) / 2**20


def run_with_peak_memory(command: list[str]) -> tuple[float, float]:
    start, peak = time.monotonic(), 0.0
    process = subprocess.Popen(command, cwd=OFFICIAL_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while process.poll() is None:
        peak = max(peak, _tree_rss_mib(process.pid))
        time.sleep(0.1)
    return time.monotonic() - start, peak


if __name__ == "__main__":
    main()
