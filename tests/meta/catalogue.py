"""The catalogue of mistakes graded once per run of the meta-tests, and shared by every meta-test that reads it:
tests/meta/test_mistakes.py (each mistake caught, what tests it fails, the points it costs) and
tests/meta/test_compare.py (the mistake compare names).

Each mistake is graded as `grade` grades it (`python -m tests.meta.mutation --graded`: every test of its problem run
to its end, the differential ones too, the run scored with the gates applied, and compared as fingerprints compare
it) under grading seed HELD_OUT_SEED, which the grading budgets (grader/grading_budget.py) were not calibrated on,
with the `calibrate` profile: `grade`'s inputs and budgets, a failing test not shrunk (a smaller failing example
changes what a failure says, never whether it failed; shrinking took three quarters of adamw's catalogue). The whole
catalogue graded both ways gave the same results, mistake by mistake (2026-12). The first xdist worker to ask grades
it, for the problems the session's tests need (`-k <problem>`: that problem's alone); the others wait for it and
read what it wrote (a file lock in the session's shared temporary folder)."""

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.meta import processes
from tests.meta.suite import ROOT

HELD_OUT_SEED = 11  # grader/grading_budget.py was calibrated on seeds 1, 2 and 3
# CPU seconds of the whole tree: a backstop far beyond the catalogue's cost (about 250, its shards included, on a
# loaded 2-core machine in 2026-12), never what decides (tests/meta/processes.py: a busy machine never stops it)
CPU_SECONDS = 1800


def shared_folder(tmp_path_factory) -> Path:
    """The temporary folder of this pytest session that its xdist workers share (each has one of its own below)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def graded(problems: list[str] | None, folder: Path) -> dict[tuple[str, str], dict]:
    """(problem, mistake id) -> its graded result (tests/meta/mutation.py run_mistake, `named` included), for
    `problems` (None: all), graded once in `folder` whoever asks."""
    out = folder / f"catalogue-{'-'.join(problems) if problems else 'all'}.json"
    with open(folder / "catalogue.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not out.exists():
            run_mutation(["--graded", "--profile", "calibrate", "--grading-seed", str(HELD_OUT_SEED),
                          *[f"--problem={p}" for p in problems or ()]], out)
    return {(r["problem"], r["id"]): r for r in json.loads(out.read_text())}


def run_mutation(options: list[str], out: Path) -> list[dict]:
    """`python -m tests.meta.mutation OPTIONS` (a subprocess, with shards of its own; nothing of it outlives it),
    its JSON results written into `out` once complete, and returned."""
    partial = out.with_suffix(".partial")
    processes.run([sys.executable, "-m", "tests.meta.mutation", *options, "--json", str(partial)], cwd=ROOT,
                  cpu_seconds=CPU_SECONDS, stdout=subprocess.DEVNULL)
    if not partial.exists():
        raise RuntimeError(f"python -m tests.meta.mutation {' '.join(options)} wrote no results")
    partial.replace(out)
    return json.loads(out.read_text())
