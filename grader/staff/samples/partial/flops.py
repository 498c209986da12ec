"""A sample submission for `flops`, partly right and partly wrong, to show what grading looks like.

Right: matmul_flops, linear_flops, transformer_param_count, approx_training_flops, training_days, mfu.
Wrong on purpose: the counter ignores bmm; the forward count drops the attention scores; backward is
counted as 1x forward; every Linear layer is charged an input gradient. Not done: attention_flops_fraction.
"""

from itertools import pairwise

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from assignment.given import TransformerConfig

aten = torch.ops.aten


def matmul_flops(b: int, d: int, k: int) -> int:
    return 2 * b * d * k


def linear_flops(tokens: int, d_in: int, d_out: int) -> int:
    return matmul_flops(tokens, d_in, d_out)


class FlopCounter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.total, self.by_op = 0, {}

    def __enter__(self):
        self.total, self.by_op = 0, {}
        return super().__enter__()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func.overloadpacket in (aten.mm, aten.addmm):
            a, b = args[-2], args[-1]
            flops = matmul_flops(a.shape[0], a.shape[1], b.shape[1])
            name = str(func.overloadpacket)
            self.by_op[name] = self.by_op.get(name, 0) + flops
            self.total += flops
        return out


def attention_score_flops(config: TransformerConfig, batch: int, seq: int) -> int:
    return 4 * config.n_layers * batch * config.n_heads * seq * seq * config.d_head


def transformer_forward_flops(config: TransformerConfig, batch: int, seq: int) -> int:
    d, kv = config.d_model, config.kv_heads * config.d_head
    per_token = config.n_layers * (2 * d * d + 2 * d * kv + (3 if config.gated_mlp else 2) * d * config.d_ff)
    return 2 * batch * seq * (per_token + d * config.vocab_size)


def training_step_flops(config: TransformerConfig, batch: int, seq: int) -> int:
    return 2 * transformer_forward_flops(config, batch, seq)


def mlp_training_flops(batch: int, dims: list[int]) -> int:
    return sum(3 * linear_flops(batch, a, b) for a, b in pairwise(dims))


def transformer_param_count(config: TransformerConfig) -> int:
    d, kv = config.d_model, config.kv_heads * config.d_head
    per_layer = 2 * d * d + 2 * d * kv + (3 if config.gated_mlp else 2) * d * config.d_ff + 2 * d
    return 2 * config.vocab_size * d + config.n_layers * per_layer + d


def approx_training_flops(params: int | float, tokens: int | float) -> int | float:
    return 6 * params * tokens


def attention_flops_fraction(config: TransformerConfig, seq: int) -> float:
    raise NotImplementedError("attention_flops_fraction")


def training_days(params: int | float, tokens: int | float, n_gpus: int, peak_flops_per_sec: int | float,
                  mfu: int | float) -> float:
    return 6 * params * tokens / (n_gpus * peak_flops_per_sec * mfu) / 86400


def mfu(flops: int | float, seconds: int | float, peak_flops_per_sec: int | float) -> float:
    return flops / seconds / peak_flops_per_sec
