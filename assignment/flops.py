"""Problem (flops): counting compute. See handout.md, "Problem (flops)".

Conventions (the field disagrees on them; this course uses these):
- A multiply-add is 2 FLOPs: (b x d) @ (d x k) costs 2*b*d*k. Not b*k*(2d-1), not MACs (b*d*k).
- What is counted is what `torch.utils.flop_counter.FlopCounterMode` counts: the matmul family and
  fused attention. Bias adds, element-wise ops, softmax, norms and embedding lookups cost 0.
- Every count is an exact `int`; times and ratios are `float`.

Do not use `FlopCounterMode` (or anything else from `torch.utils.flop_counter`) in this file: it is
the oracle the tests compare you against, and the grader checks.
"""

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from assignment.given import TransformerConfig

aten = torch.ops.aten


def matmul_flops(b: int, d: int, k: int) -> int:
    """FLOPs of one (b x d) @ (d x k) matrix product: one multiply and one add per term, 2*b*d*k."""
    raise NotImplementedError("matmul_flops")


def linear_flops(tokens: int, d_in: int, d_out: int) -> int:
    """FLOPs of a Linear layer d_in -> d_out applied to `tokens` rows (forward only; the bias is free)."""
    raise NotImplementedError("linear_flops")


class FlopCounter(TorchDispatchMode):
    """Context manager that counts the FLOPs of every op run inside it, forward and backward.

    Counted, with the conventions above (shapes from the op's tensor arguments):
    - `aten.mm(a, b)`, `aten.addmm(bias, a, b)`, `aten._scaled_mm(a, b, ...)`: 2*m*k*n for a: (m, k),
      b: (k, n).
    - `aten.bmm(a, b)`, `aten.baddbmm(bias, a, b)`: batch * 2*m*k*n for a: (batch, m, k).
    - fused attention, `aten._scaled_dot_product_{flash,efficient,cudnn}_attention(q, k, v, ...)` with
      q: (batch, heads, s_q, d_qk), k: (batch, heads, s_k, d_qk), v: (batch, heads, s_k, d_v): the two
      products Q K^T and P V, batch*heads*(2*s_q*d_qk*s_k + 2*s_q*s_k*d_v); their `..._backward(grad_out,
      q, k, v, ...)`: the scores recomputed, then the gradients of P, V, Q and K,
      batch*heads*2*s_q*s_k*(3*d_qk + 2*d_v).
    - every other op: 0 (torch's FlopCounterMode also counts convolutions and flex attention; no test runs
      them, and this counter need not count them).

    Attributes, reset to zero each time the context is entered:
    - `total`: int, all FLOPs counted.
    - `by_op`: dict from the op's name without overload (`str(func.overloadpacket)`, e.g. "aten.mm")
      to its FLOPs; ops that counted 0 are absent.

    Example::

        with FlopCounter() as counter:
            model(x).sum().backward()
        counter.total, counter.by_op
    """

    def __init__(self) -> None:
        super().__init__()
        raise NotImplementedError("FlopCounter.__init__")

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError("FlopCounter.__torch_dispatch__")


def attention_score_flops(config: TransformerConfig, batch: int, seq: int) -> int:
    """FLOPs of the context-squared part of one forward pass: Q K^T and (scores) V in every head of every
    layer, 4 * n_layers * batch * n_heads * seq^2 * d_head."""
    raise NotImplementedError("attention_score_flops")


def transformer_forward_flops(config: TransformerConfig, batch: int, seq: int) -> int:
    """FLOPs of one forward pass of `config`'s transformer (see `TransformerConfig`) over `batch`
    sequences of `seq` tokens: every weight matrix once per token (Q, K, V, O, the MLP's 2 or 3, the LM
    head), plus the attention scores. Exactly what FlopCounterMode counts for that model."""
    raise NotImplementedError("transformer_forward_flops")


def training_step_flops(config: TransformerConfig, batch: int, seq: int) -> int:
    """Exact FLOPs of one training step (forward and backward; the optimizer's element-wise work is 0).

    Backward costs 2x forward for every matmul whose input gradient is needed: one product for the
    gradient of the input, one for the gradient of the weight. In this transformer every matmul's input
    needs a gradient (the embedding it starts from is trained)."""
    raise NotImplementedError("training_step_flops")


def mlp_training_flops(batch: int, dims: list[int]) -> int:
    """Exact FLOPs of one training step of a stack of Linear layers dims[0] -> dims[1] -> ... -> dims[-1]
    on `batch` input rows that do not require a gradient.

    The first layer's input gradient is not needed, so it costs forward + weight gradient only: a lone
    Linear trains at 4 FLOPs per parameter per token, not 6."""
    raise NotImplementedError("mlp_training_flops")


def transformer_param_count(config: TransformerConfig) -> int:
    """Number of parameters of `config`'s transformer, embedding and LM head included."""
    raise NotImplementedError("transformer_param_count")


def approx_training_flops(params: int | float, tokens: int | float) -> int | float:
    """The standard approximation of training compute: 6 * params * tokens. An exact int when both are ints
    (counts); a float when either is (70e9 parameters, as `training_days` passes them)."""
    raise NotImplementedError("approx_training_flops")


def attention_flops_fraction(config: TransformerConfig, seq: int) -> float:
    """The share of a forward pass's FLOPs that is the attention-score (context-squared) term, the part
    that 6*N*D leaves out. Independent of the batch size; grows with `seq`."""
    raise NotImplementedError("attention_flops_fraction")


def training_days(params: int | float, tokens: int | float, n_gpus: int, peak_flops_per_sec: int | float,
                  mfu: int | float) -> float:
    """Wall-clock days to train `params` parameters on `tokens` tokens with 6*N*D FLOPs, on `n_gpus`
    accelerators each delivering `mfu` (model FLOPs utilisation, 0..1) of `peak_flops_per_sec`.

    70e9 parameters, 15e12 tokens, 1024 H100s (989.5e12 bf16 FLOP/s) at MFU 0.5: about 144 days."""
    raise NotImplementedError("training_days")


def mfu(flops: int | float, seconds: int | float, peak_flops_per_sec: int | float) -> float:
    """Model FLOPs utilisation: the FLOPs the model needed, per second taken, as a share of the peak."""
    raise NotImplementedError("mfu")


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
