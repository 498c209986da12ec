"""Issue 9.3, the audits hold while the code under test tries to delegate to the oracle: the worker's guard
(tests/seam/guard.py), tried straight through a worker, problem by problem.

Each attack is a function added to a problem's untouched stub, in a copy of the worker's files; the test calls
it through the worker, as a test of that problem would, and checks that the call fails or is refused, and what
evidence the guard sent. The same routes through the whole grader, for flops, are in the hostile corpus
(tests/meta/hostile/audit_*.py).
"""

import shutil
import textwrap
from pathlib import Path

import pytest

from grader.sandbox import WORKER_FILES
from tests.meta.suite import ROOT
from tests.registry import ORACLES
from tests.seam.client import IsolatedPackage

pytestmark = [pytest.mark.meta, pytest.mark.timeout(600)]

# Each problem's oracle, reached at import time with its name split, so that the static audit sees nothing.
CAPTURED = {
    "flops": """
        _oracle = getattr(__import__("importlib").import_module("torch.utils." + "flop_" + "counter"),
                          "FlopCounter" + "Mode")

        def attack():
            import torch
            with _oracle(display=False) as mode:
                torch.ones(2, 3) @ torch.ones(3, 4)
            return mode.get_total_flops()
    """,
    "adamw": """
        import torch as _torch
        _oracle = getattr(_torch.optim, "Adam" + "W")

        def attack():
            p = _torch.nn.Parameter(_torch.ones(3))
            p.grad = _torch.ones(3)
            _oracle([p], lr=0.1).step()
            return p.tolist()
    """,
    "activation_checkpointing": """
        _oracle = getattr(__import__("importlib").import_module("torch.utils." + "check" + "point"), "check" + "point")

        def attack():
            import torch
            x = torch.ones(3, requires_grad=True)
            _oracle(lambda t: (t * 2).sin(), x, use_reentrant=False).sum().backward()
            return x.grad.tolist()
    """,
    # tensors and precision are audited through a dispatch mode and the profiler's record of every op: the
    # record's off switch is what their code must not reach
    "tensors": """
        _oracle = getattr(__import__("torch")._C._autograd, "_disable_" + "profiler_legacy")

        def attack():
            try:
                _oracle()
            except RuntimeError:  # no profiler on: the switch was reached all the same
                pass
    """,
    "precision": """
        _oracle = getattr(__import__("torch")._C._autograd, "_enable_" + "record_function")

        def attack():
            _oracle(True)
    """,
    "mini_einops": """
        _oracle = __import__("importlib").import_module("ein" + "ops")

        def attack():
            import torch
            return _oracle.rearrange(torch.ones(2, 3), "a b -> b a").shape[0]
    """,
}

# Routes around the oracle's name, through flops (every problem's oracle is guarded by the same code).
ROUTES = {
    "code_copied": ("""
        import types as _types
        import torch.utils.flop_counter as _fc
        _Copy = type("Counter", (_fc.FlopCounterMode,), {
            name: _types.FunctionType(f.__code__, f.__globals__, name, f.__defaults__, f.__closure__)
            for name, f in vars(_fc.FlopCounterMode).items() if isinstance(f, _types.FunctionType)})

        def attack():
            import torch
            with _Copy(display=False) as mode:
                torch.ones(2, 3) @ torch.ones(3, 4)
            return mode.get_total_flops()
    """, "ran the oracle", None),
    "scenario_impersonated": ("""
        import os as _os
        import tests.scenarios.flops as _scenarios
        _fake = _os.path.join(_os.path.dirname(_scenarios.__file__), "helpers.py")  # a scenario's file name
        _namespace = {}
        exec(compile("def run(mode, work):\\n    with mode(display=False) as m:\\n        work()\\n"
                     "    return m.get_total_flops()\\n", _fake, "exec"), _namespace)

        def attack():
            import torch
            import torch.utils.flop_counter as fc
            return _namespace["run"](fc.FlopCounterMode, lambda: torch.ones(2, 3) @ torch.ones(3, 4))
    """, "ran the oracle", "compiled code under another file's name"),
    "tripwire_blinded": ("""
        def attack():
            import sys, torch
            import torch.utils.flop_counter as fc
            tripwire = sys.getprofile()
            try:  # its state is in its defaults: empty the oracle's files
                tripwire.__defaults__ = tuple(frozenset() if isinstance(d, frozenset) else d
                                              for d in tripwire.__defaults__)
            except PermissionError:
                pass
            with fc.FlopCounterMode(display=False) as mode:
                torch.ones(2, 3) @ torch.ones(3, 4)
            return mode.get_total_flops()
    """, "ran the oracle", "replaced __defaults__ of the grader's"),
    "constants_rebound": ("""
        def attack():
            import sys
            import torch.utils.flop_counter as fc
            guard = sys.modules["tests.seam.guard"]
            guard.AUDITED, guard.AUDITED_PREFIXES = frozenset(), ()
            return len(open(fc.__file__).read())
    """, "PermissionError", "opened torch/utils/flop_counter.py"),
    "builtins_swapped": ("""
        def attack():
            import builtins
            import torch.utils.flop_counter as fc
            real = builtins.isinstance
            builtins.isinstance = lambda value, kinds: False
            try:
                return len(open(fc.__file__).read())
            finally:
                builtins.isinstance = real
    """, "PermissionError", "opened torch/utils/flop_counter.py"),
    "reimported": ("""
        def attack():
            import importlib, sys, torch
            sys.modules.pop("torch.utils.flop_counter")
            fresh = importlib.import_module("torch.utils.flop_counter")
            with fresh.FlopCounterMode(display=False) as mode:
                torch.ones(2, 3) @ torch.ones(3, 4)
            return mode.get_total_flops()
    """, "ran the oracle", None),
    "source_opened": ("""
        def attack():
            import torch.utils.flop_counter as fc
            return len(open(fc.__file__).read())
    """, "PermissionError", "opened torch/utils/flop_counter.py"),
    "source_opened_at_import": ("""
        try:
            import torch.utils.flop_counter as _fc
            _copy = open(_fc.__file__).read()
        except OSError:
            _copy = ""

        def attack():
            return len(_copy)
    """, None, "opened torch/utils/flop_counter.py"),
    "source_through_the_loader": ("""
        def attack():
            import inspect, torch.utils.flop_counter as fc
            return len(inspect.getsource(fc))
    """, "OSError", "opened torch/utils/flop_counter.py"),
    "source_compiled": ("""
        def attack():
            import subprocess, sys
            source = subprocess.run([sys.executable, "-c", "import torch.utils.flop_counter as f; "
                                     "print(open(f.__file__).read())"], capture_output=True, text=True).stdout
            namespace = {}
            exec(compile(source, "my_counter.py", "exec"), namespace)
            return len(namespace)
    """, "PermissionError", "compiled a copy of an oracle's source"),
    "profile_removed": ("""
        def attack():
            import sys
            sys.setprofile(None)
    """, "PermissionError", "called sys.setprofile"),
    "guard_searched": ("""
        def attack():
            import gc
            return len([f for f in gc.get_objects() if getattr(f, "__name__", "") == "hook"])
    """, None, "called gc.get_objects"),
    "scenario_rebound": ("""
        def attack():
            import sys
            sys.modules["tests.scenarios.flops"].count_without_oracle = lambda pkg, spec: "forged"
    """, None, "rebound the grader's tests.scenarios.flops.count_without_oracle"),
}


@pytest.fixture(scope="module")
def worker_tree(tmp_path_factory) -> Path:
    """A copy of what the worker reads: the stubs and the worker's own files."""
    root = tmp_path_factory.mktemp("worker")
    for name in WORKER_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, root / name)
    return root


def add_attack(root: Path, problem: str, attack: str) -> None:
    """The stub of `problem` in the worker's copy, with `attack` appended."""
    module = root / "assignment" / f"{problem}.py"
    module.write_text((ROOT / "assignment" / f"{problem}.py").read_text() + "\n" + textwrap.dedent(attack))


def call_attack(root: Path, problem: str, attack: str):
    """`attack()` added to the stub of `problem`, called in a fresh worker: (value or exception, evidence)."""
    add_attack(root, problem, attack)
    package = IsolatedPackage("assignment", root, call_timeout=60)
    try:
        package.worker.begin_test(f"test_guard::{problem}", problem)
        try:
            outcome = getattr(package, problem).attack()
        except Exception as exc:  # noqa: BLE001 - the outcome under test
            outcome = exc
        return outcome, package.worker.take_evidence()
    finally:
        package.close()


@pytest.mark.parametrize("problem", sorted(ORACLES))
def test_an_oracle_captured_at_import_time_fails_every_call(worker_tree, problem):
    add_attack(worker_tree, problem, CAPTURED[problem])
    package = IsolatedPackage("assignment", worker_tree, call_timeout=60)
    try:
        package.worker.begin_test(f"test_guard::{problem}", problem)
        for _ in range(2):  # the same oracle code from the same place, in two requests
            with pytest.raises(RuntimeError, match="ran the oracle"):
                getattr(package, problem).attack()
    finally:
        package.close()


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_each_route_around_the_oracle_is_refused_or_reported(worker_tree, route):
    attack, failure, evidence = ROUTES[route]
    outcome, reported = call_attack(worker_tree, "flops", attack)
    if failure is not None:
        assert isinstance(outcome, Exception) and failure in f"{type(outcome).__name__}: {outcome}", \
            f"{route}: the call did not fail with {failure}: {outcome!r}"
    if evidence is not None:
        assert any(evidence in line for line in reported), f"{route}: no evidence '{evidence}' in {reported}"
        if route != "scenario_rebound":  # found after the request, not where it happened
            assert any("flops.py:" in line for line in reported), f"{route}: no place in the evidence: {reported}"


# The dispatch-mode audits, stepped around: the mode sees nothing, the dispatcher's record sees the ops.
STEPPED_AROUND = {
    "tensors": ("contiguous_strides", """
        def contiguous_strides(shape):
            import torch
            with torch._C._DisableTorchDispatch():
                return tuple(torch.empty(shape).stride())
    """, lambda scenarios: (scenarios.without_tensor_ops, [("contiguous_strides", ((2, 3),))])),
    "precision": ("round_to_bf16", """
        def round_to_bf16(x):
            import torch
            with torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(torch._C.DispatchKey.Python)):
                return x.to(getattr(torch, "b" + "float16")).float()
    """, lambda scenarios: (scenarios.watched_round_to_bf16, __import__("torch").ones(3))),
}


@pytest.mark.parametrize("problem", sorted(STEPPED_AROUND))
def test_a_dispatch_mode_stepped_around_is_seen(worker_tree, problem):
    import importlib

    name, attack, request = STEPPED_AROUND[problem]
    add_attack(worker_tree, problem, attack)
    scenario, argument = request(importlib.import_module(f"tests.scenarios.{problem}"))
    package = IsolatedPackage("assignment", worker_tree, call_timeout=60)
    try:
        package.worker.begin_test(f"test_guard::{problem}", problem)
        got = package.run(scenario, argument)
    finally:
        package.close()
    assert got["outside"], f"{problem}: {name} ran ops outside the mode unseen: {got}"
    if problem == "precision":
        assert got["dtypes"] == [], "the spy saw nothing: this is the route the record is for"


def test_a_rebound_scenario_is_not_the_one_that_runs(worker_tree):
    from tests.scenarios import flops as scenarios

    add_attack(worker_tree, "flops", ROUTES["scenario_rebound"][0])
    package = IsolatedPackage("assignment", worker_tree, call_timeout=60)
    try:
        package.worker.begin_test("test_guard::rebound", "flops")
        package.flops.attack()
        with pytest.raises(NotImplementedError):  # the stub's counter, run by the real scenario
            package.run(scenarios.count_without_oracle, {"ops": [["mm", [2, 3], [3, 4]]]})
    finally:
        package.close()
