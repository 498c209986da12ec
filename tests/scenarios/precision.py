"""Scenarios for problem precision: what must run beside the code under test (a model, an optimizer, a
gradient scaler, a dispatch-mode spy), described as data. The oracle, the same steps in plain float32, runs
in the test process on the same model and batches (tests/oracles.py `fp32_steps`)."""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from tests.scenarios.escapes import ops_outside_mode, record_ops

aten = torch.ops.aten
MATMULS = (aten.mm, aten.addmm, aten.bmm, aten.baddbmm)


class DtypeSpy(TorchDispatchMode):
    """Records the dtypes of every op's tensor inputs and outputs; for the matmul family, one entry per call."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()
        self.matmuls: list[list[str]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        tensors = [t for t in (*args, *(kwargs or {}).values()) if isinstance(t, torch.Tensor)]
        outs = out if isinstance(out, (tuple, list)) else (out,)
        tensors += [t for t in outs if isinstance(t, torch.Tensor)]
        self.seen.update(str(t.dtype).removeprefix("torch.") for t in tensors)
        if func.overloadpacket in MATMULS:
            self.matmuls.append([str(func.overloadpacket)] + [str(t.dtype).removeprefix("torch.") for t in tensors])
        return out


def watched_round_to_bf16(pkg, x: torch.Tensor, _record=record_ops, _outside=ops_outside_mode) -> dict:
    """Scenario for the audit: round_to_bf16 under the spy; its result, every dtype its ops touched, and the
    ops that ran with the spy stepped around (tests/scenarios/escapes.py)."""
    spy = DtypeSpy()
    _record()
    try:
        with spy:
            result = pkg.precision.round_to_bf16(x)
    finally:
        outside = _outside()
    return {"result": result, "dtypes": sorted(spy.seen), "outside": outside}


# -- mixed precision ------------------------------------------------------------------------------------
# A spec: {"seed": int, "sizes": [d_in, hidden, d_out], "batch": int, "steps": int, "dtype": "bfloat16" |
# "float16", "init_scale": None (no scaler) | float, "lr": float, "loss_scale": float (multiplies the loss;
# tiny to make fp16 gradients underflow, huge to make them overflow)}

def build(spec: dict) -> tuple[nn.Module, list[tuple[torch.Tensor, torch.Tensor]]]:
    """The float32 model of the spec and its batches, the same in every process (seeded)."""
    generator = torch.Generator().manual_seed(spec["seed"])
    d_in, hidden, d_out = spec["sizes"]
    model = nn.Sequential(nn.Linear(d_in, hidden), nn.Tanh(), nn.Linear(hidden, d_out))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) / p.shape[-1] ** 0.5)
    batches = [(torch.randn(spec["batch"], d_in, generator=generator),
                torch.randn(spec["batch"], d_out, generator=generator)) for _ in range(spec["steps"])]
    return model, batches


def loss_fn_of(spec: dict):
    scale = spec.get("loss_scale", 1.0)
    return lambda outputs, targets: F.mse_loss(outputs.float(), targets) * scale


def optimizer_of(model: nn.Module, spec: dict) -> torch.optim.Optimizer:
    return torch.optim.SGD(model.parameters(), lr=spec["lr"], momentum=0.9)


def mixed_steps(pkg, spec: dict) -> dict:
    """Scenario: `spec["steps"]` calls of mixed_precision_step under the spy. Returns the losses, the
    parameters and their dtypes, the gradients' and the optimizer state's dtypes, the dtypes of every
    matmul, and the scaler's scale."""
    model, batches = build(spec)
    optimizer = optimizer_of(model, spec)
    scaler = torch.amp.GradScaler("cpu", init_scale=spec["init_scale"]) if spec.get("init_scale") else None
    dtype, loss_fn = getattr(torch, spec["dtype"]), loss_fn_of(spec)
    spy, losses = DtypeSpy(), []
    with spy:
        for inputs, targets in batches:
            losses.append(pkg.precision.mixed_precision_step(model, optimizer, loss_fn, inputs, targets, dtype,
                                                             scaler))
    params = [p.detach().clone() for p in model.parameters()]
    return {
        "losses": losses,
        "params": params,
        "grad_dtypes": [None if p.grad is None else p.grad.dtype for p in model.parameters()],
        "state_dtypes": [t.dtype for s in optimizer.state.values() for t in s.values() if isinstance(t, torch.Tensor)],
        "matmuls": spy.matmuls,
        "scale": scaler.get_scale() if scaler is not None else None,
    }
