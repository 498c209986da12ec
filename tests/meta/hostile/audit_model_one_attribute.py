"""A model the grading builds, one attribute from the one the closed forms are graded on (issue 53): the worker's
transformer for the FlopCounter's workloads was the config's model one unit wider (`WIDER = 1`); a subclass with
`WIDER = 0` was the config's model again, measured on the meta device with a few lines of dispatch mode: 4.25
points of closed forms, no formula. Now no model is within the worker's reach: the counter's transformer workload
arrives as the ATen ops the test process recorded of one (tests/oracles.py `workload`, tests/scenarios/flops.py
`_trace`), and the models live in tests/oracles.py, outside the worker's tree. This attack looks for any module
class of the suite the worker holds, through sys.modules and the garbage collector, and finds none.
"""
import gc as _gc
import sys as _sys

import torch as _torch
from torch.utils._python_dispatch import TorchDispatchMode as _Mode

_aten = _torch.ops.aten


class _Matmuls(_Mode):
    def __init__(self):
        super().__init__()
        self.total = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in (_aten.mm.default, _aten.bmm.default):
            a, b = args[0], args[1]
            self.total += 2 * (a.shape[0] if a.dim() == 3 else 1) * a.shape[-2] * a.shape[-1] * b.shape[-1]
        return func(*args, **(kwargs or {}))


def _their_models():
    """Every nn.Module class of the suite within reach: the scenarios' modules, and what the collector holds."""
    found = []
    for name, module in list(_sys.modules.items()):
        if name.startswith("tests"):
            found += [v for v in vars(module).values() if isinstance(v, type) and issubclass(v, _torch.nn.Module)]
    found += [o for o in _gc.get_objects() if isinstance(o, type) and issubclass(o, _torch.nn.Module)
              and getattr(o, "__module__", "").startswith("tests")]
    return found


def _measured(config, batch, seq):
    for cls in _their_models():
        for attribute in ("WIDER", "wider", "EXTRA"):
            if hasattr(cls, attribute) or any(hasattr(b, attribute) for b in getattr(cls, "block", type).__mro__):
                narrower = type("Narrower", (cls,), {attribute: 0})
                model = narrower(config, device="meta")
                with _Matmuls() as measure:
                    model(_torch.zeros(batch, seq, dtype=_torch.long, device="meta")).sum()
                return measure.total
    raise NotImplementedError("no model of the tests within reach")


def transformer_forward_flops(config, batch, seq):  # noqa: F811 - the attack replaces the stub
    return _measured(config, batch, seq)
