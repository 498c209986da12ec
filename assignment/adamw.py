"""Problem (adamw): the optimizer and its bytes. See handout.md, "Problem (adamw)".

Do not use torch.optim.AdamW, torch.optim.Adam or their functional forms (torch.optim.adamw,
torch.optim._functional, torch._fused_adamw_, ...) in this file: AdamW is the oracle the tests compare you
against, and the grader checks. Subclassing `torch.optim.Optimizer` is expected.
"""

from collections.abc import Callable, Iterable

import torch
from jaxtyping import Shaped
from torch import Tensor

Loss = Shaped[Tensor, ""] | float  # what a closure returns


class AdamW(torch.optim.Optimizer):
    """AdamW with PyTorch's update rule (`torch.optim.AdamW` with amsgrad=False, maximize=False).

    `params` is an iterable of parameters or of param groups (dicts with "params" and any of the
    hyperparameters, which override the defaults for that group), as for every torch optimizer. Each group
    keeps its hyperparameters under the keys "lr", "betas", "eps", "weight_decay" and "state_dtype", and
    `step` reads them from the group every time (so a learning-rate schedule can change group["lr"]).

    For each parameter p with a gradient g, at its t-th step (t counts this parameter's steps, from 1):

        p = p * (1 - lr * weight_decay)            # decoupled weight decay, applied first
        m = beta1 * m + (1 - beta1) * g            # first moment   (state["exp_avg"])
        v = beta2 * v + (1 - beta2) * g * g        # second moment  (state["exp_avg_sq"])
        m_hat = m / (1 - beta1**t)                 # bias corrections
        v_hat = v / (1 - beta2**t)
        p = p - lr * m_hat / (sqrt(v_hat) + eps)   # eps outside the square root

    State per parameter, created at its first step, in `self.state[p]`: "step" (a Python int, t), "exp_avg"
    and "exp_avg_sq" (tensors shaped like p, zero at first). A parameter whose .grad is None is skipped
    entirely: no decay, no state, no step counted.

    `state_dtype`: the dtype of the two moments, and of the arithmetic above. None (the default) keeps them
    in the parameter's dtype, as torch does. torch.float32 with bfloat16 parameters is the lecture's
    policy (2 + 2 + 4 + 4 bytes per parameter): the moments stay float32, the update is computed in float32
    from the bfloat16 parameter and gradient, and the result is rounded to bfloat16 once, into p.

    ValueError for lr < 0, eps < 0, weight_decay < 0, or a beta outside [0, 1) given to the constructor. A
    param group's own values are the caller's, as in torch (whose AdamW checks only its arguments): they are
    not checked, and no test passes invalid ones.
    """

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        state_dtype: torch.dtype | None = None,
    ) -> None:
        raise NotImplementedError("AdamW.__init__")

    @torch.no_grad()
    def step(self, closure: Callable[[], Loss] | None = None) -> Loss | None:
        """One update of every parameter that has a gradient. With a `closure` (which clears the gradients,
        computes the loss, calls backward and returns the loss), call it first, with gradients enabled
        (`step` itself runs under torch.no_grad), and return its loss; else return None."""
        raise NotImplementedError("AdamW.step")


def optimizer_state_bytes(optimizer: torch.optim.Optimizer) -> int:
    """Bytes of the optimizer's state, measured: for every parameter's state dict in `optimizer.state`, the
    bytes (numel * element_size) of every tensor in it; Python numbers (a step counter kept as an int)
    count 0. Works for any torch optimizer: torch's own AdamW keeps its step counters as 0-d float32 tensors,
    4 bytes each. The parameters and gradients themselves are not state."""
    raise NotImplementedError("optimizer_state_bytes")


__all__ = ["AdamW", "optimizer_state_bytes"]
