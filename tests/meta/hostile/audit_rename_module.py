"""The oracle audits (issue 22): the oracle module loaded again under another name, with the import machinery
that stands in its way taken off `sys.meta_path`, and from its file by path. Taking the finder off gives
nothing: the file itself is masked or unreadable in the worker's view.
"""
import importlib.util as _util
import os as _os
import sys as _sys

import torch as _torch

_sys.meta_path[:] = [f for f in _sys.meta_path if "Absent" not in type(f).__name__]
for _name in [n for n in _sys.modules if n.endswith("flop_" + "counter")]:
    _sys.modules["ra_hostile_" + _name.replace(".", "_")] = _sys.modules.pop(_name)
_Oracle = None
for _load in (lambda: __import__("torch.utils." + "flop_counter", fromlist=["x"]),
              lambda: _util.module_from_spec(_util.spec_from_file_location(
                  "ra_hostile_counter", _os.path.join(_os.path.dirname(_torch.__file__), "utils", "flop_counter.py")))):
    try:
        _module = _load()
        if getattr(_module, "__spec__", None) and _module.__spec__.loader and not hasattr(_module, "FlopCounterMode"):
            _module.__spec__.loader.exec_module(_module)
        _Oracle = _module.FlopCounterMode
        _Oracle(display=False)
        break
    except Exception:
        _Oracle = None

if _Oracle is not None:
    class FlopCounter(_Oracle):  # noqa: F811 - the attack replaces the stub
        def __init__(self):
            super().__init__(display=False)

        @property
        def total(self):
            return self.get_total_flops()
