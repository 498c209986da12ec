"""The oracles are absent from the grading worker: what `ORACLES` (grader/registry.py) names for a problem is
neither importable nor in `sys.modules` in that problem's worker, and its files are not on its filesystem
view (grader/harness/sandbox.py masks them: the namespaces layer hides them, the user layer denies the sandbox's uid
the right to read them).

A module of an oracle is found by its file, without importing anything (`locate`). In the worker a finder
placed first on `sys.meta_path` before torch is imported (`install`) answers every import of such a module,
and of its submodules, with a stub: torch imports some of them itself (`torch.optim` imports `adam` and
`adamw`), so the stub has every name torch asks for, and each is a placeholder that raises `OracleAbsent`,
naming the oracle and its problem, when called, instantiated or subclassed and instantiated. A compiled
kernel of an oracle (torch's fused Adam) is taken out of torch's namespace and its CPU kernel replaced in
torch's dispatcher by one that raises the same error (`disable_kernels`). A compiled function of torch's
extension (the profiler's switches that turn on its FLOP count) is replaced by such a placeholder in every
namespace that holds it, so that no object is left to call it (`disable_functions`).
"""

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
import warnings
from pathlib import Path


class OracleAbsent(RuntimeError):
    """The code under test used an oracle of the problem it is graded on (or of a problem graded in the same
    world): the grading worker has none."""


def message(name: str, problem: str, graded: tuple[str, ...] = ()) -> str:
    """What the code under test reads when it uses the oracle `name` of `problem` in a worker of `graded` (the
    problems whose oracles are all absent from it, grader/registry.py SHARED_WORLD)."""
    world = f" (absent while any of {', '.join(sorted(graded))} is graded)" if len(graded) > 1 else ""
    return f"{name} is the oracle of problem {problem}{world}: not available to the code under test"


def locate(name: str) -> Path | None:
    """The file (a module) or folder (a package) of the module `name`, found without importing anything;
    None where `name` is not a module (a kernel, an attribute) or is not installed."""
    top, *rest = name.split(".")
    try:
        spec = importlib.machinery.PathFinder.find_spec(top)  # sys.path alone (not the stubs), imports nothing
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if not spec.submodule_search_locations:
        return Path(spec.origin) if not rest and spec.origin and spec.origin.endswith(".py") else None
    if not rest and spec.origin is None:  # a package whose folder the sandbox emptied: a namespace package now
        return Path(next(iter(spec.submodule_search_locations)))
    for location in spec.submodule_search_locations:
        base = Path(location).joinpath(*rest)
        # where the sandbox hides it, a module's file is /dev/null and a package an empty folder: still found
        if (base / "__init__.py").exists() or rest and base.is_dir() and not any(base.iterdir()):
            return base
        if base.with_suffix(".py").exists():
            return base.with_suffix(".py")
    return None


def hidden_paths(names) -> list[str]:
    """What masking the modules among `names` hides: each module's source and its compiled bytecode, each
    package's whole folder."""
    found = set()
    for name in names:
        path = locate(name)
        if path is None:
            continue
        found.add(str(path))
        if path.is_file():
            cache = path.parent / "__pycache__"
            if cache.is_dir():
                found.update(str(p) for p in cache.glob(f"{path.stem}.*.pyc"))
    return sorted(found)


def modules_of(names) -> list[str]:
    return [name for name in names if locate(name) is not None]


# Names of an oracle's module that torch registers at its own import, so their placeholders must be of the
# kind torch checks (torch/_higher_order_ops registers these dispatch modes; it instantiates them only when
# selective activation checkpointing runs).
DISPATCH_MODES = frozenset({("torch.utils.checkpoint", "_CachedTorchDispatchMode"),
                            ("torch.utils.checkpoint", "_CachingTorchDispatchMode")})


def _placeholder(module: str, name: str, problem: str, graded: tuple[str, ...] = ()) -> type:
    text = message(f"{module}.{name}", problem, graded)

    def refuse(cls, *args, **kwargs):
        raise OracleAbsent(text)

    bases: tuple[type, ...] = ()
    if (module, name) in DISPATCH_MODES:
        from torch.utils._python_dispatch import TorchDispatchMode

        bases = (TorchDispatchMode,)
    return type(name, bases, {"__new__": refuse, "__module__": module, "__qualname__": name, "__doc__": text})


class AbsentModule(types.ModuleType):
    """A stub for a module of an oracle: every public name is a placeholder that raises `OracleAbsent`."""

    def __init__(self, name: str, problem: str, graded: tuple[str, ...] = ()):
        super().__init__(name, message(name, problem, graded))
        self.__path__ = []  # a package: its submodules are imported through the finder too
        self.__oracle_problem__ = problem, graded

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        value = _placeholder(self.__name__, name, *self.__oracle_problem__)
        setattr(self, name, value)
        return value


class AbsentFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """First on sys.meta_path: the modules of the problem's oracles, and their submodules, are stubs."""

    def __init__(self, modules: list[str], problem: str, graded: tuple[str, ...] = ()):
        self.modules, self.problem, self.graded = tuple(modules), problem, graded

    def find_spec(self, fullname, path=None, target=None):
        if any(fullname == m or fullname.startswith(m + ".") for m in self.modules):
            return importlib.machinery.ModuleSpec(fullname, self, origin="absent from the grading worker")
        return None

    def create_module(self, spec):
        return AbsentModule(spec.name, self.problem, self.graded)

    def exec_module(self, module):
        pass


def install(problems: list[str], oracles: dict[str, tuple[str, ...]]) -> list[str]:
    """Make the modules of the oracles of each of `problems` stubs in this process, before anything imports
    them (raises where one is already imported). Returns their names."""
    found = {problem: modules_of(oracles.get(problem, ())) for problem in problems}
    loaded = [m for modules in found.values() for m in modules if m in sys.modules]
    if loaded:
        raise RuntimeError(f"an oracle was imported before the worker could keep it out: {loaded}")
    for problem, modules in found.items():
        if modules:
            sys.meta_path.insert(0, AbsentFinder(modules, problem, tuple(problems)))
    return [m for modules in found.values() for m in modules]


def _hold_unreachably(library) -> None:
    """Keep `library`'s registrations for the life of the process, with no Python object left that can undo
    them. Held in a list, or by its finalizer (whose arguments hold the C++ handle), the code under test could
    find the Library through `gc` and `_destroy()` it, and the dispatcher would run torch's own kernel again.
    So the handle (a pybind object, which `gc` does not track) gets a reference that no container holds, and
    the finalizer and the Library's own reference to it are dropped."""
    import ctypes
    import weakref

    registry = weakref.finalize._registry  # type: ignore[attr-defined]  # CPython's, not in the stubs
    for finalizer in [f for f in list(registry) if (f.peek() or (None,))[0] is library]:
        finalizer.detach()
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(library.m))
    library.m = None


COMPILED = "torch._C."  # the compiled modules of torch's extension, whose functions `disable_functions` takes out


def disable_functions(problems: list[str], taken_out: dict[str, tuple[str, ...]]) -> list[str]:
    """After torch is imported: each compiled function that `taken_out` (grader/registry.py TAKEN_OUT) names for
    one of `problems`, of a module of torch's extension ("torch._C._autograd._enable_profiler"), is replaced by
    a placeholder that raises `OracleAbsent`, in its module and in every module that imported it by name, so that
    nothing holds the function any more (the garbage collector tracks no builtin that nothing references: `gc`
    cannot find it either), and a module imported later gets the placeholder. Returns the functions taken out;
    they go into REFUSED."""
    import torch  # noqa: F401

    done = []
    for problem, name in ((p, name) for p in problems for name in taken_out.get(p, ())):
        owner, _, attribute = name.rpartition(".")
        if not owner.startswith(COMPILED) or (module := sys.modules.get(owner)) is None:
            continue
        original = getattr(module, attribute, None)
        if original is None:
            continue
        placeholder = _placeholder(owner, attribute, problem, tuple(problems))
        for holder in list(sys.modules.values()):
            namespace = getattr(holder, "__dict__", {})
            for key in [key for key, value in list(namespace.items()) if value is original]:
                namespace[key] = placeholder
        del original
        done.append(name)
        REFUSED.add(name)
    return done


# The dispatch keys where a kernel of torch's namespace is replaced: every backend a grading machine has (CUDA on a
# GPU grader; registering it on a CPU-only build is allowed and changes nothing), its composite and meta kernels.
REFUSING_KEYS = ("CPU", "CUDA", "CompositeExplicitAutograd", "Meta")
REFUSED: set[str] = set()  # the kernels that disable_kernels made refuse on every key of REFUSING_KEYS


def disable_kernels(problems: list[str], oracles: dict[str, tuple[str, ...]]) -> list[str]:
    """After torch is imported: each compiled kernel among the oracles of `problems` ("torch._fused_adamw_") is
    replaced in torch's namespace by a placeholder, and in the dispatcher, on every key of REFUSING_KEYS where it
    has an overload, by one that raises `OracleAbsent` (so `torch.ops.aten.<name>` and the original function,
    wherever it is held, raise too). Returns the kernels disabled; those refused on every key go into REFUSED
    (the guard's tripwire need not watch for their calls, grader/harness/guard.py)."""
    import torch

    done = []
    for problem, name in ((p, name) for p in problems for name in oracles.get(p, ())):
        owner, _, attribute = name.rpartition(".")
        if owner != "torch" or locate(name) is not None or not hasattr(torch.ops.aten, attribute):
            continue
        text = message(name, problem, tuple(problems))

        def refuse(*args, text=text, **kwargs):
            raise OracleAbsent(text)

        library = torch.library.Library("aten", "IMPL")
        everywhere = True
        for key in REFUSING_KEYS:
            try:
                with warnings.catch_warnings():  # "overriding a previously registered kernel": the point
                    warnings.simplefilter("ignore")
                    library.impl(attribute, refuse, key)
            except RuntimeError:  # no such overload for this key
                everywhere = False
        _hold_unreachably(library)
        setattr(torch, attribute, _placeholder("torch", attribute, problem, tuple(problems)))
        done.append(name)
        if everywhere:
            REFUSED.add(name)
    return done
