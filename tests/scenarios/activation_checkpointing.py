"""Scenarios for problem activation_checkpointing: the checkpoint under test runs beside the student's code;
the oracles (tests/oracles.py: plain backward, torch.utils.checkpoint, a store-nothing backward) run the same
seeded model in the test process, through the same helpers here with another `checkpoint`, or none.

A model spec (`checkpoint_specs`, tests/strategies/): {"seed", "layers" (L), "batch", "width", "dtype"
("float64" | "float32"), "dropout" (a probability, 0.0 for none), "x_requires_grad" (bool), "shift"
(None, or whether the extra tensor argument requires grad), "scale" (a float passed through as a
non-tensor argument), "flag" (a bool, the same), "call" (how the block is checkpointed: CALLS)}.

Every layer is `Layer`: y = dropout(relu(x)) @ W, W (width x width) a parameter. Without dropout, autograd
keeps exactly one tensor per layer for backward (relu's output, which the matmul also keeps), of the
input's shape: one layer = one activation of batch * width * itemsize bytes. Each call is logged, so the
tests count forward calls and see which layers backward recomputed.
"""

import torch
from torch import nn

_LOG: list = []  # ("call", layer index) and ("pack", storage pointer, bytes) events, in order


class Layer(nn.Module):
    def __init__(self, index: int, width: int, dropout: float, generator: torch.Generator, dtype):
        super().__init__()
        self.index = index
        self.weight = nn.Parameter(torch.randn(width, width, generator=generator, dtype=torch.float64)
                                   .div(width**0.5).to(dtype))
        self.dropout = dropout

    def forward(self, x):
        _LOG.append(("call", self.index, torch.is_grad_enabled()))
        h = torch.relu(x)
        if self.dropout:
            h = torch.nn.functional.dropout(h, self.dropout, training=True)
        return h @ self.weight


def make_model(spec: dict) -> tuple[list[Layer], torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """The layers, the input x, the extra tensor argument (or None) and the upstream gradient; seeded, so
    the same in every process."""
    dtype = getattr(torch, spec["dtype"])
    g = torch.Generator().manual_seed(spec["seed"])
    layers = [Layer(i, spec["width"], spec.get("dropout", 0.0), g, dtype) for i in range(spec["layers"])]
    x = torch.randn(spec["batch"], spec["width"], generator=g, dtype=torch.float64).to(dtype)
    x.requires_grad_(spec.get("x_requires_grad", True))
    shift = None
    if spec.get("shift") is not None:
        shift = torch.randn(spec["width"], generator=g, dtype=torch.float64).to(dtype).requires_grad_(spec["shift"])
    upstream = torch.randn(spec["batch"], spec["width"], generator=g, dtype=torch.float64).to(dtype)
    return layers, x, shift, upstream


def block(layers, x, scale, shift, flag):
    """The function that is checkpointed: the layers, then * scale (a float), + shift (a tensor or None),
    negated if `flag` (a bool): tensor and non-tensor arguments mixed."""
    for layer in layers:
        x = layer(x)
    x = x * scale
    if shift is not None:
        x = x + shift
    return -x if flag else x


# How a spec's block is checkpointed: `checkpoint(nn.Sequential(*layers), x)`, the plain call of a module on one
# tensor; `checkpoint(f, x)` or `checkpoint(f, x, shift)`, f the block with the rest bound, tensor arguments
# alone; `checkpoint(block, layers, x, scale, shift, flag)`, non-tensor arguments passed through (a list, a float,
# None or a tensor, a bool).
CALLS = ("module", "tensor-arguments", "non-tensors")


def checkpointed(checkpoint_fn, spec: dict, layers, x, shift):
    """The spec's block through `checkpoint_fn(fn, *args)`, called as spec["call"] says (CALLS)."""
    call, scale, flag = spec.get("call", "non-tensors"), spec["scale"], spec.get("flag", False)
    if call == "module":
        return checkpoint_fn(torch.nn.Sequential(*layers), x)
    if call == "tensor-arguments":
        if shift is None:
            return checkpoint_fn(lambda h: block(layers, h, scale, None, flag), x)
        return checkpoint_fn(lambda h, s: block(layers, h, scale, s, flag), x, shift)
    return checkpoint_fn(block, layers, x, scale, shift, flag)


def _pack(t):
    if not isinstance(t, nn.Parameter):
        _LOG.append(("pack", t.untyped_storage().data_ptr(), t.untyped_storage().nbytes()))
    return t


def _unpack(t):
    return t


def _calls(events) -> list[int]:
    return [e[1] for e in events if e[0] == "call"]


def _unique_bytes(events) -> int:
    seen = {}
    for e in events:
        if e[0] == "pack":
            seen[e[1]] = e[2]
    return sum(seen.values())


def _recompute_groups(events) -> list[int]:
    """The bytes saved by each recomputation in backward: a new group starts at a layer call that does not
    follow the previous layer."""
    groups: list[list] = []
    previous = None
    for e in events:
        if e[0] == "call":
            if previous is None or e[1] != previous + 1:
                groups.append([])
            previous = e[1]
        if groups:
            groups[-1].append(e)
    return [_unique_bytes(group) for group in groups]


def _measure(forward, spec: dict, seed_offset: int = 1) -> dict:
    """Run forward() (which returns the output) and backward with the upstream gradient; log layer calls and
    saved tensors in both phases. Returns the output, the gradients, the calls and saved bytes of each phase
    and a draw of the CPU RNG after backward."""
    layers, x, shift, upstream = make_model(spec)
    torch.manual_seed(spec["seed"] + seed_offset)
    _LOG.clear()
    with torch.autograd.graph.saved_tensors_hooks(_pack, _unpack):
        out = forward(layers, x, shift)
        forward_events = list(_LOG)
        _LOG.clear()
        if out.requires_grad:
            out.backward(upstream)
        backward_events = list(_LOG)
    _LOG.clear()
    return {
        "out": out.detach(),
        "out_requires_grad": out.requires_grad,
        "grad_x": None if x.grad is None else x.grad,
        "grad_shift": None if shift is None or shift.grad is None else shift.grad,
        "grad_weights": [None if layer.weight.grad is None else layer.weight.grad for layer in layers],
        "forward_calls": _calls(forward_events),
        "backward_calls": _calls(backward_events),
        "forward_bytes": _unique_bytes(forward_events),
        "recompute_bytes": _recompute_groups(backward_events),
        "rng_after": torch.rand(4, dtype=torch.float64),
    }


def block_run(checkpoint_fn, spec: dict) -> dict:
    return _measure(lambda layers, x, shift: checkpointed(checkpoint_fn, spec, layers, x, shift), spec)


def run_checkpoint(pkg, spec: dict) -> dict:
    """Scenario: the spec's block through `checkpoint` under test (`checkpointed`), forward and backward."""
    return block_run(pkg.activation_checkpointing.checkpoint, spec)


def run_sequential(pkg, spec: dict, segments: int | None) -> dict:
    """Scenario: `checkpoint_sequential(layers, x, segments)` under test (segments=None: its default)."""
    seq = pkg.activation_checkpointing.checkpoint_sequential
    args = () if segments is None else (segments,)
    return _measure(lambda layers, x, shift: seq(layers, x, *args), spec)


def analytic(pkg, queries: list) -> list:
    """Scenario: the analytic models under test on a list of [name, *args] queries; a query that raises
    answers {"raised": the exception's type name}."""
    module = pkg.activation_checkpointing
    answers = []
    for name, *args in queries:
        try:
            answers.append(getattr(module, name)(*args))
        except NotImplementedError:  # an untouched stub: a failure, not an answer
            raise
        except Exception as exc:  # noqa: BLE001 - the type is the answer
            answers.append({"raised": type(exc).__name__})
    return answers


def checkpoint_error(pkg, layers: int, segments: int) -> str | None:
    """Scenario: the name of the exception checkpoint_sequential raises for `segments`, or None."""
    spec = {"seed": 0, "layers": layers, "batch": 2, "width": 3, "dtype": "float64"}
    model, x, _, _ = make_model(spec)
    try:
        pkg.activation_checkpointing.checkpoint_sequential(model, x, segments)
    except NotImplementedError:  # an untouched stub: a failure, not an answer
        raise
    except Exception as exc:  # noqa: BLE001 - the type is the answer
        return type(exc).__name__
    return None


# -- audit ---------------------------------------------------------------------------------------------------

def _forbidden(*args, **kwargs):
    raise RuntimeError("torch.utils.checkpoint is the oracle: the solution may not use it")


def run_without_oracle(pkg, spec: dict, segments: int | None) -> dict:
    """Scenario for the audit: run_checkpoint and run_sequential while torch.utils.checkpoint is unusable."""
    import torch.utils.checkpoint as tc

    names = ["checkpoint", "checkpoint_sequential", "CheckpointFunction", "_checkpoint_without_reentrant_generator"]
    saved = [(name, getattr(tc, name)) for name in names if hasattr(tc, name)]
    for name, _ in saved:
        setattr(tc, name, _forbidden)
    try:
        return {"block": run_checkpoint(pkg, spec), "sequential": run_sequential(pkg, spec, segments)}
    finally:
        for name, value in saved:
            setattr(tc, name, value)
