"""The oracles: every oracle run and every computation of an expected answer, in the test process only.

Each function computes what a test compares the code under test with, on the same seeded workload that a
scenario (tests/scenarios/) runs beside the code under test, built by the scenarios' own helpers: it runs an
oracle (torch's FLOP counter, torch's AdamW and other optimizers, torch.utils.checkpoint, autograd's own graph,
PyTorch's decomposition of GELU, the `statistics` module) or the plain computation that the code under test must
match (a backward without checkpointing, a full-batch step, float32 steps, the calls benchmark must make). This
module is not in the worker's tree (grader/harness/boundary.py: WORKER) and nothing the worker imports refers
to it: the worker has no oracle in it (grader/harness/absent.py), so no scenario can be made to run one for the
code under test, and the code under test cannot call one for its answer. tests/meta/test_worker_world.py checks
that nothing the test process alone runs is left in tests/scenarios/: every function there is reached by a
scenario.
"""

import functools
import statistics
import warnings

import torch
import torch.nn.functional as F
from torch import nn
from torch._decomp import get_decompositions
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from assignment.given import TransformerConfig
from tests.scenarios import (
    activation_checkpointing,
    adamw,
    benchmarking,
    flops,
    gradient_accumulation,
    memory,
    precision,
)

META = torch.device("meta")


# -- training loops (gradient_accumulation, precision) -----------------------------------------------------

def plain_training(model, optimizer, loss_fn, batches) -> dict:
    """The plain loop that mixed precision and gradient accumulation are compared with: for each (inputs,
    targets) batch, zero the gradients, one forward and backward on the whole batch, one optimizer step.
    Returns the losses (floats) and the final parameters."""
    losses = []
    for inputs, targets in batches:
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return {"losses": losses, "params": [p.detach().clone() for p in model.parameters()]}


# -- flops ---------------------------------------------------------------------------------------------------

def _flop_counts(run) -> dict:
    """What FlopCounterMode counts while `run()` runs: {"total": int, "by_op": {"aten.mm": int, ...}}."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as mode:
        run()
    by_op = {str(op): n for op, n in mode.get_flop_counts().get("Global", {}).items() if n}
    return {"total": mode.get_total_flops(), "by_op": by_op}


def oracle_count(spec: dict) -> dict:
    """What FlopCounterMode counts for the workload (tests/scenarios/flops.py; a transformer's as `workload` records
    it: the worker runs the same)."""
    runnable = workload(spec)  # recorded before the count: the recording runs the model
    return _flop_counts(lambda: flops.run_workload(runnable))


class Block(nn.Module):
    """One layer of `TransformerConfig`'s architecture (its docstring), except that each head is WIDER wider in its
    queries and keys and the MLP WIDER units wider."""

    WIDER = 0

    def __init__(self, c: TransformerConfig, device=None):
        super().__init__()
        d, qk, ff = c.d_model, c.d_head + self.WIDER, c.d_ff + self.WIDER
        self.c, self.qk = c, qk
        self.norm1, self.norm2 = nn.RMSNorm(d, device=device), nn.RMSNorm(d, device=device)
        self.wq = nn.Linear(d, c.n_heads * qk, bias=False, device=device)
        self.wk = nn.Linear(d, c.kv_heads * qk, bias=False, device=device)
        self.wv = nn.Linear(d, c.kv_heads * c.d_head, bias=False, device=device)
        self.wo = nn.Linear(d, d, bias=False, device=device)
        self.up = nn.Linear(d, ff, bias=False, device=device)
        self.gate = nn.Linear(d, ff, bias=False, device=device) if c.gated_mlp else None
        self.down = nn.Linear(ff, d, bias=False, device=device)

    def _heads(self, x: torch.Tensor, n: int, size: int) -> torch.Tensor:
        b, s, _ = x.shape
        x = x.view(b, s, n, size).transpose(1, 2)
        return x.repeat_interleave(self.c.n_heads // n, dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c, (b, s, d) = self.c, x.shape
        h = self.norm1(x)
        q = self._heads(self.wq(h), c.n_heads, self.qk)
        k, v = self._heads(self.wk(h), c.kv_heads, self.qk), self._heads(self.wv(h), c.kv_heads, c.d_head)
        with sdpa_kernel(SDPBackend.MATH):
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=c.d_head**-0.5)
        x = x + self.wo(a.transpose(1, 2).reshape(b, s, d))
        h = self.norm2(x)
        m = F.silu(self.gate(h)) * self.up(h) if self.gate is not None else F.gelu(self.up(h))
        return x + self.down(m)


class ConfigTransformer(nn.Module):
    """The torch model of a `TransformerConfig`, exactly: what the closed-form functions are graded against. It is
    built here alone, in the test process; the worker never holds a model (tests/scenarios/flops.py)."""

    block = Block

    def __init__(self, c: TransformerConfig, device=None):
        super().__init__()
        self.embed = nn.Embedding(c.vocab_size, c.d_model, device=device)
        self.blocks = nn.ModuleList(self.block(c, device) for _ in range(c.n_layers))
        self.norm = nn.RMSNorm(c.d_model, device=device)
        self.head = nn.Linear(c.d_model, c.vocab_size, bias=False, device=device)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


class _WiderBlock(Block):
    WIDER = 1


class WorkloadTransformer(ConfigTransformer):
    """The counter's transformer workload: another model (heads wider in queries and keys, the MLP wider), so that
    even its recorded ops answer none of the closed-form functions."""

    block = _WiderBlock


def encoded(value):
    """An argument of an ATen op as data the worker can take (tests/scenarios/flops.py `_decoded`)."""
    if isinstance(value, torch.Tensor):
        return {"tensor": [list(value.shape), list(value.stride()), str(value.dtype).removeprefix("torch."),
                           value.storage_offset()]}
    if isinstance(value, torch.dtype | torch.layout | torch.memory_format):
        return {"torch": str(value).removeprefix("torch.")}
    if isinstance(value, torch.device):
        return {"device": str(value)}
    if isinstance(value, list | tuple):
        return [encoded(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise TypeError(f"an op's argument the trace cannot carry: {type(value).__name__}")


class _Recorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops: list = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.ops.append([func.namespace, func.overloadpacket.__name__, func._overloadname, encoded(list(args)),
                         {k: encoded(v) for k, v in kwargs.items()}])
        return func(*args, **kwargs)


def workload(spec: dict) -> dict:
    """What the worker runs for `spec`: a transformer's (kind "transformer": its config, batch, seq, backward) as
    the ops of `WorkloadTransformer` recorded here (kind "trace"); any other kind as it is."""
    if spec["kind"] != "transformer":
        return spec
    model = WorkloadTransformer(spec["config"], device=META)
    tokens = torch.zeros(spec["batch"], spec["seq"], dtype=torch.long, device=META)
    with _Recorder() as recorder:
        loss = model(tokens).sum()
        if spec.get("backward"):
            loss.backward()
    return {"kind": "trace", "ops": recorder.ops}


def model_count(config: TransformerConfig, batch: int, seq: int, backward: bool = False) -> dict:
    """What FlopCounterMode counts for the forward (and backward) of the config's own model on the meta device:
    {"total": int, "by_op": {...}}."""
    model = ConfigTransformer(config, device=META)
    tokens = torch.zeros(batch, seq, dtype=torch.long, device=META)

    def run():
        loss = model(tokens).sum()
        if backward:
            loss.backward()
    return _flop_counts(run)


def param_count(config: TransformerConfig) -> int:
    """Parameters of the torch model built from `config` (the oracle for transformer_param_count)."""
    return sum(p.numel() for p in ConfigTransformer(config, device=META).parameters())


# -- adamw ---------------------------------------------------------------------------------------------------

def torch_trajectory(spec: dict) -> dict:
    """torch.optim.AdamW (default implementation on the CPU) on the spec's trajectory."""
    return adamw.trajectory(torch.optim.AdamW, spec)


def emulated_fp32_state_trajectory(spec: dict) -> dict:
    """For bfloat16 parameters with float32 state: torch.optim.AdamW on a float32 copy of each parameter,
    which is rounded to bfloat16 after every step (that rounded value is what the next step starts from) and
    fed the bfloat16 gradient."""
    params, grads, _ = adamw.make_problem(spec)
    wide = [nn.Parameter(p.detach().float()) for p in params]
    optimizer = torch.optim.AdamW(adamw.groups(spec, wide))
    for grads_of_step in grads:
        for w, g in zip(wide, grads_of_step, strict=True):
            w.grad = None if g is None else g.float()
        optimizer.step()
        with torch.no_grad():
            for p, w in zip(params, wide, strict=True):
                p.copy_(w)  # round to bfloat16
                w.copy_(p)
    states = []
    for w in wide:
        state = optimizer.state.get(w, {})
        states.append({} if not state else {"step": int(state["step"]), "exp_avg": state["exp_avg"].clone(),
                                            "exp_avg_sq": state["exp_avg_sq"].clone()})
    return {"params": [p.detach().clone() for p in params], "state": states, "losses": []}


TORCH_OPTIMIZERS = {"torch_adamw": lambda params: torch.optim.AdamW(params, lr=1e-2),
                    "torch_sgd_momentum": lambda params: torch.optim.SGD(params, lr=1e-2, momentum=0.9)}


def torch_state(spec: dict, kind: str, steps: int = 1) -> list | None:
    """The state of torch's optimizer `kind` ("torch_adamw", "torch_sgd_momentum") after `steps` steps with
    the spec's first gradients: per parameter, its state's tensors ({} before its first step). None for
    "ours" (the optimizer under test, which the scenario builds). The scenario `adamw.state_bytes` hands it
    to the code under test in a stand-in optimizer (`adamw.Replayed`)."""
    if kind == "ours":
        return None
    params, grads, _ = adamw.make_problem(spec)
    optimizer = TORCH_OPTIMIZERS[kind](params)
    for _ in range(steps):
        for p, g in zip(params, grads[0], strict=True):
            p.grad = None if g is None else g.clone()
        optimizer.step()
    return [{k: v.detach().clone() for k, v in optimizer.state.get(p, {}).items() if isinstance(v, torch.Tensor)}
            for p in params]


def measured_state_bytes(spec: dict, kind: str, steps: int = 1) -> int:
    """The bytes of every tensor in the state of torch's optimizer `kind` after `steps` steps."""
    return sum(v.numel() * v.element_size() for state in torch_state(spec, kind, steps) for v in state.values())


# -- activation_checkpointing --------------------------------------------------------------------------------

def torch_checkpoint(spec: dict) -> dict:
    """The checkpointed block through torch.utils.checkpoint (non-reentrant, RNG state preserved). Saved
    bytes are not comparable (it packs through hooks of its own)."""
    import torch.utils.checkpoint as tc

    return activation_checkpointing.block_run(
        lambda fn, *args: tc.checkpoint(fn, *args, use_reentrant=False, preserve_rng_state=True), spec)


def _plain(fn, *args):
    return fn(*args)


def plain_checkpoint(spec: dict) -> dict:
    """The checkpointed block without checkpointing."""
    return activation_checkpointing.block_run(_plain, spec)


def plain_sequential(spec: dict) -> dict:
    """The layers of checkpoint_sequential one after the other, everything stored."""
    def forward(layers, x, shift):
        for layer in layers:
            x = layer(x)
        return x
    return activation_checkpointing._measure(forward, spec)


def store_none_backward_calls(spec: dict) -> int:
    """The oracle for recompute_flops('store_none'): keep only x; for the backward of layer i (last to first),
    rerun layers 0..i from x (i under grad) and backpropagate through layer i. Returns the number of layer calls
    made during backward."""
    log = activation_checkpointing._LOG  # where every call of a layer is logged
    layers, x, _, upstream = activation_checkpointing.make_model(dict(spec, dropout=0.0))
    with torch.no_grad():
        out = x
        for layer in layers:
            out = layer(out)
    log.clear()
    grad = upstream
    for i in reversed(range(len(layers))):
        with torch.no_grad():
            h = x
            for layer in layers[:i]:
                h = layer(h)
        h = h.detach().requires_grad_(True)
        layers[i](h).backward(grad)
        grad = h.grad
    calls = len(activation_checkpointing._calls(log))
    log.clear()
    return calls


# -- benchmarking --------------------------------------------------------------------------------------------

def expected_benchmark(spec: dict, synced: bool = True) -> dict:
    """The calls benchmark must make, in order (warm-up calls, then per trial sync, clock, fn, sync, clock; no
    sync where none is used), played on the fake device (tests/scenarios/benchmarking.py `FakeDevice`); the
    times they measure and their statistics from the `statistics` module."""
    device = benchmarking.FakeDevice(spec)
    for _ in range(spec["warmup"]):
        device.fn()
    times = []
    for _ in range(spec["trials"]):
        if synced:
            device.sync()
        start = device.clock()
        device.fn()
        if synced:
            device.sync()
        times.append(device.clock() - start)
    return {"events": device.events, "times": times, "mean": statistics.fmean(times),
            "median": statistics.median(times), "std": statistics.pstdev(times)}


# -- gradient_accumulation -----------------------------------------------------------------------------------

def full_batch(spec: dict) -> dict:
    """The loss and gradients of one plain backward on the whole batch."""
    model, [(inputs, targets)] = gradient_accumulation.build(spec)
    loss = gradient_accumulation.loss_fn_of(spec)(model(inputs), targets)
    loss.backward()
    return {"loss": loss.item(), "grads": gradient_accumulation._grads(model)}


def full_batch_training(spec: dict) -> dict:
    """The steps of train_step done by torch.optim.SGD, each on the whole batch."""
    model, batches = gradient_accumulation.build(spec)
    return plain_training(model, gradient_accumulation._optimizer(model, spec),
                          gradient_accumulation.loss_fn_of(spec), batches)


def plain_peak(spec: dict, rows: int) -> int:
    """The peak saved-activation bytes of one plain forward and backward on the first `rows` examples of the
    spec's batch (tests/scenarios/gradient_accumulation.py `SavedPeak`, the tests' own instrument)."""
    model, [(inputs, targets)] = gradient_accumulation.build(spec)
    with gradient_accumulation.SavedPeak(model) as meter:
        gradient_accumulation.loss_fn_of(spec)(model(inputs[:rows]), targets[:rows]).backward()
    return meter.peak


def micro_batch_losses(spec: dict) -> list[tuple[int, float]]:
    """Each micro-batch's size and mean loss, for naming what a wrong loss is."""
    model, [(inputs, targets)] = gradient_accumulation.build(spec)
    loss_fn, m = gradient_accumulation.loss_fn_of(spec), spec["micro_batch_size"]
    with torch.no_grad():
        return [(len(inputs[i:i + m]), loss_fn(model(inputs[i:i + m]), targets[i:i + m]).item())
                for i in range(0, len(inputs), max(m, 1))]


# -- memory --------------------------------------------------------------------------------------------------

def oracle_parameters(spec: dict) -> dict:
    """torch's own accounting of the model `spec` builds: `Module.parameters()` (each Parameter once),
    numel() * element_size()."""
    params = list(memory.build_model(spec).parameters())
    return {"count": nn.utils.parameters_to_vector([p.float() for p in params]).numel(),
            "bytes": sum(p.numel() * p.element_size() for p in params)}


def mlp_spec(batch: int, width: int, layers: int, dtype: str, seed: int = 0) -> dict:
    """The stack spec (tests/scenarios/memory.py `build_stack`) of what `mlp_activation_bytes` describes:
    `layers` Linear(width, width) with a ReLU between each two, input batch x width without grad."""
    stack = []
    for i in range(layers):
        stack += ([["relu"]] if i else []) + [["linear", width, False]]
    return {"width": width, "layers": stack, "batch": batch, "seq": 0, "dtype": dtype, "input_grad": False,
            "seed": seed}


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
    """The bytes the autograd graph of the stack `spec` builds keeps, each storage once, parameters' storages
    excluded; and the gradients of a plain backward (no hooks)."""
    model, x = memory.build_stack(spec)
    loss = memory._loss(model, x)
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    storages = {}
    for t in _saved_by_graph(loss.grad_fn):
        s = t.untyped_storage()
        if s.data_ptr() not in params:
            storages[s.data_ptr()] = s.nbytes()
    loss.backward()
    return {"total": sum(storages.values()), "storages": len(storages), "grads": memory._grads(spec, model, x)}


@functools.cache
def oracle_state_tensors(optimizer: str, shape: tuple[int, int] = (3, 5)) -> dict:
    """After one step of the real torch optimizer (tests/scenarios/memory.py `OPTIMIZERS`) on a float32
    parameter of `shape`: how many state tensors the size of the parameter it holds, and the bytes of
    everything a training step keeps (parameter, gradient, those state tensors)."""
    p = nn.Parameter(torch.randn(*shape))
    opt = memory.OPTIMIZERS[optimizer]([p])
    p.grad = torch.randn(*shape)
    opt.step()
    state = [t for t in opt.state[p].values() if isinstance(t, torch.Tensor) and t.shape == p.shape]
    return {"tensors": len(state),
            "bytes": p.nbytes + p.grad.nbytes + sum(t.nbytes for t in state)}


# -- precision -----------------------------------------------------------------------------------------------

def fp32_steps(spec: dict) -> dict:
    """The steps of mixed_steps in plain float32, no autocast, no scaler."""
    model, batches = precision.build(spec)
    return plain_training(model, precision.optimizer_of(model, spec), precision.loss_fn_of(spec), batches)


def initial_params(spec: dict) -> list[torch.Tensor]:
    """The parameters of the spec's model before any step."""
    return [p.detach().clone() for p in precision.build(spec)[0].parameters()]


# -- roofline ------------------------------------------------------------------------------------------------
# FLOPs come from torch: `FlopCounterMode` for the products, and PyTorch's own decomposition of GELU into
# element-wise operations for GELU. Bytes come from the sizes of the tensors an op reads and writes. All on the
# meta device: shapes and dtypes, nothing allocated.

def _meta(*shape, dtype=torch.float32) -> torch.Tensor:
    return torch.empty(shape, dtype=dtype, device=META)


def _nbytes(tensors, dtype: torch.dtype) -> int:
    """Bytes of tensors of these shapes in `dtype` (a meta tensor of each, measured by torch)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sum(_meta(*t.shape, dtype=dtype).nbytes for t in tensors)


def _counted_flops(fn, *inputs) -> int:
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as mode:
        fn(*inputs)
    return mode.get_total_flops()


class _Elements(TorchDispatchMode):
    """The elements that the ops run under it write: one FLOP each, for element-wise ops."""

    def __init__(self):
        super().__init__()
        self.elements = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.elements += sum(t.numel() for t in tree_leaves(out) if isinstance(t, torch.Tensor))
        return out


@functools.lru_cache(maxsize=256)
def _gelu_flops(n: int, approximate: str) -> int:
    """One FLOP per element per element-wise op in PyTorch's decomposition of aten.gelu, run on a meta tensor
    of n elements (what make_fx would trace of it: tests/meta/test_front_end.py compares the two; make_fx
    itself would import torch's compiler front end, grader/harness/front_end.py)."""
    gelu = get_decompositions([torch.ops.aten.gelu])[torch.ops.aten.gelu.default]
    x = _meta(n)
    with _Elements() as mode:
        gelu(x, approximate=approximate)
    return mode.elements


def oracle_cost(kind: str, sizes: tuple, dtype: torch.dtype) -> dict:
    """{"flops", "bytes"} of the op `kind` on `sizes`, measured with torch."""
    if kind in ("relu", "gelu", "gelu_tanh"):
        (n,) = sizes
        x = _meta(n)
        y = F.relu(x) if kind == "relu" else F.gelu(x)
        flops = n if kind == "relu" else _gelu_flops(n, "tanh" if kind == "gelu_tanh" else "none")
        return {"flops": flops, "bytes": _nbytes([x, y], dtype)}
    if kind == "dot":
        (n,) = sizes
        x, y = _meta(n), _meta(n)
        flops = _counted_flops(torch.mm, x.view(1, n), y.view(n, 1))
        return {"flops": flops, "bytes": _nbytes([x, y, torch.dot(x, y)], dtype)}
    if kind == "matvec":
        m, n = sizes
        a, x = _meta(m, n), _meta(n)
        flops = _counted_flops(torch.mm, a, x.view(n, 1))
        return {"flops": flops, "bytes": _nbytes([a, x, torch.mv(a, x)], dtype)}
    if kind == "matmul":
        b, d, k = sizes
        x, w = _meta(b, d), _meta(d, k)
        return {"flops": _counted_flops(torch.mm, x, w), "bytes": _nbytes([x, w, x @ w], dtype)}
    raise ValueError(kind)
