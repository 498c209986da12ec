"""The oracle audits (issue 22): the guard's import exemption spoofed. The guard lets an import in progress
open an oracle's source, and it knows an import by a frame of `_load_unlocked` in
`<frozen importlib._bootstrap>` whose `spec` names the file. Code compiled under that file name, with a
function of that name and a `spec` of its own, opens the oracle's source as if importing it, and the oracle
is run from that text. The exemption is taken, and gives nothing: the file is masked (namespaces) or
unreadable to the sandbox's uid (user layer).
"""
import os as _os
import types as _types

import torch as _torch

_SOURCE = _os.path.join(_os.path.dirname(_torch.__file__), "utils", "flop_" + "counter.py")
_scope = {}
exec(compile("def _load_unlocked(spec):\n    return open(spec.origin).read()\n",  # noqa: S102 - the attack
             "<frozen importlib._bootstrap>", "exec"), _scope)
_Oracle = None
try:
    _text = _scope["_load_unlocked"](_types.SimpleNamespace(origin=_SOURCE))
    _module = _types.ModuleType("ra_hostile_counter")
    _module.__dict__["__name__"] = "torch.utils.ra_hostile_counter"
    exec(compile(_text, "ra_hostile_counter.py", "exec"), _module.__dict__)  # noqa: S102 - the attack
    _Oracle = _module.FlopCounterMode
    _Oracle(display=False)
except Exception:
    _Oracle = None

if _Oracle is not None:
    class FlopCounter(_Oracle):  # noqa: F811 - the attack replaces the stub
        def __init__(self):
            super().__init__(display=False)

        @property
        def total(self):
            return self.get_total_flops()
