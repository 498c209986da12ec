"""An honest AdamW written from the spec, with habits the guard must not mistake for an attack: a TypeVar, a
namedtuple, the platform's processor name, a thread pool, a cache, a finalizer and logging, in the calls
graded; and (issue 41) a generator pipeline whose state `inspect.getgeneratorstate` checks, a subclass hook, a
WeakValueDictionary, an ExitStack, a Fraction, and `traceback.format_exc` in a path not taken; and (issue 53)
formulas kept as short strings and evaluated without builtins, a frozen copy of a dict of ints through pickle,
and a ContextVar whose name holds an oracle's (`adamw`).
tests/meta/test_hostile.py grades it: full marks, status ok."""

import collections
import contextlib
import contextvars
import fractions
import functools
import inspect
import logging
import math
import pickle
import platform
import traceback
import typing
import weakref
from concurrent.futures import ThreadPoolExecutor

import torch

Number = typing.TypeVar("Number", int, float)
Hyper = collections.namedtuple("Hyper", "lr beta1 beta2 eps decay")
MACHINE = platform.processor()
log = logging.getLogger("honest-adamw")
CORRECTION = "1.0 - beta ** t"  # the bias correction, as the paper writes it
ELEMENT_BYTES = pickle.loads(pickle.dumps({"float64": 8, "float32": 4, "bfloat16": 2, "float16": 2}))  # a frozen copy
STEPPING = contextvars.ContextVar("adamw_step_depth", default=0)


@functools.lru_cache(maxsize=4096)
def corrections(beta1: float, beta2: float, t: int) -> tuple[float, float]:
    return tuple(eval(CORRECTION, {"__builtins__": {}}, {"beta": beta, "t": t}) for beta in (beta1, beta2))


class _StepRecord:
    pass


class _Registered:
    """Every optimizer of this module, by name (a subclass hook)."""

    known: dict[str, type] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _Registered.known[cls.__name__] = cls


_last_state = weakref.WeakValueDictionary()  # the state tensor looked at last, per key, while it lives


class AdamW(torch.optim.Optimizer, _Registered):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, state_dtype=None):
        for name, value in (("lr", lr), ("eps", eps), ("weight_decay", weight_decay)):
            if value < 0:
                raise ValueError(f"{name} must not be negative, got {value}")
        for beta in betas:
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"each beta must lie in [0, 1), got {betas}")
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                                  "state_dtype": state_dtype})

    @torch.no_grad()
    def step(self, closure=None):
        result = None
        depth = STEPPING.set(STEPPING.get() + 1)
        if closure is not None:
            with torch.enable_grad():
                result = closure()
        jobs = []
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            hyper = Hyper(group["lr"], beta1, beta2, group["eps"], group["weight_decay"])
            jobs += [(p, hyper, group["state_dtype"]) for p in group["params"] if p.grad is not None]
        with ThreadPoolExecutor(max_workers=2) as pool:  # parameters are independent: update them side by side
            list(pool.map(lambda job: self._one(*job), jobs))
        weakref.finalize(_StepRecord(), log.debug, "AdamW stepped %d parameters on %s", len(jobs), MACHINE)
        STEPPING.reset(depth)
        return result

    @torch.no_grad()  # grad mode is per thread: the pool's threads do not inherit step's
    def _one(self, p, hyper, state_dtype):
        work_dtype = state_dtype if state_dtype is not None else p.dtype
        state = self.state[p]
        if len(state) == 0:
            state["step"] = 0
            state["exp_avg"] = torch.zeros(p.shape, dtype=work_dtype, device=p.device)
            state["exp_avg_sq"] = torch.zeros(p.shape, dtype=work_dtype, device=p.device)
        state["step"] = t = state["step"] + 1
        g = p.grad.to(work_dtype)
        w = p.to(work_dtype) * (1.0 - hyper.lr * hyper.decay)
        m = state["exp_avg"]
        v = state["exp_avg_sq"]
        m.mul_(hyper.beta1).add_(g, alpha=1.0 - hyper.beta1)
        v.mul_(hyper.beta2).add_(g * g, alpha=1.0 - hyper.beta2)
        c1, c2 = corrections(hyper.beta1, hyper.beta2, t)
        w = w - (hyper.lr / c1) * m / (v.sqrt() / math.sqrt(c2) + hyper.eps)
        p.copy_(w)


def _state_tensors(optimizer):
    for per_parameter in optimizer.state.values():
        for value in per_parameter.values():
            if torch.is_tensor(value):
                _last_state["tensor"] = value
                yield value


def _sizes(tensors):
    for tensor in tensors:
        size = ELEMENT_BYTES.get(str(tensor.dtype).removeprefix("torch."), tensor.element_size())
        yield fractions.Fraction(tensor.numel()) * size


def optimizer_state_bytes(optimizer):
    pipeline = _sizes(_state_tensors(optimizer))
    assert inspect.getgeneratorstate(pipeline) == inspect.GEN_CREATED
    with contextlib.ExitStack() as stack:
        stack.callback(pipeline.close)
        try:
            total = sum(pipeline, fractions.Fraction(0))
        except ArithmeticError:  # never: sizes are whole numbers
            log.error("state bytes: %s", traceback.format_exc())
            raise
    assert inspect.getgeneratorstate(pipeline) == inspect.GEN_CLOSED
    return int(total)


__all__ = ["AdamW", "optimizer_state_bytes"]
