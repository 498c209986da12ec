"""Issues 9.3 and 22: the audits hold while the code under test tries to delegate to the oracle, tried straight
through a worker (no sandbox: the oracles' files are on disk, so the guard, grader/harness/guard.py, is what sees a
copy), problem by problem.

Each attack is a function added to a problem's untouched stub, in a copy of the worker's files; the test calls
it through the worker, as a test of that problem would, and checks that the call fails or is refused, and what
evidence the guard sent. The oracle is absent from its problem's worker (grader/harness/absent.py): using it fails
with `OracleAbsent`, whoever holds it. The same routes through the whole grader and its sandbox, for flops,
are in the hostile corpus (tests/meta/hostile/audit_*.py). An honest solution's unusual but legal habits are
no evidence (`test_honest_habits_are_no_evidence`).
"""

import contextlib
import json
import os
import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from grader.harness import absent, guard
from grader.harness.boundary import copy_worker_files
from grader.harness.client import IsolatedPackage, fork_group
from grader.harness.forkserver import ForkServer
from grader.registry import IMPORTED_AHEAD, ORACLES, RECORD_AUDITS, SHARED_WORLD
from tests.meta.suite import ROOT

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
    # record's switches are what their code must not reach while the audit reads the record
    "tensors": """
        _oracle = getattr(__import__("torch")._C._autograd, "_disable_" + "profiler_legacy")

        def contiguous_strides(shape):
            _oracle()  # the audit's profiler, turned off
            return ()
    """,
    "precision": """
        _oracle = getattr(__import__("torch")._C._autograd, "_enable_" + "record_function")

        def round_to_bf16(x):
            _oracle(False)
            return x
    """,
    "mini_einops": """
        _oracle = __import__("importlib").import_module("ein" + "ops")

        def attack():
            import torch
            return _oracle.rearrange(torch.ones(2, 3), "a b -> b a").shape[0]
    """,
}

ABSENT = "not available to the code under test"  # grader/harness/absent.py: the oracle is a stub in its worker
SOURCE = "__import__('os').path.join(__import__('os').path.dirname(__import__('torch').__file__), 'utils', " \
         "'flop_counter.py')"  # the oracle's file by its path: the stub module has none

# Routes around the oracle's name, through flops (every problem's oracle is kept out by the same code).
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
    """, ABSENT, None),
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
    """, ABSENT, "compiled code under another file's name"),
    "tripwire_blinded": ("""
        def attack():
            import sys, torch
            import torch.utils.flop_counter as fc
            tripwire = sys.gettrace() or sys.getprofile()  # a trace function where the oracle is files alone
            try:  # its state is in its defaults: empty the oracle's files
                tripwire.__defaults__ = tuple(frozenset() if isinstance(d, frozenset) else d
                                              for d in tripwire.__defaults__)
            except PermissionError:
                pass
            with fc.FlopCounterMode(display=False) as mode:
                torch.ones(2, 3) @ torch.ones(3, 4)
            return mode.get_total_flops()
    """, ABSENT, "replaced __defaults__ of the grader's"),
    "constants_rebound": ("""
        def attack():
            import sys
            import torch.utils.flop_counter as fc
            guard = sys.modules["grader.harness.guard"]
            guard.AUDITED, guard.AUDITED_PREFIXES = frozenset(), ()
            return len(open(SOURCE).read())
    """, "PermissionError", "opened torch/utils/flop_counter.py"),
    "builtins_swapped": ("""
        def attack():
            import builtins
            import torch.utils.flop_counter as fc
            real = builtins.isinstance
            builtins.isinstance = lambda value, kinds: False
            try:
                return len(open(SOURCE).read())
            finally:
                builtins.isinstance = real
    """, "PermissionError", "opened torch/utils/flop_counter.py"),
    "reimported": ("""
        def attack():
            import importlib, sys, torch
            sys.modules.pop("torch.utils.flop_counter", None)
            sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "AbsentFinder"]
            fresh = importlib.import_module("torch.utils.flop_counter")
            with fresh.FlopCounterMode(display=False) as mode:
                torch.ones(2, 3) @ torch.ones(3, 4)
            return mode.get_total_flops()
    """, "ran the oracle", "rebound the grader's sys.meta_path"),
    "source_opened": ("""
        def attack():
            return len(open(SOURCE).read())
    """, "PermissionError", "opened torch/utils/flop_counter.py"),
    "source_opened_at_import": ("""
        try:
            _copy = open(SOURCE).read()
        except OSError:
            _copy = ""

        def attack():
            return len(_copy)
    """, None, "opened torch/utils/flop_counter.py"),
    "source_through_the_loader": ("""
        def attack():
            import importlib.util, inspect
            spec = importlib.util.spec_from_file_location("my_counter", SOURCE)
            return len(inspect.getsource(importlib.util.module_from_spec(spec)))
    """, "OSError", "opened torch/utils/flop_counter.py"),
    "source_through_a_folder": ("""
        def attack():
            import os
            folder = os.open(os.path.dirname(SOURCE), os.O_RDONLY)
            with os.fdopen(os.open("flop_counter.py", os.O_RDONLY, dir_fd=folder)) as f:
                source = f.read()
            namespace = {}
            exec(compile(source, "counter.py", "exec"), namespace)
            return len(namespace)
    """, "PermissionError", "compiled a copy of an oracle's source"),
    "source_compiled": ("""
        def attack():
            import subprocess, sys
            source = subprocess.run([sys.executable, "-c", "import torch.utils.flop_counter as f; "
                                     "print(open(f.__file__).read())"], capture_output=True, text=True).stdout
            namespace = {}
            exec(compile(source, "my_counter.py", "exec"), namespace)
            return len(namespace)
    """, "Operation not permitted", None),
    "profile_removed": ("""
        def attack():
            import sys
            sys.setprofile(None)
    """, "PermissionError", "called sys.setprofile"),
    "trace_removed": ("""
        def attack():
            import sys
            sys.settrace(None)
    """, "PermissionError", "called sys.settrace"),
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
    copy_worker_files(root)
    return root


def add_attack(root: Path, problem: str, attack: str) -> None:
    """The stub of `problem` in the worker's copy, with `attack` appended."""
    module = root / "assignment" / f"{problem}.py"
    attack = f"SOURCE = {SOURCE}\n" + textwrap.dedent(attack)
    module.write_text((ROOT / "assignment" / f"{problem}.py").read_text() + "\n" + attack)


# The fork servers this module's workers are forked from, one per fork group (grader/harness/client.py FORK_GROUPS),
# and apart for the problems it imports modules ahead for (as a grading's order has it, a server that has imported
# them forks no problem that runs without them): each test still gets a fresh worker, forked from a server no code
# under test ran in, as each problem of a grading does; the server's start (torch's import, most of a worker's) is
# made once per module instead of once per test.
LENT: dict[tuple[tuple[str, ...], bool], ForkServer] = {}


@pytest.fixture(scope="module", autouse=True)
def fork_servers():
    yield LENT
    while LENT:
        LENT.popitem()[1].close()


@contextlib.contextmanager
def fresh_worker(root: Path, problem: str, test: str = "", forking: bool = True):
    """An isolated package over `root` whose worker for `problem` is a fresh one (forked from this module's server
    of its group, where the problem has one and `forking`), begun as test `test`; the worker killed after, the
    server kept for the next test."""
    package = IsolatedPackage("assignment", root, call_timeout=60)
    worker, key = package.worker, (tuple(fork_group(problem)), problem in IMPORTED_AHEAD)
    worker.forking = forking
    worker.fork_server = LENT.pop(key, None) if forking else None
    try:
        worker.begin_test(f"test_guard::{test or problem}", problem)
        yield package
    finally:
        worker.kill()
        server, worker.fork_server = worker.fork_server, None
        package.close()
        if server is not None and server.alive():
            LENT[key] = server
        elif server is not None:
            server.close()


def call_attack(root: Path, problem: str, attack: str, forking: bool = True):
    """`attack()` added to the stub of `problem`, called in a fresh worker (forked from a fork server where the
    problem has one and `forking`): (value or exception, evidence)."""
    add_attack(root, problem, attack)
    with fresh_worker(root, problem, forking=forking) as package:
        try:
            outcome = getattr(package, problem).attack()
        except Exception as exc:  # noqa: BLE001 - the outcome under test
            outcome = exc
        return outcome, package.worker.take_evidence()


@pytest.mark.parametrize("problem", sorted(ORACLES))
def test_an_oracle_captured_at_import_time_fails_every_call(worker_tree, problem):
    import importlib

    add_attack(worker_tree, problem, CAPTURED[problem])
    with fresh_worker(worker_tree, problem) as package:
        # absent from the worker where it is a module (a stub); else (the profiler's switches, which torch
        # itself needs) the guard's tripwire fails the audit that reads the record
        modules = absent.modules_of(ORACLES[problem])
        expected = ABSENT if modules else "ran the oracle"
        for _ in range(2):  # the same oracle code from the same place, in two requests
            with pytest.raises(RuntimeError, match=expected):
                if modules:
                    getattr(package, problem).attack()
                else:
                    package.run(*STEPPED_AROUND[problem][2](importlib.import_module(f"tests.scenarios.{problem}")))


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_each_route_around_the_oracle_is_refused_or_reported(worker_tree, route):
    attack, failure, evidence = ROUTES[route]
    outcome, reported = call_attack(worker_tree, "flops", attack)
    if failure is not None:
        assert isinstance(outcome, Exception) and failure in f"{type(outcome).__name__}: {outcome}", \
            f"{route}: the call did not fail with {failure}: {outcome!r}"
    if evidence is not None:
        assert any(evidence in line for line in reported), f"{route}: no evidence '{evidence}' in {reported}"
        if route not in ("scenario_rebound", "reimported"):  # found after the request, not where it happened
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
    with fresh_worker(worker_tree, problem) as package:
        got = package.run(scenario, argument)
    assert got["outside"], f"{problem}: {name} ran ops outside the mode unseen: {got}"
    if problem == "precision":
        assert got["dtypes"] == [], "the spy saw nothing: this is the route the record is for"


# The record itself, blinded by code that ran before the audit, or that dresses its ops as the mode's: the audit
# turns the record on as it starts, reads it through torch's compiled functions alone (never torch's Python
# profiler, which any code can patch) and tells a range that code opened from the mode's own event.
BLINDING_THE_RECORD = {
    "switched_off_at_import": """
        getattr(__import__("torch")._C._autograd, "_enable_" + "record_function")(False)
        _dressed = __import__("contextlib").nullcontext
    """,
    "profiler_patched": """
        import torch.autograd.profiler as _profiler

        _profiler.profile.__enter__ = lambda self: self
        _profiler.profile.__exit__ = lambda self, *exc: False
        _profiler.profile.function_events = []
        _dressed = __import__("contextlib").nullcontext
    """,
    "context_manager_patched": """
        import contextlib as _contextlib

        _contextlib._GeneratorContextManager.__exit__ = lambda self, *exc: False  # the generator never resumed
        _dressed = _contextlib.nullcontext
    """,
    "range_named_like_the_mode": """
        import torch as _torch

        def _dressed():
            return _torch.autograd.profiler.record_function("Python" + "DispatchMode")
    """,
}
STEPPING_AROUND = """
    def contiguous_strides(shape):
        import torch
        with torch._C._DisableTorchDispatch(), _dressed():
            return tuple(torch.empty(shape).stride())
"""


@pytest.mark.parametrize("route", sorted(BLINDING_THE_RECORD))
def test_the_record_cannot_be_blinded_before_the_audit_nor_dressed_as_the_mode(worker_tree, route):
    from tests.scenarios import tensors as scenarios

    add_attack(worker_tree, "tensors", textwrap.dedent(BLINDING_THE_RECORD[route]) + textwrap.dedent(STEPPING_AROUND))
    with fresh_worker(worker_tree, "tensors", "blinded") as package:
        assert package.tensors.contiguous_strides((2, 3)) == (3, 1), "the attack's module did not import"
        got = package.run(scenarios.without_tensor_ops, [("contiguous_strides", ((2, 3),))])
    assert "aten::empty" in got["outside"], f"{route}: the audit was blinded: {got}"


def test_every_scenario_that_reads_the_record_is_a_record_audit():
    """The tripwire watches the profiler's switches only in RECORD_AUDITS (grader/registry.py): a scenario that
    reads the record and is not listed there could be blinded during its own request."""
    from grader.harness.worker import import_scenarios
    from tests.scenarios.escapes import ops_outside_mode

    reading = {target for target, scenario in import_scenarios().items()
               if ops_outside_mode in (scenario.__defaults__ or ()) or "ops_outside_mode" in scenario.__code__.co_names}
    assert reading == set(RECORD_AUDITS), f"read the record: {sorted(reading)}; RECORD_AUDITS: {RECORD_AUDITS}"


def test_a_rebound_scenario_is_not_the_one_that_runs(worker_tree):
    from tests.scenarios import flops as scenarios

    add_attack(worker_tree, "flops", ROUTES["scenario_rebound"][0])
    with fresh_worker(worker_tree, "flops", "rebound") as package:
        package.flops.attack()
        with pytest.raises(NotImplementedError):  # the stub's counter, run by the real scenario
            package.run(scenarios.count_without_oracle, {"ops": [["mm", [2, 3], [3, 4]]]})


def test_the_fused_adam_kernels_are_absent_from_the_adamw_worker(worker_tree):
    outcome, _ = call_attack(worker_tree, "adamw", """
        def attack():
            import gc, weakref
            import torch
            # first undo what could hold the refusal in place: every Library that gc finds, destroyed, and
            # every finalizer run (a Library's holds its C++ handle)
            for library in [o for o in gc.get_objects() if isinstance(o, torch.library.Library)]:
                library._destroy()
            for finalizer in list(weakref.finalize._registry):
                finalizer()
            p, g, m, v, step = torch.zeros(3), torch.ones(3), torch.zeros(3), torch.zeros(3), torch.tensor(1.0)
            args = [p], [g], [m], [v], [], [step]
            options = dict(lr=0.1, beta1=0.9, beta2=0.99, weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)
            # every route: the ops, the placeholder in torch's namespace, the original function where torch keeps
            # it, and each backend's kernel asked for by name (CUDA's too, which a GPU grader has)
            routes = [lambda: torch.ops.aten._fused_adamw_(*args, **options),
                      lambda: torch.ops.aten._fused_adam_.default(*args, **options),
                      lambda: torch._fused_adamw_(*args, **options),
                      lambda: torch._C._VariableFunctions._fused_adamw_(*args, **options)]
            for key in ("CPU", "CUDA", "Meta"):
                keys = torch._C.DispatchKeySet(getattr(torch._C.DispatchKey, key))
                routes.append(lambda keys=keys: torch.ops.aten._fused_adamw_.default.redispatch(keys, *args, **options))
            refused = []
            for route in routes:
                try:
                    route()
                except RuntimeError as exc:
                    refused.append("not available" in str(exc))
            return refused, p.tolist()
    """)
    # refused by the dispatcher, not seen by the guard's tripwire: these calls fail where no tripwire runs (a
    # sandboxed worker, grader/harness/guard.py watches only what the worker could still run)
    assert list(outcome) == [[True] * 7, [0.0, 0.0, 0.0]], outcome


def test_the_tripwire_watches_only_the_oracle_files_the_worker_can_still_load(tmp_path):
    """What the sandbox hides (grader/harness/sandbox.py: a file masked by /dev/null, a package by an empty
    folder, a file the sandbox's uid may not read) cannot be run, so the tripwire leaves it unwatched; a source
    masked while its bytecode is readable can still be run, so it is watched."""
    (tmp_path / "__pycache__").mkdir()
    readable, emptied, compiled_only = tmp_path / "readable.py", tmp_path / "emptied.py", tmp_path / "compiled.py"
    readable.write_text("x = 1\n")
    emptied.write_text("")
    compiled_only.write_text("")
    (tmp_path / "__pycache__" / "compiled.cpython-311.pyc").write_bytes(b"\x00" * 16)
    oracle = guard.Oracle([])
    oracle.files = {str(readable), str(emptied), str(compiled_only), os.devnull, str(tmp_path / "gone.py")}
    assert oracle.loadable() == {str(readable), str(compiled_only)}, oracle.loadable()
    # a kernel the dispatcher refuses everywhere (absent.REFUSED) is not watched either; the profiler's switches,
    # which torch needs, are (in a process of its own: the refusal lasts as long as the process)
    watched = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        from grader.harness import absent, guard
        from grader.registry import ORACLES
        absent.disable_kernels(["adamw"], ORACLES)
        print(sorted(absent.REFUSED), len(guard.Oracle(["torch._fused_adamw_", "torch._fused_adam_"]).kernels),
              len(guard.Oracle(["torch._C._autograd._disable_profiler"]).switches))
    """)], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    assert watched == "['torch._fused_adam_', 'torch._fused_adamw_'] 0 1", watched


def test_the_profilers_switches_are_taken_out_of_every_namespace_and_nothing_holds_them():
    """absent.disable_functions: the profiler's FLOP count cannot be turned on from any module, and no object is
    left that is the compiled function (the garbage collector's objects searched by name)."""
    found = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import gc, sys, torch, torch.profiler
        from grader.harness import absent
        from grader.registry import PROFILER_FLOPS, TAKEN_OUT
        absent.disable_functions(["flops"], TAKEN_OUT)
        names = {name.rpartition(".")[2] for name in PROFILER_FLOPS}
        held = [(m, k) for m, module in list(sys.modules.items()) for k, v in list(vars(module).items())
                if type(v).__name__ == "builtin_function_or_method" and v.__name__ in names]
        left = [o for o in gc.get_objects() if type(o).__name__ == "builtin_function_or_method" and o.__name__ in names]
        print(held, left, sorted(absent.REFUSED & set(PROFILER_FLOPS)) == sorted(PROFILER_FLOPS))
    """)], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    assert found == "[] [] True", found


# Each of the oracles of the shared world (grader/registry.py SHARED_WORLD), used: absent from the workers of its
# problems, whose fork server has them all absent, and there for every other problem's code.
USE_THE_SHARED_ORACLES = """
    def attack():
        import torch
        uses = {
            "AdamW": lambda: torch.optim.AdamW([torch.zeros(1, requires_grad=True)]),
            "Adam": lambda: torch.optim.Adam([torch.zeros(1, requires_grad=True)]),
            "checkpoint": lambda: __import__("torch.utils.checkpoint", fromlist=["x"]).checkpoint(
                torch.sin, torch.ones(1, requires_grad=True), use_reentrant=False),
            "FlopCounterMode": lambda: __import__("torch.utils.flop_counter", fromlist=["x"]).FlopCounterMode(),
            "profiler's FLOPs": lambda: torch.profiler.profile(with_flops=True).__enter__(),
            "legacy profiler's FLOPs": lambda: torch.autograd.profiler.profile(with_flops=True,
                                                                              use_kineto=False).__enter__(),
        }
        found = {}
        for name, use in uses.items():
            try:
                use()
                found[name] = "ran"
            except RuntimeError as exc:
                found[name] = str(exc)
        return found
"""


@pytest.mark.parametrize("problem, forking", [*((p, True) for p in SHARED_WORLD), ("flops", False),
                                              ("gradient_accumulation", True), ("mini_einops", True)])
def test_the_shared_worlds_oracles_are_absent_from_its_problems_alone(worker_tree, problem, forking):
    # forking off: the worker a problem gets where its fork server failed has its world's oracles absent too
    outcome, _ = call_attack(worker_tree, problem, USE_THE_SHARED_ORACLES, forking)
    assert set(outcome) == {"AdamW", "Adam", "checkpoint", "FlopCounterMode", "profiler's FLOPs",
                            "legacy profiler's FLOPs"}, outcome
    world = f"absent while any of {', '.join(sorted(SHARED_WORLD))} is graded"
    for name, got in outcome.items():
        if problem in SHARED_WORLD:  # named, with the world it is absent from
            assert ABSENT in got and world in got, (name, got)
        else:
            assert got == "ran", (name, got)


# An honest solution's unusual habits: standard-library helpers that look at the platform or build classes
# (they take frames, start `uname -p`), a thread pool, a cache, a finalizer, logging. Graded in full, no evidence.
HONEST = """
    import collections, functools, logging, platform, typing, weakref
    from concurrent.futures import ThreadPoolExecutor

    T = typing.TypeVar("T")
    Pair = collections.namedtuple("Pair", "a b")
    _machine = platform.processor()
    _log = logging.getLogger("honest")


    class _Scratch:
        pass


    @functools.lru_cache(maxsize=None)
    def _square(n):
        return n * n


    def attack():
        Number = typing.TypeVar("Number", int, float)
        Point = collections.namedtuple("Point", "x y")
        with ThreadPoolExecutor(2) as pool:
            squares = list(pool.map(_square, range(4)))
        weakref.finalize(_Scratch(), _log.debug, "collected")
        return [Pair(1, 2).a, Point(3, 4).y, squares, isinstance(platform.processor(), str),
                isinstance(_machine, str), Number.__name__]
"""


def test_honest_habits_are_no_evidence(worker_tree):
    outcome, reported = call_attack(worker_tree, "flops", HONEST)
    assert outcome == [1, 4, [0, 1, 4, 9], True, True, "Number"], outcome
    assert reported == [], f"an honest solution was reported for review: {reported}"


def test_a_frame_of_the_grader_from_a_traceback_is_evidence_and_ones_own_frames_are_not(worker_tree):
    """The standard library takes frames from one's own generators and tracebacks (a generator's state, a
    traceback's text): no evidence. A frame of the grader's code, taken from a traceback, is."""
    outcome, reported = call_attack(worker_tree, "flops", """
        def attack():
            import inspect, sys, traceback
            steps = (n for n in range(2))
            states = [inspect.getgeneratorstate(steps), next(steps) + 1, inspect.getgeneratorstate(steps)]
            try:
                sys.modules["tests.scenarios.flops"].count(None, {})  # fails inside the scenario
            except AttributeError as exc:
                tb, text = exc.__traceback__, traceback.format_exc()
            return [*states, tb.tb_frame.f_code.co_name, "count" in text, tb.tb_next.tb_frame.f_code.co_name]
    """)
    assert outcome == ["GEN_CREATED", 1, "GEN_SUSPENDED", "attack", True, "count"], outcome
    assert len(reported) == 1 and "took a frame of the grader's code from a traceback" in reported[0], reported


def test_code_the_student_compiles_from_data_is_evidence(worker_tree):
    """exec, eval or compile of a text of the code under test's own, however it reached them (a builtin found by a
    name it built): evidence, for code carried as data. A short eval, and the standard library's own exec (a
    namedtuple), are not."""
    outcome, reported = call_attack(worker_tree, "flops", """
        import builtins as _b, collections as _c
        _CODE = "def _f(b, d, k):\\n" + "".join(f"    x{i} = {i}\\n" for i in range(30)) + "    return 2 * b * d * k\\n"

        def attack():
            ns = {}
            getattr(_b, "ex" + "ec")(_CODE, ns)
            return [ns["_f"](1, 2, 3), eval("2 + 2"), _c.namedtuple("P", "x y")(1, 2).y]
    """)
    assert outcome == [12, 4, 2], outcome
    assert len(reported) == 1 and "characters of code given as data" in reported[0], reported


IMPORTED_FROM_ELSEWHERE = {
    # issue 53: the code written into the worker's own folder, then imported (importlib compiles it, under its own
    # name: no compile of the student's, no long literal)
    "a file it wrote": """
        def attack():
            import importlib, os, shutil, sys, tempfile
            folder = tempfile.mkdtemp(prefix="ra-hostile-")
            try:
                with open(os.path.join(folder, "counter_copy.py"), "w") as f:
                    f.write("def flops(b, d, k):\\n    return 2 * b * d * k\\n")
                sys.path.insert(0, folder)
                return importlib.import_module("counter_copy").flops(1, 2, 3)
            finally:
                shutil.rmtree(folder)
    """,
    "an archive": """
        def attack():
            import os, shutil, sys, tempfile, zipfile
            folder = tempfile.mkdtemp(prefix="ra-hostile-")
            try:
                path = os.path.join(folder, "carried.zip")
                with zipfile.ZipFile(path, "w") as z:
                    z.writestr("carried_counter.py", "def flops(b, d, k):\\n    return 2 * b * d * k\\n")
                sys.path.insert(0, path)
                import carried_counter
                return carried_counter.flops(1, 2, 3)
            finally:
                shutil.rmtree(folder)
    """,
    "memory": """
        import importlib.abc as _abc, importlib.util as _util, sys as _sys

        class _Memory(_abc.MetaPathFinder, _abc.InspectLoader):
            def find_spec(self, name, path=None, target=None):
                return _util.spec_from_loader(name, self) if name == "memory_counter" else None

            def get_source(self, name):
                return "def flops(b, d, k):\\n    return 2 * b * d * k\\n"

        def attack():
            _sys.meta_path.insert(0, _Memory())
            import memory_counter
            return memory_counter.flops(1, 2, 3)
    """,
    "a loader called by hand": """
        def attack():
            import importlib.util, os, shutil, tempfile
            folder = tempfile.mkdtemp(prefix="ra-hostile-")
            try:
                path = os.path.join(folder, "by_hand.py")
                with open(path, "w") as f:
                    f.write("def flops(b, d, k):\\n    return 2 * b * d * k\\n")
                spec = importlib.util.spec_from_file_location("by_hand", path)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                return module.flops(1, 2, 3)
            finally:
                shutil.rmtree(folder)
    """,
}


@pytest.mark.parametrize("where", sorted(IMPORTED_FROM_ELSEWHERE))
def test_code_that_reaches_the_import_system_from_elsewhere_is_evidence(worker_tree, where):
    """Code reaching the worker's import system from anywhere but the submission's files and the installed
    environment (a folder it wrote, an archive, memory) is evidence, whoever compiles it (issue 53: importlib did)."""
    outcome, reported = call_attack(worker_tree, "flops", IMPORTED_FROM_ELSEWHERE[where])
    assert outcome == 12, outcome
    assert any("reaches the import system from elsewhere" in line for line in reported), reported


def test_importing_from_the_installed_environment_and_generated_classes_are_no_evidence(worker_tree):
    """What the standard library generates (a dataclass's methods, a namedtuple) and modules imported lazily from
    the installed environment are no evidence; nor is importing a module of the submission's own."""
    outcome, reported = call_attack(worker_tree, "flops", """
        import dataclasses as _dataclasses

        @_dataclasses.dataclass(frozen=True)
        class _Layer:
            index: int
            fan_in: int
            fan_out: int
            bias: bool = False
            name: str = "layer"
            scale: float = 1.0

        def attack():
            import collections, fractions, json, statistics
            point = collections.namedtuple("Point", "x y z")(1, 2, 3)
            return [_Layer(0, 2, 3).fan_out, point.z, json.loads("[1]")[0], int(statistics.median([1, 2, 3])),
                    fractions.Fraction(1, 2).denominator]
    """)
    assert outcome == [3, 3, 1, 2, 2], outcome
    assert not reported, reported


def test_new_processes_are_refused_by_the_kernel_and_threads_run(worker_tree):
    from grader.harness import seccomp

    if seccomp.unsupported():
        pytest.skip(f"no seccomp filter here: {seccomp.unsupported()}")
    outcome, _ = call_attack(worker_tree, "flops", """
        def attack():
            import ctypes, os, subprocess, threading
            refused = []
            for attempt in (os.fork, lambda: subprocess.run(["true"]), lambda: os.execv("/bin/true", ["true"]),
                            lambda: os.posix_spawn("/bin/true", ["true"], {})):
                try:
                    attempt()
                    refused.append(False)
                except PermissionError as exc:
                    refused.append(exc.errno == 1)
            libc = ctypes.CDLL(None, use_errno=True)
            # ptrace(PTRACE_ATTACH, the parent) and process_vm_readv on the parent: refused before any check
            traced = libc.syscall(101, 16, os.getppid(), 0, 0) == -1 and ctypes.get_errno() == 1
            # prctl(PR_SET_PDEATHSIG, 0): a worker that would outlive a grader killed outright
            kept_alive = libc.prctl(1, 0, 0, 0, 0) == -1 and ctypes.get_errno() == 1
            ran = []
            thread = threading.Thread(target=ran.append, args=(1,))
            thread.start()
            thread.join()
            return refused + [traced, kept_alive, ran == [1]]
    """)
    assert outcome == [True] * 7, outcome


def syscall_numbers() -> dict[str, int]:
    """This machine's system call numbers, where the worker's filter holds here (the test is skipped elsewhere)."""
    from grader.harness import seccomp

    if seccomp.unsupported():
        pytest.skip(f"no seccomp filter here: {seccomp.unsupported()}")
    return seccomp.ARCHITECTURES[platform.machine()][2]


def test_kernel_state_that_outlives_a_process_and_signals_beyond_itself_are_refused(worker_tree):
    """Keyrings, POSIX message queues, memfd, io_uring, userfaultfd (a channel to the next grading, memory that no
    rlimit counts, kernel interfaces no solution needs) and signals or pidfds aimed at another process of the
    uid (the fork server, another problem's worker): EPERM. Signals to the worker itself still work."""
    numbers = syscall_numbers()
    outcome, _ = call_attack(worker_tree, "flops", f"""
        def attack():
            import ctypes, os, signal, threading
            libc = ctypes.CDLL(None, use_errno=True)
            n = {numbers!r}

            def refused(result):
                return result == -1 and ctypes.get_errno() == 1

            calls = {{
                "add_key": lambda: libc.syscall(n["add_key"], b"user", b"ra-hostile-k", b"x", 1, -4),
                "keyctl": lambda: libc.syscall(n["keyctl"], 0, -3, 1),
                "request_key": lambda: libc.syscall(n["request_key"], b"user", b"ra-hostile-k", None, 0),
                "mq_open": lambda: libc.mq_open(b"/ra-hostile-q", os.O_RDWR | os.O_CREAT, 0o600, None),
                "memfd_create": lambda: libc.memfd_create(b"ra-hostile", 0),
                "io_uring_setup": lambda: libc.syscall(n["io_uring_setup"], 8, ctypes.create_string_buffer(120)),
                "userfaultfd": lambda: libc.syscall(n["userfaultfd"], 0),
                "kill parent": lambda: libc.kill(os.getppid(), 0),
                "kill group": lambda: libc.kill(0, 0),
                "kill all": lambda: libc.kill(-1, 0),
                "tkill": lambda: libc.syscall(n["tkill"], os.getppid(), 0),
                "pidfd_open": lambda: libc.syscall(n["pidfd_open"], os.getppid(), 0),
            }}
            outcome = {{name: refused(call()) for name, call in calls.items()}}
            os.kill(os.getpid(), 0)  # to itself: allowed
            signal.pthread_kill(threading.main_thread().ident, 0)
            outcome["itself"] = True
            return outcome
    """)
    assert isinstance(outcome, dict), repr(outcome) + getattr(outcome, "__notes__", [""])[0]
    assert outcome == dict.fromkeys(outcome, True) and len(outcome) == 13, outcome


def test_the_fork_servers_filter_refuses_kernel_state_and_allows_its_forks():
    from grader.harness import seccomp

    for machine in seccomp.ARCHITECTURES:
        numbers = seccomp.ARCHITECTURES[machine][2]
        server, worker = seccomp.policy("server"), seccomp.policy("worker")
        refused = [name for names in seccomp.REFUSED.values() for name in names if name not in seccomp.SERVER_NEEDS]
        assert all(server[name] == ((), seccomp.EPERM) for name in refused), machine
        assert all(server[name] == ((), seccomp.ALLOW) for name in seccomp.SERVER_NEEDS), machine
        assert server["execve"] == ((), seccomp.EPERM), "a fork server forks; it never runs another program"
        assert all(worker[name] == ((), seccomp.EPERM) for names in seccomp.REFUSED.values() for name in names)
        assert seccomp.program(machine, pid=7) and seccomp.program(machine) and seccomp.program(machine, kind="box")
        assert "clone3" in numbers and worker["clone3"] == ((), seccomp.ENOSYS)


def test_the_filter_is_an_allowlist_whose_unlisted_calls_answer_enosys(worker_tree):
    """A call no category names (here: mbind, kexec_load, a number past every table) answers ENOSYS, as an old kernel
    would; what reaches another process or shared state answers EPERM; ordinary habits run: threads, temporary
    files, statistics, clocks, getrandom, an alarm to itself."""
    from grader.harness import seccomp

    if seccomp.unsupported():
        pytest.skip(f"no seccomp filter here: {seccomp.unsupported()}")
    outcome, evidence = call_attack(worker_tree, "flops", """
        def attack():
            import concurrent.futures, ctypes, os, random, secrets, signal, statistics, tempfile, threading, time
            libc = ctypes.CDLL(None, use_errno=True)

            def answer(result):
                return "ok" if result != -1 else {1: "EPERM", 38: "ENOSYS"}.get(ctypes.get_errno(), ctypes.get_errno())

            unlisted = {"mbind": answer(libc.syscall(237 if os.uname().machine == "x86_64" else 235, 0, 0, 0, 0, 0,
                                                     0)),
                        "beyond": answer(libc.syscall(1000, 0))}
            with tempfile.TemporaryDirectory() as folder:
                with tempfile.NamedTemporaryFile("w+", dir=folder, delete=False) as f:
                    f.write("x" * 1000)
                os.rename(f.name, f.name + ".renamed")
                files = len(os.listdir(folder))
            with concurrent.futures.ThreadPoolExecutor(4) as pool:
                squares = sum(pool.map(lambda x: x * x, range(100)))
            fired = []
            signal.signal(signal.SIGALRM, lambda *_: fired.append(1))
            signal.setitimer(signal.ITIMER_REAL, 0.01)
            start = time.perf_counter()
            while not fired and time.perf_counter() - start < 5:
                time.sleep(0.001)
            habits = [files, squares, statistics.stdev([1.0, 2.0, 4.0]) > 0, len(os.urandom(16)),
                      len(secrets.token_hex(8)), random.SystemRandom().random() < 1, time.process_time() >= 0,
                      fired == [1], os.cpu_count() >= 1, threading.active_count() >= 1]
            return unlisted, habits
    """)
    assert isinstance(outcome, tuple), repr(outcome) + getattr(outcome, "__notes__", [""])[0]
    unlisted, habits = outcome
    assert unlisted == {"mbind": "ENOSYS", "beyond": "ENOSYS"}, outcome
    assert habits == [1, 328350, True, 16, 16, True, True, True, True, True], outcome
    assert all("ctypes" in line for line in evidence), evidence  # (the unlisted calls' own)


def test_what_reaches_another_process_or_the_page_cache_is_refused(worker_tree):
    """Issue 53's channels and levers, each refused by the kernel (EPERM) at the worker, while the same calls on
    itself still work: fcntl(F_SETOWN) toward its parent (F_SETOWN_EX, locks), prlimit, setpriority and affinity
    on its parent, and the page cache's residency (mincore, preadv2(RWF_NOWAIT)) and eviction (fadvise(DONTNEED),
    madvise(PAGEOUT, COLD)), readahead; a socket."""
    numbers = syscall_numbers()
    outcome, _ = call_attack(worker_tree, "flops", f"""
        def attack():
            import ctypes, fcntl, os, socket
            libc = ctypes.CDLL(None, use_errno=True)
            n = {numbers!r}
            parent, me = os.getppid(), os.getpid()

            def answer(call):
                try:
                    result = call()
                except OSError as exc:
                    return {{1: "EPERM"}}.get(exc.errno, exc.errno)
                return "ok" if result != -1 else {{1: "EPERM"}}.get(ctypes.get_errno(), ctypes.get_errno())

            read, write = os.pipe()
            path = os.__file__  # a file every sandbox binds
            fd = os.open(path, os.O_RDONLY)
            vector = (ctypes.c_char * 4096)()
            iov = (ctypes.c_void_p * 2)(ctypes.addressof(vector), 4096)
            libc.mmap.restype = ctypes.c_void_p
            mapped = libc.mmap(None, 4096, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
            return {{
                "F_SETOWN parent": answer(lambda: fcntl.fcntl(read, fcntl.F_SETOWN, parent)),
                "F_SETOWN itself": answer(lambda: fcntl.fcntl(read, fcntl.F_SETOWN, me)),
                "F_SETOWN_EX": answer(lambda: libc.syscall(n["fcntl"], read, 15, ctypes.byref((ctypes.c_int * 2)()))),
                "lock": answer(lambda: fcntl.flock(fd, fcntl.LOCK_SH)),
                "prlimit parent": answer(lambda: libc.syscall(n["prlimit64"], parent, 0, None,
                                                              ctypes.create_string_buffer(16))),
                "prlimit itself": answer(lambda: libc.syscall(n["prlimit64"], 0, 0, None,
                                                              ctypes.create_string_buffer(16))),
                "setpriority parent": answer(lambda: os.setpriority(os.PRIO_PROCESS, parent, 19)),
                "setpriority user": answer(lambda: os.setpriority(os.PRIO_USER, 0, 19)),
                "affinity parent": answer(lambda: os.sched_setaffinity(parent, {{0}})),
                "mincore": answer(lambda: libc.syscall(n["mincore"], ctypes.c_void_p(mapped), 4096,
                                                       ctypes.create_string_buffer(1))),
                "RWF_NOWAIT": answer(lambda: libc.syscall(n["preadv2"], fd, iov, 1, 0, 0, 8)),
                "preadv2": answer(lambda: libc.syscall(n["preadv2"], fd, iov, 1, 0, 0, 0)),
                "fadvise DONTNEED": answer(lambda: os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)),
                "fadvise SEQUENTIAL": answer(lambda: os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)),
                "madvise PAGEOUT": answer(lambda: libc.madvise(ctypes.c_void_p(mapped), 4096, 21)),
                "madvise COLD": answer(lambda: libc.madvise(ctypes.c_void_p(mapped), 4096, 20)),
                "readahead": answer(lambda: libc.syscall(n["readahead"], fd, 0, 4096)),
                "socket": answer(lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM)),
            }}
    """)
    assert isinstance(outcome, dict), repr(outcome) + getattr(outcome, "__notes__", [""])[0]
    refused = {name: "EPERM" for name in outcome if not name.endswith(("itself", "SEQUENTIAL")) and name != "preadv2"}
    assert outcome == {**refused, "F_SETOWN itself": "ok", "prlimit itself": "ok", "preadv2": "ok",
                       "fadvise SEQUENTIAL": "ok"}, outcome


WORKER_STARTS = '''
import json, os
from grader.harness import client

_start = client.Worker._start


def _recording_start(self):
    with open(os.environ["RA_WORKER_STARTS"], "a") as f:
        f.write(json.dumps([self.current_test, self.current_problem]) + "\\n")
    _start(self)


client.Worker._start = _recording_start
'''


def test_the_first_test_of_a_run_starts_its_worker_with_its_problems_oracles_absent(tmp_path):
    """The package under test is created in the first test's setup, after the hook that tells the worker
    which test and problem it serves: that worker too must start with the problem's oracles absent."""
    (tmp_path / "worker_starts.py").write_text(WORKER_STARTS)
    starts = tmp_path / "starts.jsonl"
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}", "RA_WORKER_STARTS": str(starts)}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "worker_starts",
                          "--impl", "reference", "--isolated", "tests/test_activation_checkpointing.py",
                          "tests/test_flops.py", "-k", "checkpoint_matches_plain_backward or matmul_flops_matches"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:]
    recorded = [json.loads(line) for line in starts.read_text().splitlines()]
    # in the order of their fork server's group (grader/harness/client.py FORK_GROUPS), which the plugin follows
    assert [problem for _, problem in recorded] == ["flops", "activation_checkpointing"], recorded
