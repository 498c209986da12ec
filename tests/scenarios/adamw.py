"""Scenarios for problem adamw: the optimizer under test lives beside the student's code; the same
trajectories are run through torch.optim.AdamW (the oracle) in the test process (tests/oracles.py).

A trajectory spec (tests/strategies/adamw.py `adamw_trajectories`): {"seed", "shapes", "groups": [{"params":
[indices], "lr", "betas", "eps", "weight_decay"}], "steps", "has_grad": [[bool per param] per step],
"grad_scale": [per param], "dtype": "float64" | "float32" | "bfloat16"}, optionally "state_dtype"
("float32" or None), "lrs" (a learning rate per step, set on every group before the step, as a
scheduler would), "closure" (gradients from a loss computed in a closure instead of given ones: True for
step(closure), "called_first" for the closure called by the scenario and step() after it) and "built_with"
({"defaults": {...}, "groups": [{...} per group]}: the optimizer is constructed with these hyperparameters,
and every group's are set to the spec's before each step).
"""

import torch
from torch import nn


def make_problem(spec: dict) -> tuple[list[nn.Parameter], list[list[torch.Tensor | None]], list[torch.Tensor]]:
    """The initial parameters, the gradients of every step (None where a parameter has none) and, for
    closures, the targets of the loss; seeded, so the same in every process."""
    dtype = getattr(torch, spec["dtype"])
    generator = torch.Generator().manual_seed(spec["seed"])

    def draw(shape, scale=1.0):
        return (torch.randn(shape, dtype=torch.float64, generator=generator) * scale).to(dtype)

    params = [nn.Parameter(draw(shape)) for shape in spec["shapes"]]
    grads = [[draw(shape, scale) if present else None
              for shape, scale, present in zip(spec["shapes"], spec["grad_scale"], step_has, strict=True)]
             for step_has in spec["has_grad"]]
    targets = [draw(shape, 2.0) for shape in spec["shapes"]]
    return params, grads, targets


def groups(spec: dict, params: list[nn.Parameter]) -> list[dict]:
    return [dict(group, params=[params[i] for i in group["params"]]) for group in spec["groups"]]


def _loss(params, targets, grads_of_step) -> torch.Tensor:
    """A loss whose gradient involves the parameters: sum of w * (p - target)^2 over parameters that get a
    gradient this step (the others are left out, so their .grad stays None)."""
    total = torch.zeros((), dtype=params[0].dtype)
    for p, target, g in zip(params, targets, grads_of_step, strict=True):
        if g is not None:
            total = total + (g.abs() * (p - target) ** 2).sum()
    return total


def trajectory(optimizer_class, spec: dict, **extra) -> dict:
    """Run the spec's steps with `optimizer_class` (the one under test, or torch's AdamW). Returns the final
    parameters, each parameter's state as {"step": int, "exp_avg": tensor, "exp_avg_sq": tensor} ({} if
    none), the losses the closure steps returned and how often each step's closure was called."""
    params, grads, targets = make_problem(spec)
    built = spec.get("built_with")
    if built:
        given = [dict(hyper, params=[params[i] for i in group["params"]])
                 for hyper, group in zip(built["groups"], spec["groups"], strict=True)]
        optimizer = optimizer_class(given, **built["defaults"], **extra)
    else:
        optimizer = optimizer_class(groups(spec, params), **extra)
    losses, calls = [], []
    for t, grads_of_step in enumerate(grads):
        if built:
            for group, wanted in zip(optimizer.param_groups, spec["groups"], strict=True):
                group.update({k: v for k, v in wanted.items() if k != "params"})
        if "lrs" in spec:
            for group in optimizer.param_groups:
                group["lr"] = spec["lrs"][t]
        if spec.get("closure"):
            calls.append(0)

            def closure(grads_of_step=grads_of_step):
                calls[-1] += 1
                optimizer.zero_grad(set_to_none=True)
                loss = _loss(params, targets, grads_of_step)
                if loss.requires_grad:  # not when no parameter gets a gradient this step
                    loss.backward()
                return loss
            if spec["closure"] == "called_first":
                with torch.enable_grad():
                    loss = closure()
                optimizer.step()
            else:
                loss = optimizer.step(closure)
            losses.append(float(loss.detach()))
        else:
            for p, g in zip(params, grads_of_step, strict=True):
                p.grad = None if g is None else g.clone()
            optimizer.step()
    states = []
    for p in params:  # the spec's keys, those there are, and every key's name (a test names what is missing)
        state = optimizer.state.get(p, {})
        kept = {key: int(state[key]) if key == "step" else state[key].detach().clone()
                for key in ("step", "exp_avg", "exp_avg_sq") if key in state}
        states.append({} if not state else {**kept, "keys": sorted(map(str, state))})
    return {"params": [p.detach().clone() for p in params], "state": states, "losses": losses, "calls": calls}


def run(pkg, spec: dict) -> dict:
    """Scenario: the trajectory with the AdamW under test."""
    state_dtype = getattr(torch, spec["state_dtype"]) if spec.get("state_dtype") else None
    extra = {"state_dtype": state_dtype} if "state_dtype" in spec else {}
    return trajectory(pkg.adamw.AdamW, spec, **extra)


def run_many(pkg, specs: list) -> list:
    """Scenario: several trajectories in one call (one round trip in isolated mode)."""
    return [run(pkg, spec) for spec in specs]


def describe(pkg, spec: dict) -> dict:
    """Scenario: the optimizer under test as torch sees it: its type, defaults and param groups' keys."""
    params, _, _ = make_problem(spec)
    optimizer = pkg.adamw.AdamW(groups(spec, params), lr=0.01, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.1,
                                state_dtype=torch.float32)
    return {"is_optimizer": isinstance(optimizer, torch.optim.Optimizer),
            "defaults": {k: v for k, v in optimizer.defaults.items()
                         if k in ("lr", "betas", "eps", "weight_decay", "state_dtype")},
            "groups": [{k: v for k, v in g.items() if k != "params"} for g in optimizer.param_groups],
            "sizes": [[p.numel() for p in g["params"]] for g in optimizer.param_groups]}


def construction_error(pkg, hyperparameters: dict) -> str | None:
    """Scenario: the name of the exception AdamW(params, **hyperparameters) raises, or None."""
    try:
        pkg.adamw.AdamW([nn.Parameter(torch.zeros(2))], **hyperparameters)
    except NotImplementedError:  # an untouched stub: a failure, not an answer
        raise
    except Exception as exc:  # noqa: BLE001 - the type is the answer
        return type(exc).__name__
    return None


# -- measured bytes ---------------------------------------------------------------------------------------

class Replayed(torch.optim.Optimizer):
    """A stand-in for one of torch's optimizers (tests/oracles.py `torch_state`): its parameters, and the
    state that optimizer had, computed in the test process. It cannot step: it only holds that state."""

    def __init__(self, params: list[nn.Parameter], states: list[dict]):
        super().__init__(params, {"lr": 1e-2})
        for p, state in zip(params, states, strict=True):
            if state:
                self.state[p] = dict(state)

    def step(self, closure=None):
        raise RuntimeError("a replayed optimizer holds a state; it does not step")

    # torch.optim.Optimizer.__init__ wraps an unhooked class's `step` in place, a rebinding of this scenario's
    # code that the guard reports as the submission's: it never steps, so there is nothing to wrap
    step.hooked = True


def state_bytes(pkg, spec: dict, kind: str, state_dtype_name: str | None = None, steps: int = 1,
                replayed: list | None = None) -> dict:
    """Scenario: for kind "ours", the AdamW under test over the spec's parameters, `steps` steps with the
    spec's first gradients; for torch's ("torch_adamw", "torch_sgd_momentum"), a `Replayed` optimizer holding
    the state `replayed` that torch's had after those steps (tests/oracles.py `torch_state`: torch's optimizers
    never run in the worker). Then optimizer_state_bytes under test. Returns the answer, each state dict's
    tensors, and the parameters and gradients."""
    params, grads, _ = make_problem(spec)
    if kind == "ours":
        state_dtype = getattr(torch, state_dtype_name) if state_dtype_name else None
        optimizer = pkg.adamw.AdamW(params, lr=1e-2, state_dtype=state_dtype)
        for _ in range(steps):
            for p, g in zip(params, grads[0], strict=True):
                p.grad = None if g is None else g.clone()
            optimizer.step()
    else:
        if replayed is None:
            raise ValueError(f"the state of {kind} is computed in the test process and passed as `replayed`")
        optimizer = Replayed(params, replayed)
        for p, g in zip(params, grads[0], strict=True):
            p.grad = None if g is None or not steps else g.clone()
    return {
        "bytes": pkg.adamw.optimizer_state_bytes(optimizer),
        "state": [{k: v for k, v in optimizer.state[p].items() if isinstance(v, torch.Tensor)}
                  for p in params if p in optimizer.state],
        "params": [p.detach() for p in params],
        "grads": [None if p.grad is None else p.grad.detach() for p in params],
    }


# -- audit ---------------------------------------------------------------------------------------------------

def _forbidden(*args, **kwargs):
    raise RuntimeError("torch's Adam/AdamW is the oracle: the solution may not use it")


class _Forbidden:
    def __init__(self, *args, **kwargs):
        _forbidden()


def run_without_oracle(pkg, specs: list) -> list:
    """Scenario for the audit: `run_many` while torch's Adam and AdamW (classes, functional forms, fused
    kernels) are unusable (in-process; in the grading worker they are absent, grader/harness/absent.py)."""
    import torch.optim.adam as adam_module
    import torch.optim.adamw as adamw_module

    targets = [(torch.optim, "AdamW"), (torch.optim, "Adam"), (adamw_module, "AdamW"), (adam_module, "Adam"),
               (adam_module, "adam"), (torch, "_fused_adamw_"), (torch, "_fused_adam_")]
    if hasattr(adamw_module, "adamw"):
        targets.append((adamw_module, "adamw"))
    saved = [(owner, name, getattr(owner, name)) for owner, name in targets if hasattr(owner, name)]
    for owner, name, _ in saved:
        setattr(owner, name, _Forbidden if isinstance(getattr(owner, name), type) else _forbidden)
    try:
        return run_many(pkg, specs)
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)
