"""Scenarios for problem gradient_accumulation: the model, its batch and the optimizer are built from a
spec (seeded, so the same in every process); the code under test runs beside them and returns gradients,
losses, parameters and measured bytes as data. The oracles (a plain full-batch backward, a plain step of
torch.optim.SGD, the saved-activation peak of a plain backward) run in the test process (tests/oracles.py).

A spec (`grad_accum_specs`, tests/strategies/): {"seed": int, "sizes": [d_in, hidden, d_out], "batch": N,
"micro_batch_size": int, "seq": 0 (inputs (N, d_in)) or a length (inputs (N, seq, d_in)), "loss": "mse" |
"cross_entropy", "dtype": "float64" | "float32", "stale": bool (the parameters hold a stale gradient
before the call)}; for `train`, also "steps", "lr", "momentum".
"""

import weakref

import torch
import torch.nn.functional as F
from torch import nn


def build(spec: dict) -> tuple[nn.Module, list[tuple[torch.Tensor, torch.Tensor]]]:
    """The model and one batch per step (`spec.get("steps", 1)`), seeded."""
    dtype = getattr(torch, spec["dtype"])
    generator = torch.Generator().manual_seed(spec["seed"])
    d_in, hidden, d_out = spec["sizes"]
    model = nn.Sequential(nn.Linear(d_in, hidden), nn.Tanh(), nn.Linear(hidden, d_out)).to(dtype)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=generator, dtype=torch.float64) / p.shape[-1] ** 0.5)
    leading = [spec["batch"]] + ([spec["seq"]] if spec.get("seq") else [])
    batches = []
    for _ in range(spec.get("steps", 1)):
        inputs = torch.randn(*leading, d_in, generator=generator, dtype=torch.float64).to(dtype)
        if spec["loss"] == "cross_entropy":
            targets = torch.randint(0, d_out, leading, generator=generator)
        else:
            targets = torch.randn(*leading, d_out, generator=generator, dtype=torch.float64).to(dtype)
        batches.append((inputs, targets))
    return model, batches


def loss_fn_of(spec: dict):
    """A mean-reduced loss, as the spec says."""
    if spec["loss"] == "cross_entropy":
        return _cross_entropy
    return F.mse_loss


def _cross_entropy(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(outputs.reshape(-1, outputs.shape[-1]), targets.reshape(-1))


def _stale(model: nn.Module) -> None:
    """Leave a gradient from some earlier batch in every parameter."""
    for p in model.parameters():
        p.grad = torch.full_like(p, 3.0)


def _grads(model: nn.Module) -> list:
    return [None if p.grad is None else p.grad.detach().clone() for p in model.parameters()]


class Work:
    """The tests' own record, in order, of the work a call did with the model, the loss and the optimizer it was
    given (hooks that change no value): evidence that the work a row claims was done, which neither a constant, a
    no-op nor a table of answers leaves. Events:

    - "forward s:e": a forward of the model (its first layer) that records a graph, on rows s to e of `inputs`
      ("forward ?": on rows that are not the batch's, in order);
    - "loss n": a call of the loss, on n examples, whose value requires grad;
    - "backward through the loss": a backward that passes through such a value;
    - "backward into the model": a backward that reaches the first layer's output;
    - "step": an optimizer step."""

    def __init__(self, model: nn.Module, loss_fn, inputs: torch.Tensor, optimizer=None):
        self.events: list[str] = []
        self.inputs, self._loss_fn = inputs, loss_fn
        model[0].register_forward_hook(self._forward)
        if optimizer is not None:
            optimizer.register_step_pre_hook(lambda *_: self.events.append("step"))

    def _rows(self, x: torch.Tensor) -> str:
        n = x.shape[0]
        for start in range(self.inputs.shape[0] - n + 1):
            rows = self.inputs[start:start + n]
            if rows.shape == x.shape and rows.dtype == x.dtype and torch.equal(rows, x):
                return f"{start}:{start + n}"
        return "?"

    def _forward(self, module, args, output) -> None:
        if torch.is_grad_enabled() and isinstance(output, torch.Tensor) and output.requires_grad:
            self.events.append(f"forward {self._rows(args[0])}")
            output.register_hook(lambda grad: self.events.append("backward into the model"))

    def loss_fn(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """The loss the call is given: the spec's, recorded."""
        value = self._loss_fn(outputs, targets)
        if isinstance(value, torch.Tensor) and value.requires_grad:
            self.events.append(f"loss {outputs.shape[0]}")
            value.register_hook(lambda grad: self.events.append("backward through the loss"))
        return value


def accumulate(pkg, spec: dict) -> dict:
    """Scenario: accumulate_gradients under test. Returns its answer and the gradients it left."""
    model, [(inputs, targets)] = build(spec)
    if spec.get("stale"):
        _stale(model)
    loss = pkg.gradient_accumulation.accumulate_gradients(model, loss_fn_of(spec), inputs, targets,
                                                          spec["micro_batch_size"])
    return {"loss": loss, "grads": _grads(model)}


def accumulate_many(pkg, specs: list) -> list:
    """Scenario: several specs in one call (one round trip in isolated mode)."""
    return [accumulate(pkg, spec) for spec in specs]


def error_of(pkg, spec: dict, micro_batch_size: int, work: list | None = None) -> str | None:
    """Scenario: the name of the exception accumulate_gradients raises (None if it returns); `work`, when given,
    gets the call's Work events."""
    model, [(inputs, targets)] = build(spec)
    watched = Work(model, loss_fn_of(spec), inputs)
    try:
        pkg.gradient_accumulation.accumulate_gradients(model, watched.loss_fn, inputs, targets, micro_batch_size)
    except NotImplementedError:  # an untouched stub: a failure, not an answer
        raise
    except Exception as exc:  # noqa: BLE001 - the type is the answer
        return type(exc).__name__
    finally:
        if work is not None:
            work.extend(watched.events)
    return None


def invalid_and_valid(pkg, spec: dict, invalid: int) -> dict:
    """Scenario: what accumulate_gradients raises with the micro-batch size `invalid` and with the spec's own
    (valid) one, and the valid call's Work events."""
    work: list[str] = []
    return {"invalid": error_of(pkg, spec, invalid), "valid": error_of(pkg, spec, spec["micro_batch_size"], work),
            "work": work}


# -- train_step -------------------------------------------------------------------------------------------

def _optimizer(model: nn.Module, spec: dict) -> torch.optim.Optimizer:
    return torch.optim.SGD(model.parameters(), lr=spec["lr"], momentum=spec["momentum"])


def train(pkg, spec: dict) -> dict:
    """Scenario: `spec["steps"]` calls of train_step under test, each on its own batch, starting from stale
    gradients. Returns the losses, the final parameters, the gradients left after the last step and each call's
    Work events."""
    model, batches = build(spec)
    optimizer = _optimizer(model, spec)
    _stale(model)
    watched = Work(model, loss_fn_of(spec), batches[0][0], optimizer)
    losses, work = [], []
    for inputs, targets in batches:
        watched.inputs, watched.events = inputs, []
        losses.append(pkg.gradient_accumulation.train_step(model, optimizer, watched.loss_fn, inputs, targets,
                                                           spec["micro_batch_size"]))
        work.append(watched.events)
    return {"losses": losses, "params": [p.detach().clone() for p in model.parameters()], "grads": _grads(model),
            "work": work}


# -- memory -----------------------------------------------------------------------------------------------

class _Saved:
    """What the pack hook hands autograd for one saved tensor; when autograd lets go of it (after the
    backward that used it, or when the graph dies), its bytes stop counting."""

    __slots__ = ("tensor", "__weakref__")

    def __init__(self, tensor: torch.Tensor):
        self.tensor = tensor


class SavedPeak:
    """Peak bytes of the tensors autograd holds for backward at any one time, by saved-tensor hooks: each
    saved tensor counted at numel * element_size while autograd holds it (the same tensor saved twice
    counted once); parameters, and views of them, not counted. The tests' own instrument."""

    def __init__(self, model: nn.Module):
        self.params = {p.untyped_storage().data_ptr() for p in model.parameters()}
        self.live: dict[tuple, list[int]] = {}
        self.current = self.peak = 0

    def _pack(self, t: torch.Tensor):
        if t.untyped_storage().data_ptr() in self.params:
            return t
        key = (t.data_ptr(), tuple(t.shape), tuple(t.stride()), t.dtype)
        entry = self.live.setdefault(key, [t.numel() * t.element_size(), 0])
        if entry[1] == 0:
            self.current += entry[0]
            self.peak = max(self.peak, self.current)
        entry[1] += 1
        saved = _Saved(t)
        weakref.finalize(saved, self._release, key)
        return saved

    def _release(self, key: tuple) -> None:
        entry = self.live[key]
        entry[1] -= 1
        if entry[1] == 0:
            self.current -= entry[0]
            del self.live[key]

    @staticmethod
    def _unpack(saved):
        return saved.tensor if isinstance(saved, _Saved) else saved

    def __enter__(self) -> "SavedPeak":
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._hooks.__exit__(*exc)


def accumulation_peaks(pkg, spec: dict, micro_batch_sizes: list) -> dict:
    """Scenario: the peak saved-activation bytes of accumulate_gradients under test, and its Work events, for each
    micro-batch size, on the spec's model and batch."""
    peaks, work = [], []
    for m in micro_batch_sizes:
        model, [(inputs, targets)] = build(spec)
        watched = Work(model, loss_fn_of(spec), inputs)
        with SavedPeak(model) as meter:
            pkg.gradient_accumulation.accumulate_gradients(model, watched.loss_fn, inputs, targets, m)
        peaks.append(meter.peak)
        work.append(watched.events)
    return {"peaks": peaks, "work": work}
