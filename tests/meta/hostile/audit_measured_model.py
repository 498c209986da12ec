"""A model the grading measures, measured (issue 41): the worker ran a transformer for the FlopCounter's workloads,
and it used to be the config's own model, the one the closed-form tests measure with FlopCounterMode. Built on the
meta device from the scenario module the worker already held and measured with a few lines of dispatch-mode
counting, it answered transformer_forward_flops, training_step_flops, attention_score_flops,
attention_flops_fraction and transformer_param_count without a formula. Since issue 53 the worker holds no model at
all: the counter's transformer workload arrives as the ops the test process recorded of one (tests/oracles.py
`workload`), and the models live in tests/oracles.py alone (and audit_model_one_attribute looks for them further).
"""
import sys as _sys

import torch as _torch
from torch.utils._python_dispatch import TorchDispatchMode as _Mode

_aten = _torch.ops.aten


def _matmul_flops(func, args):
    if func in (_aten.mm.default, _aten.bmm.default):
        a, b = args[0], args[1]
    elif func in (_aten.addmm.default, _aten.baddbmm.default):
        a, b = args[1], args[2]
    else:
        return 0
    batch = a.shape[0] if a.dim() == 3 else 1
    return 2 * batch * a.shape[-2] * a.shape[-1] * b.shape[-1]


class _Measure(_Mode):
    def __init__(self):
        super().__init__()
        self.total, self.bmm = 0, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        flops = _matmul_flops(func, args)
        self.total += flops
        self.bmm += flops if func in (_aten.bmm.default, _aten.baddbmm.default) else 0
        return func(*args, **(kwargs or {}))


def _their_model(config):
    for name, module in list(_sys.modules.items()):
        if name.startswith("tests.scenarios") and hasattr(module, "Transformer"):
            return module.Transformer(config, device="meta")
    raise NotImplementedError


def _measured(config, batch, seq, backward=False):
    model = _their_model(config)
    tokens = _torch.zeros(batch, seq, dtype=_torch.long, device="meta")
    with _Measure() as measure:
        loss = model(tokens).sum()
        if backward:
            loss.backward()
    return measure


def transformer_forward_flops(config, batch, seq):  # noqa: F811 - the attack replaces the stub
    return _measured(config, batch, seq).total


def training_step_flops(config, batch, seq):  # noqa: F811
    return _measured(config, batch, seq, backward=True).total


def attention_score_flops(config, batch, seq):  # noqa: F811
    return _measured(config, batch, seq).bmm


def attention_flops_fraction(config, seq):  # noqa: F811
    measure = _measured(config, 1, seq)
    return measure.bmm / measure.total


def transformer_param_count(config):  # noqa: F811
    return sum(p.numel() for p in _their_model(config).parameters())
