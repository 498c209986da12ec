"""Classic mistakes in AdamW and in measuring its state, each written as the wrong code a student would write."""

import torch

from reference import adamw as ref
from tests.mistakes import Mistake


class L2InsteadOfDecoupled(ref.AdamW):
    """Adam with L2 regularisation: the decay goes into the gradient, so the moments normalise it away."""

    def _update(self, p, state, group, dtype):
        wd = group["weight_decay"]
        p.grad.add_(p, alpha=wd)
        super()._update(p, state, dict(group, weight_decay=0.0), dtype)


def _update_with(ratio, p, state, group, dtype) -> None:
    """The reference's update, in the state's precision, with `ratio(m, v, t, beta1, beta2, eps)` in place of its
    bias-corrected m_hat / (sqrt(v_hat) + eps): one slip, the rest as it should be."""
    lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
    m, v, t = state["exp_avg"], state["exp_avg_sq"], state["step"]
    param = p if p.dtype == dtype else p.to(dtype)
    grad = p.grad.to(dtype)
    param.mul_(1 - lr * wd)
    m.lerp_(grad, 1 - beta1)
    v.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    param.sub_(lr * ratio(m, v, t, beta1, beta2, eps))
    if param is not p:
        p.copy_(param)


class NoBiasCorrection(ref.AdamW):
    def _update(self, p, state, group, dtype):
        _update_with(lambda m, v, t, beta1, beta2, eps: m / (v.sqrt() + eps), p, state, group, dtype)


class EpsInsideSqrt(ref.AdamW):
    def _update(self, p, state, group, dtype):
        _update_with(lambda m, v, t, beta1, beta2, eps: m / (1 - beta1**t) / (v / (1 - beta2**t) + eps).sqrt(),
                     p, state, group, dtype)


class DecayAfterUpdate(ref.AdamW):
    def _update(self, p, state, group, dtype):
        super()._update(p, state, dict(group, weight_decay=0.0), dtype)
        p.mul_(1 - group["lr"] * group["weight_decay"])


class DecayWithoutLr(ref.AdamW):
    """The paper's fully decoupled decay p *= (1 - weight_decay); torch multiplies it by lr."""

    def _update(self, p, state, group, dtype):
        super()._update(p, state, dict(group, weight_decay=group["weight_decay"] / group["lr"] if group["lr"] else 0.0),
                        dtype)


class BiasCorrectionWithoutSqrt(ref.AdamW):
    def _update(self, p, state, group, dtype):
        _update_with(lambda m, v, t, beta1, beta2, eps: m / (1 - beta1**t) / (v.sqrt() / (1 - beta2**t) + eps),
                     p, state, group, dtype)


class SharedStepCounter(ref.AdamW):
    """One step counter for the whole optimizer, bumped once per parameter updated."""

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        self._count = getattr(self, "_count", 0)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                dtype = group["state_dtype"] or p.dtype
                if not state:
                    state["exp_avg"] = torch.zeros_like(p, dtype=dtype)
                    state["exp_avg_sq"] = torch.zeros_like(p, dtype=dtype)
                self._count += 1
                state["step"] = self._count
                self._update(p, state, group, dtype)
        return loss


class DecaysParamsWithoutGrad(ref.AdamW):
    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    p.mul_(1 - group["lr"] * group["weight_decay"])
        super().step()
        return loss


class HyperparametersFromDefaults(ref.AdamW):
    """Reads the hyperparameters given to __init__, ignoring the groups' own (and any schedule)."""

    def _update(self, p, state, group, dtype):
        super()._update(p, state, dict(self.defaults, params=group["params"]), dtype)


class ClosureUnderNoGrad(ref.AdamW):
    @torch.no_grad()
    def step(self, closure=None):
        loss = closure() if closure is not None else None
        super().step()
        return loss


class IgnoresStateDtype(ref.AdamW):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, state_dtype=None):
        super().__init__(params, lr, betas, eps, weight_decay, None)


class DelegatesToTorch(ref.AdamW):
    """Hands the work to torch's functional AdamW: right numbers, and exactly what the audit forbids."""

    @torch.no_grad()
    def step(self, closure=None):
        from torch.optim.adamw import adamw

        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        steps = self.__dict__.setdefault("_step_tensors", {})
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            for p in params:
                state = self.state[p]
                if not state:
                    steps[p] = torch.tensor(0.0)
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
            beta1, beta2 = group["betas"]
            adamw(params, [p.grad for p in params], [self.state[p]["exp_avg"] for p in params],
                  [self.state[p]["exp_avg_sq"] for p in params], [], [steps[p] for p in params],
                  amsgrad=False, beta1=beta1, beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"],
                  eps=group["eps"], maximize=False)
            for p in params:
                self.state[p]["step"] = int(steps[p])
        return loss


def bytes_assume_fp32(optimizer):
    return sum(4 * v.numel() for s in optimizer.state.values() for v in s.values() if isinstance(v, torch.Tensor))


def bytes_one_moment(optimizer):
    return sum(s["exp_avg"].numel() * s["exp_avg"].element_size() if "exp_avg" in s else ref.tensor_state_bytes(s)
               for s in optimizer.state.values())


def bytes_in_param_dtype(optimizer):
    return sum(sum(v.numel() for v in s.values() if isinstance(v, torch.Tensor)) * p.element_size()
               for p, s in optimizer.state.items())


def bytes_counts_params(optimizer):
    return ref.optimizer_state_bytes(optimizer) + sum(p.numel() * p.element_size() for p in optimizer.state)


def bytes_step_as_int64(optimizer):
    return ref.optimizer_state_bytes(optimizer) + sum(8 for s in optimizer.state.values() if type(s.get("step")) is int)


def _m(id, description, **replaces):
    return Mistake("adamw", id, description, replaces)


MISTAKES = [
    _m("l2_coupled", "L2 regularisation in the gradient (Adam + L2) instead of decoupled weight decay",
       AdamW=L2InsteadOfDecoupled),
    _m("no_bias_correction", "moments used without the 1 - beta^t bias corrections", AdamW=NoBiasCorrection),
    _m("eps_inside_sqrt", "eps added to v_hat inside the square root", AdamW=EpsInsideSqrt),
    _m("decay_after_update", "weight decay applied after the Adam step instead of before", AdamW=DecayAfterUpdate),
    _m("decay_without_lr", "weight decay p *= (1 - weight_decay), not scaled by lr as torch does",
       AdamW=DecayWithoutLr),
    _m("bias_correction_no_sqrt", "v divided by (1 - beta2^t) after the square root", AdamW=BiasCorrectionWithoutSqrt),
    _m("shared_step_counter", "one step counter for all parameters, so bias corrections drift",
       AdamW=SharedStepCounter),
    _m("decays_params_without_grad", "weight decay applied to parameters that have no gradient",
       AdamW=DecaysParamsWithoutGrad),
    _m("hyperparameters_from_defaults", "the constructor's hyperparameters used for every group and every step",
       AdamW=HyperparametersFromDefaults),
    _m("closure_under_no_grad", "the closure called under step's no_grad, so its backward fails",
       AdamW=ClosureUnderNoGrad),
    _m("ignores_state_dtype", "moments kept in the parameter's dtype whatever state_dtype says",
       AdamW=IgnoresStateDtype),
    _m("delegates_to_torch", "the update handed to torch.optim.adamw's functional AdamW", AdamW=DelegatesToTorch),
    _m("bytes_assume_fp32", "4 bytes per state element whatever its dtype", optimizer_state_bytes=bytes_assume_fp32),
    _m("bytes_one_moment", "only the first moment counted", optimizer_state_bytes=bytes_one_moment),
    _m("bytes_param_dtype", "state bytes at the parameter's element size", optimizer_state_bytes=bytes_in_param_dtype),
    _m("bytes_counts_params", "the parameters counted as optimizer state", optimizer_state_bytes=bytes_counts_params),
    _m("bytes_step_as_int64", "a Python int step counter counted as 8 bytes",
       optimizer_state_bytes=bytes_step_as_int64),
]


# The behaviours each mistake may cost: those whose tests it failed under the held-out grading seed of
# tests/meta/test_mistakes.py, which checks it (the behaviours that wait for them may lose their points too).
# `python -m tests.meta.mutation --every-test --profile grade --grading-seed 11 --costs` prints what a run saw.
COSTS = {
    "l2_coupled": ("AdamW: bf16 parameters, default state", "AdamW: bf16 parameters, fp32 state",
                   "AdamW: float32 trajectories", "AdamW: float64 weight decay"),
    "no_bias_correction": ("AdamW: bf16 parameters, default state", "AdamW: bf16 parameters, fp32 state",
                           "AdamW: float32 trajectories", "AdamW: float64 trajectories", "AdamW: float64 weight decay"),
    "eps_inside_sqrt": ("AdamW: bf16 parameters, default state", "AdamW: bf16 parameters, fp32 state",
                        "AdamW: float32 trajectories", "AdamW: float64 trajectories", "AdamW: float64 weight decay"),
    "decay_after_update": ("AdamW: bf16 parameters, default state", "AdamW: bf16 parameters, fp32 state",
                           "AdamW: float32 trajectories", "AdamW: float64 weight decay"),
    "decay_without_lr": ("AdamW: bf16 parameters, default state", "AdamW: bf16 parameters, fp32 state",
                         "AdamW: float32 trajectories", "AdamW: float64 weight decay"),
    "bias_correction_no_sqrt": ("AdamW: bf16 parameters, default state", "AdamW: bf16 parameters, fp32 state",
                                "AdamW: float32 trajectories", "AdamW: float64 trajectories",
                                "AdamW: float64 weight decay"),
    "shared_step_counter": ("AdamW: bf16 parameters, default state", "AdamW: bf16 parameters, fp32 state",
                            "AdamW: float32 trajectories", "AdamW: float64 trajectories",
                            "AdamW: float64 weight decay"),
    "decays_params_without_grad": ("AdamW: bf16 parameters, default state", "AdamW: bf16 parameters, fp32 state",
                                   "AdamW: float32 trajectories", "AdamW: float64 weight decay",
                                   "AdamW: parameters without gradients"),
    "hyperparameters_from_defaults": ("AdamW: bf16 parameters, default state", "AdamW: bf16 parameters, fp32 state",
                                      "AdamW: float32 trajectories", "AdamW: float64 trajectories",
                                      "AdamW: float64 weight decay", "AdamW: hyperparameters from the groups"),
    "closure_under_no_grad": ("AdamW: closure",),
    "ignores_state_dtype": ("AdamW: a torch optimizer", "AdamW: bf16 parameters, fp32 state",
                            "optimizer_state_bytes", "optimizer_state_bytes: fp32 moments, before the first step"),
    "delegates_to_torch": ("AdamW: bf16 parameters, fp32 state", "audit: AdamW without torch's Adam",
                           "optimizer_state_bytes", "optimizer_state_bytes: fp32 moments, before the first step"),
    "bytes_assume_fp32": ("optimizer_state_bytes", "optimizer_state_bytes: fp32 moments, before the first step"),
    "bytes_one_moment": ("optimizer_state_bytes", "optimizer_state_bytes: fp32 moments, before the first step"),
    "bytes_param_dtype": ("optimizer_state_bytes", "optimizer_state_bytes: fp32 moments, before the first step"),
    "bytes_counts_params": ("optimizer_state_bytes", "optimizer_state_bytes: fp32 moments, before the first step"),
    "bytes_step_as_int64": ("optimizer_state_bytes", "optimizer_state_bytes: fp32 moments, before the first step"),
}
