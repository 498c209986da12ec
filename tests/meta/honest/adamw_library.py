"""AdamW in the style of optimizer libraries (pytorch-optimizer, the Hugging Face one): hyperparameters checked
with messages, `@torch.no_grad()` on step, a sparse gradient refused, state created when empty, the moments
updated in place (`mul_`, `add_`, `addcmul_`), the step size folded from the bias correction, `addcdiv_`;
written to torch's formula, as this assignment asks. The texts it is modelled on add eps before the bias
correction (the library's "efficient" form), or decay after the update (a course handout's), or call the
closure under no_grad, or name the moments m and v: SLIPS.

Graded by tests/meta/test_honest.py."""

import math

import torch
from torch.optim import Optimizer

FIRST, SECOND = "exp_avg", "exp_avg_sq"  # the state's names for the two moments

CASE = {"problem": "adamw", "score": 9}
SAYS = ("TRAJECTORIES", "STATE")
TRAJECTORIES = ("AdamW: float64 trajectories", "AdamW: float64 weight decay", "AdamW: float32 trajectories",
                "AdamW: bf16 parameters, default state", "AdamW: bf16 parameters, fp32 state")
STATE = TRAJECTORIES  # their state parts: the moments' names and values
SLIPS = {
    "eps_before_correction": (
        "        step_size = lr / bias_correction1\n"
        "        denom = (exp_avg_sq.sqrt() / math.sqrt(bias_correction2)).add_(eps)",
        "        step_size = lr * math.sqrt(bias_correction2) / bias_correction1\n"
        "        denom = exp_avg_sq.sqrt().add_(eps)", TRAJECTORIES),
    "decay_after_update": (
        ("        work.mul_(1.0 - lr * weight_decay)\n        exp_avg.mul_(beta1)", "        exp_avg.mul_(beta1)"),
        ("        p.copy_(work)", "        work.mul_(1.0 - lr * weight_decay)\n        p.copy_(work)"), TRAJECTORIES),
    "closure_under_no_grad": ("            with torch.enable_grad():\n                loss = closure()",
                              "            loss = closure()", ("AdamW: closure",)),
    "moments_named_m_and_v": ('FIRST, SECOND = "exp_avg", "exp_avg_sq"', 'FIRST, SECOND = "m", "v"', STATE),
}


class AdamW(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, state_dtype=None):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if eps < 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, state_dtype=state_dtype)
        super(AdamW, self).__init__(params, defaults)  # noqa: UP008 - the libraries' habit

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("AdamW does not support sparse gradients")
                self._update(p, group)
        return loss

    def _update(self, p, group):
        lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
        beta1, beta2 = group["betas"]
        dtype = group["state_dtype"] or p.dtype
        state = self.state[p]
        if len(state) == 0:
            state["step"] = 0
            state[FIRST] = torch.zeros_like(p, dtype=dtype, memory_format=torch.preserve_format)
            state[SECOND] = torch.zeros_like(p, dtype=dtype, memory_format=torch.preserve_format)
        exp_avg, exp_avg_sq = state[FIRST], state[SECOND]
        state["step"] += 1
        grad = p.grad.to(dtype)
        work = p.detach().to(dtype, copy=True)
        work.mul_(1.0 - lr * weight_decay)
        exp_avg.mul_(beta1).add_(grad, alpha=1.0 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1.0 - beta2)
        bias_correction1 = 1.0 - beta1 ** state["step"]
        bias_correction2 = 1.0 - beta2 ** state["step"]
        step_size = lr / bias_correction1
        denom = (exp_avg_sq.sqrt() / math.sqrt(bias_correction2)).add_(eps)
        work.addcdiv_(exp_avg, denom, value=-step_size)
        p.copy_(work)


def optimizer_state_bytes(optimizer):
    total = 0
    for state in optimizer.state.values():
        for value in state.values():
            if torch.is_tensor(value):
                total += value.numel() * value.element_size()
    return total


__all__ = ["AdamW", "optimizer_state_bytes"]
