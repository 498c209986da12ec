"""batch's throughput on a Dask cluster of 1, then 2 workers (separate processes on 127.0.0.1), in one run.

    python -m tests.benchmarks.batch_cluster [--submissions 12] [--problem tensors] [--loops 0]

Grades the same class (copies of the reference, each with a comment of its own so that no two are the same
submission; `--loops` of them with an endless loop in every function, gradings several times as long) through
`--scheduler` on one worker, then on two, and prints each throughput (submissions per hour, as the class report
computes it: over the whole batch command), their ratio, and with two workers each one's seconds of grading (from
the grading.json records): an even hand-out keeps them close. Each worker grades one submission at a time
(`--nthreads 1`); a grading is two processes (the tests, the sandboxed worker), so the ratio says how well a
machine's cores are used, not only Dask's overhead: on a machine with fewer free cores than 2 gradings need, expect
well under 2.
"""

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from grader.batch.records import RECORD, read_record
from tests.meta.dask_cluster import DaskCluster
from tests.meta.slips import LOOP, planted
from tests.meta.suite import ROOT, grader_env

RATE = re.compile(r"^(\d+) gradings in (\d+) s, the whole command in (\d+) s: (\d+) submissions per hour", re.M)


def make_class(folder: Path, n: int, problem: str, loops: int) -> None:
    source = (ROOT / "reference" / f"{problem}.py").read_text()
    for i in range(n):
        (folder / f"student{i:03d}").mkdir(parents=True)
        mine = planted(source, LOOP) if i < loops else source
        (folder / f"student{i:03d}" / f"{problem}.py").write_text(mine + f"\n# student {i}\n")


def busy(out: Path) -> dict[str, list[float]]:
    """Worker -> the seconds of each grading it finished, from each submission's grading.json."""
    seconds: dict[str, list[float]] = {}
    for path in out.glob(f"*/{RECORD}"):
        record = read_record(path)
        if record is not None:
            seconds.setdefault(record.worker, []).append(record.outcome.seconds)
    return seconds


def run(folder: Path, out: Path, address: str, problem: str) -> tuple[float, str]:
    command = [sys.executable, "-m", "grader", "batch", str(folder), "--out", str(out), "--problem", problem,
               "--scheduler", address, "--no-fingerprints"]
    start = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env=grader_env(), capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    found = RATE.search((out / "report.md").read_text())
    if found is None:
        raise SystemExit("report.md's throughput line has another form: grader/batch/classreport.py run_lines")
    return float(found[4]), (f"{found[1]} gradings in {found[2]} s, the batch command {found[3]} s "
                             f"({time.monotonic() - start:.0f} s measured here)")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--submissions", type=int, default=12)
    parser.add_argument("--problem", default="tensors")
    parser.add_argument("--loops", type=int, default=0, help="how many of the submissions loop in every function")
    options = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="ra-bench-cluster-"))
    try:
        make_class(tmp / "class", options.submissions, options.problem, options.loops)
        make_class(tmp / "warm-up", 1, options.problem, 0)
        rates = []
        with DaskCluster(tmp / "dask") as cluster:
            for n in (1, 2):
                cluster.add_worker(f"w{n}")
                cluster.wait_for_workers(n)
                if n == 1:  # the first worker's first grading is not counted: the second's is (a cold start)
                    run(tmp / "warm-up", tmp / "grades-warm-up", cluster.address, options.problem)
                rate, how = run(tmp / "class", tmp / f"grades{n}", cluster.address, options.problem)
                rates.append(rate)
                print(f"{n} worker{'s' * (n > 1)}: {rate:.0f} submissions per hour ({how})")
        print(f"throughput with 2 workers / with 1: {rates[1] / rates[0]:.2f}")
        for worker, seconds in sorted(busy(tmp / "grades2").items()):
            each = " + ".join(f"{s:.0f}" for s in seconds)
            print(f"with 2 workers, {worker} graded {len(seconds)}: {sum(seconds):.0f} s ({each})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
