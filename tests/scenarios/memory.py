"""Models for the memory problem, described as data, and the scenarios that measure them.

A spec builds the same model, with the same weights, on both sides of the seam: the scenario runs the
code under test on it in the worker, and the oracle (`oracle_*`, test process only) measures its own copy
with torch alone.
"""

import functools

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


def oracle_parameters(spec: dict) -> dict:
    """torch's own accounting: `Module.parameters()` (each Parameter once), numel() * element_size()."""
    params = list(build_model(spec).parameters())
    return {"count": nn.utils.parameters_to_vector([p.float() for p in params]).numel(),
            "bytes": sum(p.numel() * p.element_size() for p in params)}


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


def mlp_spec(batch: int, width: int, layers: int, dtype: str, seed: int = 0) -> dict:
    """The stack `mlp_activation_bytes` describes: `layers` Linear(width, width) with a ReLU between each
    two, input batch x width without grad."""
    stack = []
    for i in range(layers):
        stack += ([["relu"]] if i else []) + [["linear", width, False]]
    return {"width": width, "layers": stack, "batch": batch, "seq": 0, "dtype": dtype, "input_grad": False,
            "seed": seed}


def _loss(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return model(x).float().sum()


def _grads(spec: dict, model: nn.Module, x: torch.Tensor) -> list:
    """The gradients after backward, to compare (none for big models: `"check_grads": False`)."""
    if not spec.get("check_grads", True):
        return []
    return [p.grad for p in model.parameters()] + ([x.grad] if spec["input_grad"] else [])


def saved(pkg, spec: dict) -> dict:
    """Scenario: SavedActivations around the forward pass, then backward; the count and the gradients."""
    model, x = build_stack(spec)
    with pkg.memory.SavedActivations() as measured:
        loss = _loss(model, x)
    loss.backward()
    return {"total": measured.total, "storages": measured.storages, "grads": _grads(spec, model, x)}


def saved_twice(pkg, first: dict, second: dict) -> dict:
    """Scenario: one SavedActivations entered twice; what it holds after the second forward. The first
    forward's graph stays alive through the second, so no storage of the second can reuse a freed address of
    the first: a meter that keeps what it saw by address (and never resets) counts the same every run."""
    meter = pkg.memory.SavedActivations()
    graphs = []
    for spec in (first, second):
        model, x = build_stack(spec)
        with meter:
            graphs.append(_loss(model, x))
    return {"total": meter.total, "storages": meter.storages}


def _saved_by_graph(root) -> list[torch.Tensor]:
    """Every tensor the autograd graph below `root` holds for backward, read from the nodes' `_saved_*`
    attributes (a different mechanism from saved_tensors_hooks)."""
    seen, stack, tensors = set(), [root], []
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        for name in dir(node):
            if name.startswith("_saved_"):
                value = getattr(node, name)
                values = value if isinstance(value, (tuple, list)) else [value]
                tensors += [v for v in values if isinstance(v, torch.Tensor)]
        stack += [next_node for next_node, _ in node.next_functions]
    return tensors


def oracle_saved(spec: dict) -> dict:
    """The bytes the autograd graph keeps, each storage once, parameters' storages excluded; and the
    gradients of a plain backward (no hooks)."""
    model, x = build_stack(spec)
    loss = _loss(model, x)
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    storages = {}
    for t in _saved_by_graph(loss.grad_fn):
        s = t.untyped_storage()
        if s.data_ptr() not in params:
            storages[s.data_ptr()] = s.nbytes()
    loss.backward()
    return {"total": sum(storages.values()), "storages": len(storages), "grads": _grads(spec, model, x)}


# -- what a real optimizer keeps -----------------------------------------------------------------------

OPTIMIZERS = {
    "sgd": lambda ps: torch.optim.SGD(ps, lr=0.1),
    "sgd_momentum": lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
    "adagrad": lambda ps: torch.optim.Adagrad(ps, lr=0.1),
    "adamw": lambda ps: torch.optim.AdamW(ps, lr=0.1),
}


@functools.cache
def oracle_state_tensors(optimizer: str, shape: tuple[int, int] = (3, 5)) -> dict:
    """After one step of the real torch optimizer on a float32 parameter of `shape`: how many state
    tensors the size of the parameter it holds, and the bytes of everything a training step keeps
    (parameter, gradient, those state tensors)."""
    p = nn.Parameter(torch.randn(*shape))
    opt = OPTIMIZERS[optimizer]([p])
    p.grad = torch.randn(*shape)
    opt.step()
    state = [t for t in opt.state[p].values() if isinstance(t, torch.Tensor) and t.shape == p.shape]
    return {"tensors": len(state),
            "bytes": p.nbytes + p.grad.nbytes + sum(t.nbytes for t in state)}
