"""What a loop costs: whole gradings at Gradescope's half CPU of the reference with one function left unfinished,
then with the same function looping instead, side by side.

    python -m tests.benchmarks.loops [--function memory.tensor_bytes] [--cpus 0.5] [--local]

Each submission is a copy of the reference with `raise NotImplementedError` (unfinished), or `while True: pass`
(a loop), first in the body of the function named. Each is graded as a course grades (`resource-grader grade`,
with the meta-tests' public secret unless `--local`, fingerprints included) in a cgroup CPU quota of `--cpus`, its
whole process tree counted by a cpuacct group. Printed: each grading's points per problem, its total, the CPU
seconds of its whole tree and its wall-clock seconds, then what the loop cost beyond the unfinished function in
points (none is the design: a loop costs what an unfinished function costs) and in CPU seconds (one call's
limit, 10, is the design's most). Needs root (the cgroups)."""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from grader.cpushare import CpuShare
from grader.harness.cgroups import CpuAccount
from tests.meta.slips import LOOP, UNFINISHED, planted
from tests.meta.suite import ROOT, grader_env


def submission(folder: Path, function: str, statement: tuple[str, ...]) -> Path:
    """A copy of the reference with `statement` first in the body of `function` ("module.name")."""
    module, name = function.split(".")
    shutil.copytree(ROOT / "reference", folder, ignore=shutil.ignore_patterns("__pycache__"))
    path = folder / f"{module}.py"
    path.write_text(planted(path.read_text(), statement, {name}))
    return folder


def graded(folder: Path, cpus: float, local: bool) -> dict:
    """Grade `folder` in a CPU quota of `cpus`: its results.json, with the CPU and wall seconds of the grading."""
    out = folder.with_name(folder.name + "-results.json")
    with CpuShare(cpus) as share, CpuAccount() as account:
        if share.group is None or account.kind is None:
            raise SystemExit(f"needs a cgroup CPU quota and a cpuacct group (root): {share.describe()}")

        def join() -> None:
            share.add(os.getpid())
            account.join()

        start = time.monotonic()
        subprocess.run([sys.executable, "-m", "grader", "grade", str(folder), "--out", str(out),
                        *["--local"] * local], cwd=ROOT, env=grader_env(), preexec_fn=join,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        wall = time.monotonic() - start
        while (account.group / "cgroup.procs").read_text().strip():  # what no one waited for, ended
            time.sleep(0.1)
        cpu = account.seconds()
    results = json.loads(out.read_text())
    return {**results, "cpu": cpu, "wall": wall}


def by_problem(results: dict) -> dict[str, float]:
    points: dict[str, float] = {}
    for test in results["tests"]:
        problem = test["extra_data"]["problem"]
        points[problem] = points.get(problem, 0.0) + test["score"]
    return points


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--function", default="memory.tensor_bytes", help="module.function (default: %(default)s)")
    parser.add_argument("--cpus", type=float, default=0.5, help="the grading's CPU quota (default: Gradescope's 0.5)")
    parser.add_argument("--local", action="store_true", help="the public inputs (no course secret)")
    options = parser.parse_args(argv)
    print(f"{options.function}, graded at {options.cpus:g} CPU on {os.cpu_count()} cores "
          f"(load {os.getloadavg()[0]:.1f} before)", flush=True)
    found = {}
    with tempfile.TemporaryDirectory(prefix="ra-loops-") as tmp:
        for kind, statement in (("unfinished", UNFINISHED), ("loop", LOOP)):
            folder = submission(Path(tmp, kind), options.function, statement)
            found[kind] = graded(folder, options.cpus, options.local)
            points = by_problem(found[kind])
            print(f"{kind:<11} {found[kind]['score']:6.2f} points, {found[kind]['cpu']:6.1f} CPU-s of the whole tree, "
                  f"{found[kind]['wall']:6.1f} s wall: " + ", ".join(f"{p} {v:g}" for p, v in points.items()),
                  flush=True)
    for kind, results in found.items():
        print(f"{kind}: the behaviours that lost points")
        for test in (t for t in results["tests"] if t["score"] < t["max_score"]):
            lines = [line for line in test["output"].splitlines() if line and not line.startswith("```")]
            print(f"    {test['name']}: {test['score']:g} / {test['max_score']:g}: {' | '.join(lines[1:3])[:200]}")
    unfinished, loop = found["unfinished"], found["loop"]
    print(f"the loop costs {unfinished['score'] - loop['score']:.2f} points and "
          f"{loop['cpu'] - unfinished['cpu']:.1f} CPU-s more than the unfinished function")


if __name__ == "__main__":
    main()
