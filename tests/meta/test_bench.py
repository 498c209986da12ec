"""grader/staff/bench.py's memory rows say what they measure: each process of a grading is named by what it runs,
and one that has exited (gone, or a zombie not yet reaped) holds no memory and has no row (the old "gone" and
"python (a fork)" rows)."""

import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.harness import cgroups
from grader.staff import bench

pytestmark = [pytest.mark.meta]


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def test_processes_are_named_by_what_they_run(tmp_path):
    wrapper = tmp_path / "bwrap"  # a program named as the sandbox's wrapper, its command line holding the worker's
    wrapper.symlink_to(sys.executable)
    asleep = ["-c", "import time; time.sleep(30)", "-m"]  # a grading's command lines, asleep
    worker, wrapped, tests = (subprocess.Popen([sys.executable, *asleep, "grader.harness.worker"]),
                              subprocess.Popen([wrapper, *asleep, "grader.harness.worker"]),
                              subprocess.Popen([sys.executable, *asleep, "pytest"]))
    try:
        deadline = time.monotonic() + 10  # an exec'ing process has no command line for an instant (None)
        while None in [bench._kind(p.pid) for p in (worker, wrapped, tests)] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert bench._kind(worker.pid) == "worker (the submission's code)"
        assert bench._kind(wrapped.pid) == "bwrap (sandbox wrapper)"
        assert bench._kind(tests.pid) == "test process (pytest)"
    finally:
        for process in (worker, wrapped, tests):
            process.kill()
            process.wait()


def test_an_exited_process_has_no_row():
    zombie = subprocess.Popen(["true"])
    deadline = time.monotonic() + 10
    while _state(zombie.pid) != "Z" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _state(zombie.pid) == "Z"
    assert bench._kind(zombie.pid) is None and bench._memory(zombie.pid) == (0.0, 0.0)
    zombie.wait()
    assert bench._kind(zombie.pid) is None


def test_the_report_says_what_its_rows_are(capsys):
    peak = bench.Peak(10.0, 600.0, 700.0, {"grader": (300.0, 350.0), "worker (the submission's code)": (200.0, 250.0)})
    results = {"score": 100.0, "extra_data": {"seconds_per_problem": {"flops": 2.5, "memory": 7.0},
                                              "examples_per_problem": {"flops": 120, "memory": 300}}}
    bench.report("a grading", (peak, results))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "a grading:   10.0 s, score 100.0, 420 examples"
    assert "peak memory of the whole grading tree: 600 MiB PSS" in lines[1]
    assert "the largest that one process of each kind reached" in lines[2]
    assert lines[3].split() == ["grader", "peak", "300", "MiB", "PSS,", "350", "MiB", "RSS"]
    assert lines[4].split()[:4] == ["worker", "(the", "submission's", "code)"]
    assert "seconds and examples of each problem's tests" in lines[5]
    assert [line.split() for line in lines[6:]] == [["memory", "7.0", "s", "300", "examples"],
                                                    ["flops", "2.5", "s", "120", "examples"]]


def test_the_readme_quotes_the_figures_bench_recorded():
    figures = json.loads(bench.FIGURES.read_text())
    readme = bench.FIGURES_PAGE.read_text()
    assert bench.with_figures(readme, figures) == readme, (
        "docs/graders.md's figures differ from grader/staff/figures.json: run `python -m grader.staff.bench "
        "--grade-only --record`, which writes both")
    assert [g["what"] for g in figures["gradings"]][0] == "a full correct submission"
    assert all(g["seconds"] > 0 and g["pss_mib"] > 0 and g["examples"] > 0 for g in figures["gradings"]), figures


def test_a_readme_without_the_block_is_refused():
    with pytest.raises(SystemExit, match="no block of figures"):
        bench.with_figures("# a README\n", json.loads(bench.FIGURES.read_text()))


def test_the_readme_has_the_block_that_make_test_figures_are_written_into():
    readme = (bench.OFFICIAL_ROOT / "README.md").read_text()
    runs = {"lint": bench.Run(1.2, 1.0, 0), "reference": bench.Run(200.4, 380.0, 0), "meta": bench.Run(900, 1700, 0)}
    text = bench.ci_figures(runs, bench.Run(1500, 2600, 0), (0.4, 0.41))
    assert ("`make test` 1102 s and 2081 s of CPU (lint 1 s and 1 s of CPU, reference 200 s and 380 s of CPU, meta "
            "900 s and 1700 s of CPU)") in text, text
    assert text.endswith("then `make slow` 1500 s (2600 s of CPU): 2602 s for CI in all."), text
    assert "took 0.41 CPU-s before and " in text, "the fixed workload's CPU seconds, which the figures scale with"
    written = bench.with_block(readme, bench.CI_BEGIN, bench.CI_END, "\n" + text + "\n", "README.md")
    assert text in written and written.count(bench.CI_BEGIN) == 1 and len(written) > len(text)


def test_the_readme_has_the_block_for_make_test_on_a_busy_machine():
    readme = (bench.OFFICIAL_ROOT / "README.md").read_text()
    runs = {"lint": bench.Run(1.2, 1.0, 0), "meta": bench.Run(900, 1700, 0)}
    text = bench.ci_figures(runs, None, (2.1, 0.41), busy=850.4)
    assert "`make test` 901 s and 1701 s of CPU (lint 1 s and 1 s of CPU, meta 900 s and 1700 s of CPU)" in text, text
    assert "they got 850 s of CPU, not counted" in text and "make slow" not in text, text
    written = bench.with_block(readme, bench.LOADED_BEGIN, bench.LOADED_END, "\n" + text + "\n", "README.md")
    assert text in written and written.count(bench.CI_BEGIN) == 1


def test_the_busy_processes_spin_in_an_account_of_their_own_and_end_with_their_block():
    before = set(cgroups.descendants(os.getpid()))
    with bench.busy_cores(1) as busy:
        spinning = set(cgroups.descendants(os.getpid())) - before
        backstop = time.monotonic() + 60  # only for a machine that never runs it: the spinning shows in its account
        while busy.kind and busy.seconds() < 0.2 and time.monotonic() < backstop:
            time.sleep(0.05)
        assert busy.kind is None or busy.seconds() >= 0.2, "the spinning process got no CPU in its own account"
    assert spinning and not any(Path(f"/proc/{pid}").exists() for pid in spinning), "a busy process outlived it"


def _recipe(makefile: str, target: str) -> str:
    lines = makefile.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{target}:")) + 1
    return "\n".join(line.strip() for line in itertools.takewhile(lambda line: line.startswith("\t"), lines[start:]))


def test_ci_runs_the_slow_tier_that_make_test_leaves_out():
    # every meta-test runs in CI: `make test` all but those marked slow, `make slow` those, and .ci/run both
    makefile = (bench.OFFICIAL_ROOT / "Makefile").read_text()
    assert '-m "not slow"' in _recipe(makefile, "meta") and "meta" in bench.make_test_phases()
    assert _recipe(makefile, "slow").endswith("-m slow")
    ci = [line.strip() for line in (bench.OFFICIAL_ROOT / ".ci" / "run").read_text().splitlines()]
    assert ci.index("make test") < ci.index("make slow"), ci


ORPHAN_BURNS = """
import os, time
if os.fork() == 0:  # a grandchild no one waits for, as the sandbox's workers are to the grader
    os.setsid()
    end = time.process_time() + 1.0
    while time.process_time() < end:
        pass
    os._exit(0)
"""


def test_the_cpu_of_a_whole_tree_counts_what_no_one_waited_for():
    """bench counts CPU seconds with a cgroup (grader/harness/cgroups.py CpuAccount): a process its command started
    and never waited for (os.times() misses it) is counted too."""
    from grader.harness import cgroups

    with cgroups.CpuAccount() as account:
        if account.kind is None:
            pytest.skip("no cgroup to count CPU in here (cgroup v1's cpuacct, or v2, as root)")
        process = subprocess.Popen([sys.executable, "-c", ORPHAN_BURNS], preexec_fn=account.join)
        process.wait()
        deadline = time.monotonic() + 60  # the grandchild spends its second of CPU meanwhile, and ends
        while (account.group / "cgroup.procs").read_text().strip() and time.monotonic() < deadline:
            time.sleep(0.1)
        counted = account.seconds()
    assert counted >= 0.9, f"counted {counted:.2f} CPU-s of the orphan's 1.0"
