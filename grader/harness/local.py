"""The package under test, imported into this process."""

import importlib
import types

from grader.registry import PROBLEM_MODULES


class LocalPackage:
    """`pkg.flops` is the module `<name>.flops`; `pkg.run(scenario, ...)` calls `scenario(pkg, ...)`.

    `overrides` maps "module.attribute" to a replacement (a mistake swapped in for the reference's
    function). The module itself is never modified: an overridden module is a copy, so other users of the
    real module (the reference fixture) still see the original.
    """

    def __init__(self, name: str, overrides: dict[str, object] | None = None, on_import=None):
        self.name = name
        self._on_import = on_import
        self.isolated = False
        self.writable = None  # anywhere: the code under test runs as this process
        self._overrides = overrides or {}
        self._modules: dict[str, types.ModuleType] = {}

    def __getattr__(self, module: str) -> types.ModuleType:
        if module not in PROBLEM_MODULES:
            raise AttributeError(f"{self.name} has no problem module {module!r}")
        if module not in self._modules:
            if self._on_import:
                self._on_import(module, "start")
            self._modules[module] = self._load(module)
            if self._on_import:
                self._on_import(module, "done")
        return self._modules[module]

    def _load(self, module: str) -> types.ModuleType:
        real = importlib.import_module(f"{self.name}.{module}")
        mine = {k.split(".", 1)[1]: v for k, v in self._overrides.items() if k.split(".", 1)[0] == module}
        if not mine:
            return real
        copy = types.ModuleType(real.__name__, real.__doc__)
        copy.__dict__.update(real.__dict__)
        for attribute, value in mine.items():
            if not hasattr(real, attribute):
                raise AttributeError(f"{real.__name__} has no attribute {attribute!r} to override")
            setattr(copy, attribute, value)
        return copy

    def __repr__(self) -> str:
        return f"<package under test: {self.name} (in-process)>"

    def run(self, scenario, *args, **kwargs):
        return scenario(self, *args, **kwargs)

    def close(self) -> None:
        pass
