"""Problem (flops): counting compute. Reference solution; the spec is in assignment/flops.py."""

from itertools import pairwise

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from assignment.given import TransformerConfig

aten = torch.ops.aten


def matmul_flops(b: int, d: int, k: int) -> int:
    return 2 * b * d * k


def linear_flops(tokens: int, d_in: int, d_out: int) -> int:
    return matmul_flops(tokens, d_in, d_out)


def _mm(a: torch.Tensor, b: torch.Tensor) -> int:
    return matmul_flops(a.shape[0], a.shape[1], b.shape[1])


def _bmm(a: torch.Tensor, b: torch.Tensor) -> int:
    return a.shape[0] * matmul_flops(a.shape[1], a.shape[2], b.shape[2])


def _sdpa_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> int:
    batch, heads, s_q, d_qk = q.shape
    s_k, d_v = k.shape[2], v.shape[3]
    return batch * heads * (matmul_flops(s_q, d_qk, s_k) + matmul_flops(s_q, s_k, d_v))


def _sdpa_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> int:
    # Recompute the scores (d_qk), grad of the scores and of V (d_v each), grads of Q and K (d_qk each).
    batch, heads, s_q, d_qk = q.shape
    s_k, d_v = k.shape[2], v.shape[3]
    return batch * heads * matmul_flops(s_q, s_k, 3 * d_qk + 2 * d_v)


# op -> FLOPs from its positional arguments
_FORMULAS = {
    aten.mm: lambda a, b, *_: _mm(a, b),
    aten.addmm: lambda _bias, a, b, *_: _mm(a, b),
    aten._scaled_mm: lambda a, b, *_: _mm(a, b),
    aten.bmm: lambda a, b, *_: _bmm(a, b),
    aten.baddbmm: lambda _bias, a, b, *_: _bmm(a, b),
}
for _name in ("flash", "efficient", "cudnn"):
    _FORMULAS[getattr(aten, f"_scaled_dot_product_{_name}_attention")] = lambda q, k, v, *_: _sdpa_forward(q, k, v)
    _FORMULAS[getattr(aten, f"_scaled_dot_product_{_name}_attention_backward")] = (
        lambda _grad_out, q, k, v, *_: _sdpa_backward(q, k, v)
    )


class FlopCounter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.total = 0
        self.by_op: dict[str, int] = {}

    def __enter__(self):
        self.total = 0
        self.by_op = {}
        return super().__enter__()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        formula = _FORMULAS.get(func.overloadpacket)
        if formula is not None:
            flops = formula(*args)
            name = str(func.overloadpacket)
            self.by_op[name] = self.by_op.get(name, 0) + flops
            self.total += flops
        return out


def _layer_weight_flops_per_token(config: TransformerConfig) -> int:
    d, kv = config.d_model, config.kv_heads * config.d_head
    mlp_matrices = 3 if config.gated_mlp else 2
    return linear_flops(1, d, d) * 2 + linear_flops(1, d, kv) * 2 + linear_flops(1, d, config.d_ff) * mlp_matrices


def attention_score_flops(config: TransformerConfig, batch: int, seq: int) -> int:
    per_head = matmul_flops(seq, config.d_head, seq) * 2  # Q K^T, then (scores) V
    return config.n_layers * batch * config.n_heads * per_head


def transformer_forward_flops(config: TransformerConfig, batch: int, seq: int) -> int:
    tokens = batch * seq
    head = linear_flops(1, config.d_model, config.vocab_size)
    weights = config.n_layers * _layer_weight_flops_per_token(config) + head
    return tokens * weights + attention_score_flops(config, batch, seq)


def training_step_flops(config: TransformerConfig, batch: int, seq: int) -> int:
    return 3 * transformer_forward_flops(config, batch, seq)


def mlp_training_flops(batch: int, dims: list[int]) -> int:
    total = 0
    for i, (d_in, d_out) in enumerate(pairwise(dims)):
        passes = 2 if i == 0 else 3  # forward + weight grad (+ input grad, needed from layer 1 on)
        total += passes * linear_flops(batch, d_in, d_out)
    return total


def transformer_param_count(config: TransformerConfig) -> int:
    d, kv = config.d_model, config.kv_heads * config.d_head
    mlp_matrices = 3 if config.gated_mlp else 2
    per_layer = 2 * d * d + 2 * d * kv + mlp_matrices * d * config.d_ff + 2 * d
    return 2 * config.vocab_size * d + config.n_layers * per_layer + d


def approx_training_flops(params: int | float, tokens: int | float) -> int | float:
    return 6 * params * tokens


def attention_flops_fraction(config: TransformerConfig, seq: int) -> float:
    return attention_score_flops(config, 1, seq) / transformer_forward_flops(config, 1, seq)


def training_days(params: int | float, tokens: int | float, n_gpus: int, peak_flops_per_sec: int | float,
                  mfu: int | float) -> float:
    seconds = 6 * params * tokens / (n_gpus * peak_flops_per_sec * mfu)
    return seconds / 86400


def mfu(flops: int | float, seconds: int | float, peak_flops_per_sec: int | float) -> float:
    return flops / seconds / peak_flops_per_sec


__all__ = [
    "TransformerConfig",
    "matmul_flops",
    "linear_flops",
    "FlopCounter",
    "attention_score_flops",
    "transformer_forward_flops",
    "training_step_flops",
    "mlp_training_flops",
    "transformer_param_count",
    "approx_training_flops",
    "attention_flops_fraction",
    "training_days",
    "mfu",
]
