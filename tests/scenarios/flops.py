"""Workloads for the FLOP counter, described as data, and the scenarios that count them.

Every workload runs on the meta device: shapes without storage, so nothing is allocated or computed and
FlopCounterMode (the oracle, run in the test process by tests/oracles.py) and the FlopCounter under test
(here, in the worker) see the same ops in the same order. No model is here: a transformer's workload arrives as
the ops the test process recorded of one (kind "trace"), so that nothing in the worker can be measured for the
closed-form functions, nor made into the model they are graded on.
"""

from itertools import pairwise

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

aten = torch.ops.aten
META = torch.device("meta")


def _t(*shape, grad: bool = True) -> torch.Tensor:
    return torch.empty(*shape, device=META, requires_grad=grad)


def _program(spec: dict) -> torch.Tensor:
    outputs = []
    for op, *sizes in spec["ops"]:
        if op == "mm":
            m, k, n = sizes
            outputs.append(torch.mm(_t(m, k), _t(k, n)))
        elif op == "addmm":
            m, k, n = sizes
            outputs.append(torch.addmm(_t(n), _t(m, k), _t(k, n)))
        elif op == "bmm":
            b, m, k, n = sizes
            outputs.append(torch.bmm(_t(b, m, k), _t(b, k, n)))
        elif op == "baddbmm":
            b, m, k, n = sizes
            outputs.append(torch.baddbmm(_t(b, m, n), _t(b, m, k), _t(b, k, n)))
        elif op == "einsum":
            b, m, k, n = sizes
            outputs.append(torch.einsum("bmk,bkn->bmn", _t(b, m, k), _t(b, k, n)))
        elif op == "matmul4d":
            a, b, m, k, n = sizes
            outputs.append(_t(a, b, m, k) @ _t(a, b, k, n))
        else:
            raise ValueError(f"unknown op {op!r}")
    return sum(o.sum() for o in outputs)


def _mlp(spec: dict) -> torch.Tensor:
    dims = spec["dims"]
    layers = []
    for i, (d_in, d_out) in enumerate(pairwise(dims)):
        if i:
            layers.append(nn.ReLU())
        layers.append(nn.Linear(d_in, d_out, bias=spec["bias"], device=META))
    leading = [spec["batch"]] + ([spec["extra_dim"]] if spec.get("extra_dim") else [])
    x = _t(*leading, dims[0], grad=spec.get("input_grad", False))
    return nn.Sequential(*layers)(x).sum()


def _qkv(spec: dict) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    b, h, s_q, s_k = spec["batch"], spec["heads"], spec["s_q"], spec["s_k"]
    return _t(b, h, s_q, spec["d_qk"]), _t(b, h, s_k, spec["d_qk"]), _t(b, h, s_k, spec["d_v"])


def _math_attention(spec: dict) -> torch.Tensor:
    q, k, v = _qkv(spec)
    with sdpa_kernel(SDPBackend.MATH):
        return F.scaled_dot_product_attention(q, k, v, is_causal=spec.get("causal", False)).sum()


_FUSED = {
    "efficient": lambda q, k, v: aten._scaled_dot_product_efficient_attention(q, k, v, None, True)[0],
    "flash": lambda q, k, v: aten._scaled_dot_product_flash_attention(q, k, v)[0],
    "cudnn": lambda q, k, v: aten._scaled_dot_product_cudnn_attention(q, k, v, None, True)[0],
}


def _fused_attention(spec: dict) -> torch.Tensor:
    q, k, v = _qkv(spec)
    return _FUSED[spec["variant"]](q, k, v).sum()


def _tensor(shape: list, stride: list, dtype: str, offset: int) -> torch.Tensor:
    size = offset + sum((n - 1) * st for n, st in zip(shape, stride, strict=True)) + 1 if all(shape) else 0
    return torch.empty(size, dtype=getattr(torch, dtype), device=META).as_strided(shape, stride, offset)


def _decoded(value):
    """An argument of a recorded op, as the test process encoded it (tests/oracles.py `encoded`)."""
    if isinstance(value, list):
        return [_decoded(v) for v in value]
    if isinstance(value, dict):
        if "tensor" in value:
            return _tensor(*value["tensor"])
        if "torch" in value:  # a dtype, a layout, a memory format
            return getattr(torch, value["torch"])
        if "device" in value:
            return torch.device(value["device"])
        return {k: _decoded(v) for k, v in value.items()}
    return value


def _trace(spec: dict) -> None:
    """A recorded run replayed: each ATen op of it, called on meta tensors of the shapes and strides it saw. So the
    counter sees the ops of a model without the worker holding the model: a transformer's workload is recorded in
    the test process (tests/oracles.py `workload`), and nothing of a model is within the worker's reach."""
    for namespace, name, overload, args, kwargs in spec["ops"]:
        op = getattr(getattr(getattr(torch.ops, namespace), name), overload)
        op(*_decoded(args), **{k: _decoded(v) for k, v in kwargs.items()})


_WORKLOADS = {"program": _program, "mlp": _mlp, "math_attention": _math_attention,
              "fused_attention": _fused_attention}


def run_workload(spec: dict) -> None:
    """Run the workload `spec` describes: its forward, and its backward if `spec["backward"]` (a recorded run, kind
    "trace", is replayed as it was recorded, its backward included)."""
    if spec["kind"] == "trace":
        return _trace(spec)
    loss = _WORKLOADS[spec["kind"]](spec)
    if spec.get("backward"):
        loss.backward()


def count(pkg, spec: dict) -> dict:
    """Scenario: the FlopCounter under test around the workload."""
    with pkg.flops.FlopCounter() as counter:
        run_workload(spec)
    return {"total": counter.total, "by_op": dict(counter.by_op)}


def count_each(pkg, specs: list) -> list:
    """Scenario: a fresh FlopCounter around each workload (resource-grader compare: one of each kind)."""
    return [count(pkg, spec) for spec in specs]


def count_twice(pkg, first: dict, second: dict) -> dict:
    """Scenario: one FlopCounter entered twice, and what it holds after the second use ("reused"); a fresh one
    around the second workload alone ("fresh")."""
    counter = pkg.flops.FlopCounter()
    with counter:
        run_workload(first)
    with counter:
        run_workload(second)
    return {"reused": {"total": counter.total, "by_op": dict(counter.by_op)}, "fresh": count(pkg, second)}


class _Forbidden:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("FlopCounterMode is the oracle: the solution may not use it")


def count_without_oracle(pkg, spec: dict) -> dict:
    """Scenario for the audit: `count` while torch.utils.flop_counter's public API is unusable (in-process;
    in the grading worker the module is only a stub, grader/harness/absent.py, and this is `count`)."""
    import torch.utils.flop_counter as oracle

    saved = oracle.FlopCounterMode, oracle.flop_registry
    oracle.FlopCounterMode, oracle.flop_registry = _Forbidden, {}
    try:
        return count(pkg, spec)
    finally:
        oracle.FlopCounterMode, oracle.flop_registry = saved
