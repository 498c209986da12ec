"""Problem (adamw): the optimizer and its bytes. Reference solution; the spec is in assignment/adamw.py."""

from collections.abc import Callable, Iterable

import torch
from jaxtyping import Float, Shaped
from torch import Tensor

Loss = Shaped[Tensor, ""] | float  # what a closure returns


class AdamW(torch.optim.Optimizer):
    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        state_dtype: torch.dtype | None = None,
    ) -> None:
        if lr < 0 or eps < 0 or weight_decay < 0 or not all(0 <= b < 1 for b in betas):
            raise ValueError(f"invalid AdamW hyperparameters: lr={lr}, betas={betas}, eps={eps}, "
                             f"weight_decay={weight_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, state_dtype=state_dtype)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure: Callable[[], Loss] | None = None) -> Loss | None:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue  # no gradient: no update, no decay, no state
                state = self.state[p]
                dtype = group["state_dtype"] or p.dtype
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p, dtype=dtype)
                    state["exp_avg_sq"] = torch.zeros_like(p, dtype=dtype)
                state["step"] += 1
                self._update(p, state, group, dtype)
        return loss

    def _update(self, p: Float[Tensor, "*shape"], state: dict, group: dict, dtype: torch.dtype) -> None:
        lr, (beta1, beta2), eps, weight_decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        exp_avg, exp_avg_sq, step = state["exp_avg"], state["exp_avg_sq"], state["step"]
        param = p if p.dtype == dtype else p.to(dtype)  # compute in the state's precision
        grad = p.grad.to(dtype)
        param.mul_(1 - lr * weight_decay)  # decoupled weight decay, first
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        bias_correction1 = 1 - beta1**step
        bias_correction2_sqrt = (1 - beta2**step) ** 0.5
        denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)  # eps outside the square root
        param.addcdiv_(exp_avg, denom, value=-lr / bias_correction1)
        if param is not p:
            p.copy_(param)  # rounds once, to the parameter's dtype


def tensor_state_bytes(state: dict) -> int:
    return sum(v.numel() * v.element_size() for v in state.values() if isinstance(v, torch.Tensor))


def optimizer_state_bytes(optimizer: torch.optim.Optimizer) -> int:
    return sum(tensor_state_bytes(state) for state in optimizer.state.values())




__all__ = ["AdamW", "optimizer_state_bytes"]
