"""FLOP counting in the style of the dispatch-mode counters of PyTorch libraries: a table from aten ops to
functions of their argument shapes (`mm_flop`, `addmm_flop`, ...), `get_shape`, a `prod` helper, a
`defaultdict(int)` of counts keyed by `func._overloadpacket`, annotations of `List[Any]`; and the closed forms
the way nanoGPT writes its MFU (`flops_achieved = flops * (1.0 / dt)`). To this assignment's conventions: 2
FLOPs a multiply-add, the fused attention kernels counted. The libraries it is modelled on count MACs, or key
their counts by the op's overload: SLIPS.

Graded by tests/meta/test_honest.py."""

from collections import defaultdict
from numbers import Number
from typing import Any, List  # noqa: UP035 - the libraries' annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from assignment.given import TransformerConfig

aten = torch.ops.aten
FLOPS_PER_MAC = 2  # a multiply-add is two FLOPs

CASE = {"problem": "flops", "score": 14}
COUNTER = ("FlopCounter: MLPs", "FlopCounter: matmul programs", "FlopCounter: attention", "FlopCounter: transformers",
           "FlopCounter: starts from zero", "audit: FlopCounter without FlopCounterMode", "differential: FlopCounter")
SAYS = ("COUNTER",)
SLIPS = {
    "macs": ("FLOPS_PER_MAC = 2  # a multiply-add is two FLOPs", "FLOPS_PER_MAC = 1  # MACs", COUNTER),
    "keyed_by_overload": ("key = str(func._overloadpacket)", "key = str(func)", ("FlopCounter: matmul programs",)),
}


def get_shape(i):
    return i.shape if isinstance(i, torch.Tensor) else i


def prod(x) -> int:
    res = 1
    for i in x:
        res *= i
    return res


def mm_flop(inputs: List[Any]) -> Number:  # noqa: UP006
    """(m, k) @ (k, n)"""
    (m, k), (k2, n) = (get_shape(v) for v in inputs[:2])
    assert k == k2, (k, k2)
    return FLOPS_PER_MAC * m * k * n


def addmm_flop(inputs: List[Any]) -> Number:  # noqa: UP006
    return mm_flop(inputs[1:3])  # bias, mat1, mat2: the bias add is free


def bmm_flop(inputs: List[Any]) -> Number:  # noqa: UP006
    (b, m, k), (b2, k2, n) = (get_shape(v) for v in inputs[:2])
    assert b == b2 and k == k2
    return FLOPS_PER_MAC * b * m * k * n


def baddbmm_flop(inputs: List[Any]) -> Number:  # noqa: UP006
    return bmm_flop(inputs[1:3])


def sdpa_flop(inputs: List[Any]) -> Number:  # noqa: UP006
    """q (b, h, s_q, d_qk), k (b, h, s_k, d_qk), v (b, h, s_k, d_v): Q K^T, then P V."""
    (b, h, s_q, d_qk), (_, _, s_k, _), (_, _, _, d_v) = (get_shape(v) for v in inputs[:3])
    return FLOPS_PER_MAC * b * h * (s_q * d_qk * s_k + s_q * s_k * d_v)


def sdpa_backward_flop(inputs: List[Any]) -> Number:  # noqa: UP006
    """grad_out, q, k, v: the scores again, then the gradients of P, V, Q and K."""
    (b, h, s_q, d_qk), (_, _, s_k, _), (_, _, _, d_v) = (get_shape(v) for v in inputs[1:4])
    return FLOPS_PER_MAC * b * h * s_q * s_k * (3 * d_qk + 2 * d_v)


flop_mapping = {
    aten.mm: mm_flop,
    aten.addmm: addmm_flop,
    aten._scaled_mm: mm_flop,
    aten.bmm: bmm_flop,
    aten.baddbmm: baddbmm_flop,
    aten._scaled_dot_product_flash_attention: sdpa_flop,
    aten._scaled_dot_product_efficient_attention: sdpa_flop,
    aten._scaled_dot_product_cudnn_attention: sdpa_flop,
    aten._scaled_dot_product_flash_attention_backward: sdpa_backward_flop,
    aten._scaled_dot_product_efficient_attention_backward: sdpa_backward_flop,
    aten._scaled_dot_product_cudnn_attention_backward: sdpa_backward_flop,
}


class FlopCounter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.flop_counts = defaultdict(int)

    def __enter__(self):
        self.flop_counts = defaultdict(int)
        return super().__enter__()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func._overloadpacket in flop_mapping:
            key = str(func._overloadpacket)
            self.flop_counts[key] += int(flop_mapping[func._overloadpacket](list(args)))
        return out

    @property
    def by_op(self) -> dict:
        return {op: count for op, count in self.flop_counts.items() if count}

    @property
    def total(self) -> int:
        return sum(self.flop_counts.values())


def matmul_flops(b, d, k):
    return 2 * b * d * k


def linear_flops(tokens, d_in, d_out):
    return matmul_flops(tokens, d_in, d_out)


def _kv_width(config: TransformerConfig) -> int:
    d_head = config.d_model // config.n_heads
    return (config.n_kv_heads or config.n_heads) * d_head


def _matmul_params(config: TransformerConfig) -> int:
    """Weights every token multiplies by: attention's four, the MLP's two or three per layer, the LM head."""
    d = config.d_model
    attention = 2 * d * d + 2 * d * _kv_width(config)
    mlp = (3 if config.gated_mlp else 2) * d * config.d_ff
    return config.n_layers * (attention + mlp) + d * config.vocab_size


def attention_score_flops(config, batch, seq):
    d_head = config.d_model // config.n_heads
    return 4 * config.n_layers * batch * config.n_heads * seq * seq * d_head


def transformer_forward_flops(config, batch, seq):
    return 2 * batch * seq * _matmul_params(config) + attention_score_flops(config, batch, seq)


def training_step_flops(config, batch, seq):
    return 3 * transformer_forward_flops(config, batch, seq)


def mlp_training_flops(batch, dims):
    forward = sum(2 * batch * d_in * d_out for d_in, d_out in zip(dims, dims[1:]))  # noqa: B905
    first_input_grad = 2 * batch * dims[0] * dims[1]
    return 3 * forward - first_input_grad


def transformer_param_count(config):
    d = config.d_model
    norms = (2 * config.n_layers + 1) * d
    return _matmul_params(config) + config.vocab_size * d + norms


def approx_training_flops(params, tokens):
    return 6 * params * tokens


def attention_flops_fraction(config, seq):
    return attention_score_flops(config, 1, seq) / transformer_forward_flops(config, 1, seq)


def mfu(flops, seconds, peak_flops_per_sec):
    flops_achieved = flops * (1.0 / seconds)  # per second
    return flops_achieved / peak_flops_per_sec


def training_days(params, tokens, n_gpus, peak_flops_per_sec, mfu):
    flops_per_sec = n_gpus * peak_flops_per_sec * mfu
    return approx_training_flops(params, tokens) / flops_per_sec / 86400


__all__ = ["TransformerConfig", "matmul_flops", "linear_flops", "FlopCounter", "attention_score_flops",
           "transformer_forward_flops", "training_step_flops", "mlp_training_flops", "transformer_param_count",
           "approx_training_flops", "attention_flops_fraction", "training_days", "mfu"]
