"""Workloads for the FLOP counter, described as data, and the scenarios that count them.

Every workload runs on the meta device: shapes without storage, so nothing is allocated or computed and
FlopCounterMode (the oracle, run in the test process by tests/oracles.py) and the FlopCounter under test
(here, in the worker) see the same ops in the same order.
"""

from itertools import pairwise

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from assignment.given import TransformerConfig

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


class Block(nn.Module):
    """One layer of the transformer the counter's workloads run: `TransformerConfig`'s architecture (its
    docstring), except that each head is WIDER wider in its queries and keys and the MLP WIDER units wider. So
    measuring it answers none of the closed-form functions, which are graded on the config's own model,
    built in the test process alone (tests/oracles.py `ConfigTransformer`, WIDER = 0)."""

    WIDER = 1

    def __init__(self, c: TransformerConfig, device=None):
        super().__init__()
        d, qk, ff = c.d_model, c.d_head + self.WIDER, c.d_ff + self.WIDER
        self.c, self.qk = c, qk
        self.norm1, self.norm2 = nn.RMSNorm(d, device=device), nn.RMSNorm(d, device=device)
        self.wq = nn.Linear(d, c.n_heads * qk, bias=False, device=device)
        self.wk = nn.Linear(d, c.kv_heads * qk, bias=False, device=device)
        self.wv = nn.Linear(d, c.kv_heads * c.d_head, bias=False, device=device)
        self.wo = nn.Linear(d, d, bias=False, device=device)
        self.up = nn.Linear(d, ff, bias=False, device=device)
        self.gate = nn.Linear(d, ff, bias=False, device=device) if c.gated_mlp else None
        self.down = nn.Linear(ff, d, bias=False, device=device)

    def _heads(self, x: torch.Tensor, n: int, size: int) -> torch.Tensor:
        b, s, _ = x.shape
        x = x.view(b, s, n, size).transpose(1, 2)
        return x.repeat_interleave(self.c.n_heads // n, dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c, (b, s, d) = self.c, x.shape
        h = self.norm1(x)
        q = self._heads(self.wq(h), c.n_heads, self.qk)
        k, v = self._heads(self.wk(h), c.kv_heads, self.qk), self._heads(self.wv(h), c.kv_heads, c.d_head)
        with sdpa_kernel(SDPBackend.MATH):
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=c.d_head**-0.5)
        x = x + self.wo(a.transpose(1, 2).reshape(b, s, d))
        h = self.norm2(x)
        m = F.silu(self.gate(h)) * self.up(h) if self.gate is not None else F.gelu(self.up(h))
        return x + self.down(m)


class Transformer(nn.Module):
    block = Block

    def __init__(self, c: TransformerConfig, device=None):
        super().__init__()
        self.embed = nn.Embedding(c.vocab_size, c.d_model, device=device)
        self.blocks = nn.ModuleList(self.block(c, device) for _ in range(c.n_layers))
        self.norm = nn.RMSNorm(c.d_model, device=device)
        self.head = nn.Linear(c.d_model, c.vocab_size, bias=False, device=device)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def _transformer(spec: dict) -> torch.Tensor:
    model = Transformer(spec["config"], device=META)
    tokens = torch.zeros(spec["batch"], spec["seq"], dtype=torch.long, device=META)
    return model(tokens).sum()


_WORKLOADS = {"program": _program, "mlp": _mlp, "math_attention": _math_attention,
              "fused_attention": _fused_attention, "transformer": _transformer}


def run_workload(spec: dict) -> None:
    """Run the workload `spec` describes: its forward, and its backward if `spec["backward"]`."""
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
