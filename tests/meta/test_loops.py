"""A loop costs what an unfinished function costs, wherever it is (grader/harness/running.py, client.py,
time_limit.py): the function not called again is the one the worker was stuck in, its callers fail at once with its
message, one timeout per grading; the catalogue's loops (tests/mistakes/, `loops`) graded as the grader grades."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from grader.registry import BY_ID, PROBLEMS
from tests.meta.slips import LOOP, UNFINISHED, planted
from tests.meta.suite import ROOT, grader_env
from tests.mistakes import and_what_waits, catalog

pytestmark = pytest.mark.meta

LOOPS = [m for p in PROBLEMS for m in catalog(p.id) if m.loops]
CALL_SECONDS = 3  # the gradings' call limit here: a loop's one timeout


def reference_with(folder: Path, module: str, source: str) -> Path:
    shutil.copytree(ROOT / "reference", folder, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / f"{module}.py").write_text(source)
    return folder


def graded(folder: Path, problem: str) -> dict:
    """`grade` (the meta-tests' secret, fingerprints on) of `problem` alone, at half a CPU (Gradescope's) where a
    cgroup's quota can give it: its results.json."""
    from grader.cpushare import CpuShare

    out = folder.with_name(folder.name + ".json")
    with CpuShare(0.5) as share:
        def join() -> None:
            if share.group is not None:
                share.add(os.getpid())

        done = subprocess.run([sys.executable, "-m", "grader", "grade", str(folder), "--out", str(out), "--problem",
                               problem, "--call-timeout", str(CALL_SECONDS)], cwd=ROOT, env=grader_env(),
                              preexec_fn=join, capture_output=True, timeout=3000)
    assert out.exists(), done.stderr.decode(errors="replace")[-3000:]
    return json.loads(out.read_text())


def behaviours(results: dict) -> dict[str, float]:
    return {t["name"]: t["score"] for t in results["tests"]}


@pytest.mark.parametrize("mistake", LOOPS, ids=lambda m: f"{m.problem}:{m.id}")
def test_a_loop_costs_what_leaving_its_function_unfinished_costs(mistake, tmp_path):
    """The catalogue's loop (a helper its problem's other functions call) and the same functions left unfinished,
    graded as a course grades them at half a CPU: the same points, behaviour by behaviour, lost only where its COSTS
    say; the function that looped named in the first timeout's message alone ("ran out of time before" after it);
    one timeout in the whole grading, the fingerprints' pass included."""
    problem, module = mistake.problem, BY_ID[mistake.problem].module
    source = (ROOT / "reference" / f"{module}.py").read_text()  # its functions call one another, as a student's do
    looping = graded(reference_with(tmp_path / "loop", module, planted(source, LOOP, set(mistake.replaces))), problem)
    unfinished = graded(reference_with(tmp_path / "unfinished", module,
                                       planted(source, UNFINISHED, set(mistake.replaces))), problem)
    assert behaviours(looping) == behaviours(unfinished), (behaviours(looping), behaviours(unfinished))
    lost = {name.split(": ", 1)[1] for name, score in behaviours(looping).items()
            if score < next(t["max_score"] for t in looping["tests"] if t["name"] == name)}
    assert lost and lost <= and_what_waits(problem, set(mistake.costs)), (lost, mistake.costs)
    names = [f"{module}.{name}" for name in mistake.replaces]
    staff = looping["extra_data"]
    assert staff["ran_out_of_time"] == names, staff  # not the function the test called, nor a scenario
    assert not staff["fingerprints"].get("ran_out_of_time"), "the fingerprints called it again: " + str(staff)
    outputs = [t["output"] for t in looping["tests"]]
    first = f"{names[0]} did not return within {CALL_SECONDS} s of CPU time"
    assert sum(f"{first}\n" in text or f"{first}`" in text for text in outputs) == 1, "one first timeout"
    assert any(f"{first} (it ran out of time before: not called again)" in text for text in outputs)


def test_a_loop_at_import_is_named_on_the_does_not_import_line(tmp_path):
    source = (ROOT / "reference" / "memory.py").read_text() + "\n\nwhile True:\n    pass\n"
    line = len(source.splitlines()) - 1
    results = graded(reference_with(tmp_path / "submission", "memory", source), "memory")
    assert results["score"] == 0
    expected = (f"memory.py, line {line}: WorkerTimeout: assignment/memory.py did not finish importing within "
                f"{CALL_SECONDS} s of CPU time")
    assert "Does not import (every test" in results["output"] and expected in results["output"], results["output"]
    assert all(f"Does not import: {expected}" in t["output"] for t in results["tests"])


# -- the worker's word on where it is stuck (isolated packages, a call limit of one CPU second) ----------------------

@pytest.fixture
def isolated(tmp_path):
    """`isolated(module, source)`: an isolated package whose `module` is `source` (the rest the reference), one
    second of CPU time per call."""
    from grader.harness.boundary import copy_worker_files
    from grader.harness.client import IsolatedPackage

    made = []

    def make(module: str, source: str):
        root = tmp_path / f"tree{len(made)}"
        copy_worker_files(root)
        for path in (ROOT / "reference").glob("*.py"):
            shutil.copy(path, root / "assignment" / path.name)
        (root / "assignment" / f"{module}.py").write_text(source)
        package = IsolatedPackage("assignment", root, call_timeout=1.0)
        package.worker.begin_test("test_loops::one", module)
        made.append(package)
        return package

    yield make
    for package in made:
        package.close()


def test_a_correct_helper_that_a_slow_caller_was_in_is_called_again(isolated):
    from grader.harness.client import WorkerTimeout

    source = (ROOT / "reference" / "memory.py").read_text()
    slow = source.replace("    return layers * tensor_bytes((batch, width), dtype)",
                          "    while True:\n        tensor_bytes((batch, width), dtype)")
    assert slow != source
    package = isolated("memory", slow)
    with pytest.raises(WorkerTimeout, match=r"^memory.mlp_activation_bytes did not return within 1 s of CPU time$"):
        package.memory.mlp_activation_bytes(2, 3, 4, torch.float32)
    assert package.memory.tensor_bytes((2, 3), torch.float32) == 24


def test_a_loop_reached_through_a_scenario_is_the_functions_and_not_called_again(isolated):
    """The scenario of the documented errors calls view_result: the timeout names view_result (not "scenario
    raised"), and the test's own later call of view_result fails at once, as the scenario's next call does."""
    from grader.harness.client import WorkerTimeout
    from tests.scenarios import documented

    source = (ROOT / "reference" / "tensors.py").read_text()
    package = isolated("tensors", planted(source, LOOP, {"view_result"}))
    with pytest.raises(WorkerTimeout, match=r"^tensors.view_result did not return within 1 s of CPU time$"):
        package.run(documented.raised, "tensors", "view_result", [(4, 6), (6, 1), 0, [("t",)]], {})
    package.worker.begin_test("test_loops::two", "tensors")
    again = r"^tensors.view_result did not return within 1 s of CPU time \(it ran out of time before: not called again"
    with pytest.raises(WorkerTimeout, match=again):
        package.tensors.view_result((4, 6), (6, 1), 0, [("t",)])
    with pytest.raises(WorkerTimeout, match=again):
        package.run(documented.raised, "tensors", "view_result", [(4, 6), (6, 1), 0, [("t",)]], {})
    assert package.tensors.contiguous_strides((2, 3)) == (3, 1), "the module's other functions are called"


def test_a_bare_not_implemented_error_names_its_function(isolated):
    source = (ROOT / "reference" / "memory.py").read_text()
    package = isolated("memory", planted(source, ("raise NotImplementedError",), {"tensor_bytes"}))
    with pytest.raises(NotImplementedError) as raised:
        package.memory.mlp_activation_bytes(2, 3, 4, torch.float32)
    assert str(raised.value) == "tensor_bytes", "named as the stubs name theirs, not left blank (shown as '?')"


def test_every_problems_share_fits_a_loop_at_half_a_cpu():
    """At Gradescope's half a CPU, with the default limits and the problems in the order they run: even where every
    problem before it used the whole of its share, each problem's share holds a loop's one timeout and as much again
    for its other tests (grader/harness/time_limit.py)."""
    from grader.grading import reserved
    from grader.harness.client import FORK_GROUPS
    from grader.harness.time_limit import share
    from grader.runner import SHARE_MARGIN, Limits

    limits = Limits()
    budget = 0.5 * (limits.submission_seconds - reserved(limits.submission_seconds) - SHARE_MARGIN)
    order = [p for group in FORK_GROUPS for p in group]
    order += [p.id for p in PROBLEMS if p.id not in order]
    spent = 0.0
    for problem in order:
        seconds = share(problem, order, spent, budget, 2 * limits.call_seconds)
        assert seconds >= 2 * limits.call_seconds, (problem, seconds)
        spent += seconds
