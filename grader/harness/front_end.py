"""torch's compiler front end (torch._dynamo), loaded only when something needs more of it than eager code does.

Eager torch asks torch._dynamo for three things: `disable(fn)` (torch._disable_dynamo, around every optimizer's
constructor, step and zero_grad, and torch.utils.checkpoint), `graph_break()` (every optimizer's step) and
`config` (torch.utils.checkpoint reads a flag). Outside torch.compile none of them changes what runs, yet the
first of them imports the whole front end, sympy and torch.distributed with it: about 1.2 s of CPU and 70 MiB in
each process that builds an optimizer (the test process, and the workers of four problems).

`install()` puts a stand-in in its place, in this process: `disable` and `graph_break` call straight through,
`config` is the front end's own config module, loaded alone, and the registrations torch makes at import
(`allow_in_graph`, `disallow_in_graph`) are kept. Any other name, and any submodule, loads the real front end in
place of the stand-in (the registrations kept are made there) and is answered from it; a function disabled before
calls into it from then on, so that what torch.compile traces later is what it would have been. What eager code
computes is the same either way (tests/meta/test_front_end.py).
"""

import importlib
import importlib.abc
import importlib.util
import os
import sys
import types

NAME = "torch._dynamo"
_REGISTRATIONS = ("allow_in_graph", "disallow_in_graph")


class StandIn(types.ModuleType):
    """What `import torch._dynamo` gives until something needs the real front end (`real()`)."""

    def __init__(self, search_locations: list[str]):
        super().__init__(NAME, __doc__)
        self.__path__ = search_locations  # where its submodules are found: asking for one loads the real one
        self.__registered = []

    def disable(self, fn=None, recursive=True, *, reason=None, wrapping=True):
        if fn is None:
            return lambda f: self.disable(f, recursive, reason=reason, wrapping=wrapping)

        def disabled(*args, **kwargs):
            front_end = _loaded()
            if front_end is None:
                return fn(*args, **kwargs)
            return front_end.disable(fn, recursive, reason=reason, wrapping=False)(*args, **kwargs)

        return disabled

    def graph_break(self, msg=""):
        front_end = _loaded()
        if front_end is not None:
            front_end.graph_break(msg)

    def __getattr__(self, name):
        if name in _REGISTRATIONS:
            return lambda fn: self.__register(name, fn)
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(real(), name)

    def __register(self, how: str, fn):
        self.__registered.append((how, fn))
        return fn

    def replay(self, front_end: types.ModuleType) -> None:
        """Make in the real front end the registrations kept."""
        for how, fn in self.__registered:
            getattr(front_end, how)(fn)


def _loaded() -> types.ModuleType | None:
    """The real front end where it is imported, else None."""
    front_end = sys.modules.get(NAME)
    return None if isinstance(front_end, StandIn) else front_end


class _Loader(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """First on sys.meta_path while the stand-in is in place: a submodule of the front end loads it first."""

    def find_spec(self, fullname, path=None, target=None):
        if not (fullname.startswith(NAME + ".") and isinstance(sys.modules.get(NAME), StandIn)):
            return None
        real()
        if fullname in sys.modules:  # the real package imported it: answer with that module, not a second copy
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return sys.modules[spec.name]

    def exec_module(self, module):
        pass


def install() -> None:
    """The stand-in, unless the front end is already imported (or the stand-in installed)."""
    import torch

    if NAME in sys.modules:
        return
    spec = importlib.util.find_spec(NAME)
    stand_in = StandIn(list(spec.submodule_search_locations))
    config_spec = importlib.util.spec_from_file_location(
        f"{NAME}.config", os.path.join(spec.submodule_search_locations[0], "config.py"))
    config = importlib.util.module_from_spec(config_spec)
    sys.modules[config_spec.name] = config  # the real package finds it there, and uses this one
    config_spec.loader.exec_module(config)
    stand_in.config = config
    sys.modules[NAME] = stand_in
    torch._dynamo = stand_in
    sys.meta_path.insert(0, _Loader())


def real() -> types.ModuleType:
    """The real front end, imported in place of the stand-in if it is not yet."""
    stand_in = sys.modules.get(NAME)
    if not isinstance(stand_in, StandIn):
        return importlib.import_module(NAME)
    del sys.modules[NAME]
    import torch

    front_end = importlib.import_module(NAME)
    torch._dynamo = front_end
    stand_in.replay(front_end)
    return front_end
