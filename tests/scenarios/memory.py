"""Models for the memory problem, described as data, and the scenarios that measure them.

A spec builds the same model, with the same weights, on both sides of the seam: the scenario runs the
code under test on it in the worker, and the oracle (tests/oracles.py `oracle_parameters`, `oracle_saved`,
`oracle_state_tensors`) measures its own copy in the test process with torch alone.
"""

import torch
from torch import nn

DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16, "float16": torch.float16}


# -- modules with tied, shared, frozen and mixed-dtype parameters ----------------------------------------

def build_model(spec: dict) -> nn.Module:
    """Embedding -> blocks (Linear, ReLU, Linear, norm) -> LM head; the spec says what is tied or shared.

    - `tie`: the head's weight is the embedding's weight (one Parameter in two modules);
    - `share`: the first block appears twice in the block list (its Parameters twice in the tree);
    - `norm`: "layernorm", "batchnorm" (which also has buffers, not parameters) or None;
    - `frozen`: the embedding does not require a gradient (still a parameter);
    - `dtype`: the blocks' dtype (the embedding and head stay float32).
    """
    d, hidden, vocab = spec["d"], spec["hidden"], spec["vocab"]
    embed = nn.Embedding(vocab, d)
    embed.weight.requires_grad_(not spec["frozen"])
    blocks = []
    for _ in range(spec["n_blocks"]):
        layers = [nn.Linear(d, hidden, bias=spec["bias"]), nn.ReLU(), nn.Linear(hidden, d, bias=spec["bias"])]
        if spec["norm"] == "layernorm":
            layers.append(nn.LayerNorm(d))
        elif spec["norm"] == "batchnorm":
            layers.append(nn.BatchNorm1d(d))
        blocks.append(nn.Sequential(*layers))
    if spec["share"]:
        blocks.insert(1, blocks[0])
    body = nn.ModuleList(blocks).to(DTYPES[spec["dtype"]])
    head = nn.Linear(d, vocab, bias=False)
    if spec["tie"]:
        head.weight = embed.weight
    return nn.ModuleDict({"embed": embed, "blocks": body, "head": head})


def parameters(pkg, spec: dict) -> dict:
    """Scenario: parameter_count and parameter_bytes of the model `spec` builds."""
    model = build_model(spec)
    return {"count": pkg.memory.parameter_count(model), "bytes": pkg.memory.parameter_bytes(model)}


# -- stacks whose saved activations are measured ----------------------------------------------------------

class _Slice(nn.Module):
    """Drops the first feature: the output is a view into its input's storage, at an offset."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[..., 1:]


_ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid}


def build_stack(spec: dict) -> tuple[nn.Module, torch.Tensor]:
    """The model and input of a stack spec: {"width": w0, "layers": [["linear", d_out, bias], ["relu"],
    ["layernorm"], ["slice"], ...], "batch", "seq" (0: 2-D input), "dtype", "input_grad", "seed"}."""
    torch.manual_seed(spec["seed"])
    dtype, width, modules = DTYPES[spec["dtype"]], spec["width"], []
    for kind, *args in spec["layers"]:
        if kind == "linear":
            modules.append(nn.Linear(width, args[0], bias=args[1]))
            width = args[0]
        elif kind == "layernorm":
            modules.append(nn.LayerNorm(width))
        elif kind == "slice":
            modules.append(_Slice())
            width -= 1
        else:
            modules.append(_ACTIVATIONS[kind]())
    model = nn.Sequential(*modules).to(dtype)
    leading = [spec["batch"]] + ([spec["seq"]] if spec["seq"] else [])
    x = torch.randn(*leading, spec["width"], dtype=dtype, requires_grad=spec["input_grad"])
    return model, x


def _loss(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return model(x).float().sum()


def _grads(spec: dict, model: nn.Module, x: torch.Tensor) -> list:
    """The gradients after backward, to compare (none for big models: `"check_grads": False`)."""
    if not spec.get("check_grads", True):
        return []
    return [p.grad for p in model.parameters()] + ([x.grad] if spec["input_grad"] else [])


def saved(pkg, spec: dict) -> dict:
    """Scenario: SavedActivations around the forward pass, then backward; the count, the gradients, and whether
    saved-tensor hooks were on inside the `with` block (the meter's, through which backward gets what was saved)."""
    model, x = build_stack(spec)
    with pkg.memory.SavedActivations() as measured:
        hooked = torch._C._autograd._top_saved_tensors_default_hooks(False) is not None
        loss = _loss(model, x)
    loss.backward()
    return {"total": measured.total, "storages": measured.storages, "grads": _grads(spec, model, x),
            "hooked": hooked}


def saved_twice(pkg, first: dict, second: dict) -> dict:
    """Scenario: one SavedActivations entered twice, and what it holds after the second forward ("reused"); a
    fresh one around the second forward alone ("fresh"). The first
    forward's graph stays alive through the second, so no storage of the second can reuse a freed address of
    the first: a meter that keeps what it saw by address (and never resets) counts the same every run."""
    meter = pkg.memory.SavedActivations()
    graphs = []
    for spec in (first, second):
        model, x = build_stack(spec)
        with meter:
            graphs.append(_loss(model, x))
    model, x = build_stack(second)
    with pkg.memory.SavedActivations() as fresh:
        graphs.append(_loss(model, x))
    return {"reused": {"total": meter.total, "storages": meter.storages},
            "fresh": {"total": fresh.total, "storages": fresh.storages}}


# -- what a real optimizer keeps -----------------------------------------------------------------------
# The optimizers whose state the tests measure (tests/oracles.py `oracle_state_tensors`); grader/fingerprints/inputs.py
# draws from their names.

OPTIMIZERS = {
    "sgd": lambda ps: torch.optim.SGD(ps, lr=0.1),
    "sgd_momentum": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
    "adagrad": lambda ps: torch.optim.Adagrad(ps, lr=0.1),
    "adamw": lambda ps: torch.optim.AdamW(ps, lr=0.1),
}
