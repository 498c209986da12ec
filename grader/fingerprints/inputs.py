"""What the fingerprints (and `resource-grader compare`) call, per problem: each comparable function, the
hypothesis strategy its inputs are drawn from (the suite's own strategies, tests/strategies/, as the
differential tests combine them), and the tolerance its tests compare with. Functions that only make sense
inside a scenario (a training loop, a timing, a file written) are listed in NOT_COMPARABLE with the reason.

It imports the tests' strategies; the answers on these inputs need the reference (comparer.py).
"""

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from hypothesis import assume
from hypothesis import strategies as st

from assignment.given import HARDWARE, FloatFormat
from tests import strategies as s
from tests.common.mini_einops import FLOAT_TOL
from tests.strategies import flops as s_flops
from tests.strategies import memory as s_memory
from tests.strategies import mini_einops as s_mini_einops
from tests.strategies import precision as s_precision
from tests.strategies import tensors as s_tensors


@dataclass(frozen=True)
class Entry:
    """One comparable function. `inputs` draws (args, kwargs); the call is `module.name(*args, **kwargs)`, or
    `package.run(scenario, *args, **kwargs)` for a class that lives in a scenario (then `covers` names the
    public names its answer depends on). Python floats are compared within `rel` (relative), tensors with
    `tensor_tol` (dtype name -> (rtol, atol); missing: exact), everything else exactly, types included."""

    name: str  # the function called (for a scenario: a label)
    inputs: st.SearchStrategy
    rel: float = 0.0
    tensor_tol: dict = field(default_factory=dict)
    scenario: Callable | None = None
    covers: tuple = ()
    normalize: Callable | None = None  # answer -> the part compared (both sides)
    tolerance: str = "exact"
    pool: int = 5  # examples generated per one kept (comparer.py draw_inputs)
    label: str = ""  # where one function has several entries (inputs of different kinds)

    @property
    def key(self) -> str:
        return self.label or self.name

    @property
    def names(self) -> tuple:
        return self.covers or (self.name,)


def plain(strategy) -> st.SearchStrategy:
    """A strategy of argument tuples as (args, {})."""
    return strategy.map(lambda args: (tuple(args), {}))


def _rel(rel: float) -> str:
    return f"floats within rel {rel:g}, ints exact"


# -- flops ---------------------------------------------------------------------------------------------------

def _flops() -> list[Entry]:
    from tests.common.flops import REL as rel
    from tests.scenarios import flops as scenarios

    batches, seqs = st.integers(1, 4), st.integers(1, 12)
    model = st.tuples(s_flops.transformer_configs(), batches, seqs)

    program = st.builds(lambda ops, backward: {"kind": "program", "ops": ops, "backward": backward},
                        s_flops.matmul_programs(), st.booleans())

    @st.composite
    def mlp(draw):
        return {"kind": "mlp", "dims": draw(st.lists(st.integers(1, 12), min_size=2, max_size=4)),
                "batch": draw(st.integers(1, 6)), "extra_dim": draw(st.sampled_from([0, 3])),
                "bias": draw(st.booleans()), "input_grad": draw(st.booleans()), "backward": draw(st.booleans())}

    @st.composite
    def fused(draw):
        batch, heads, s_q, s_k, d_qk, d_v = draw(s.distinct_sizes(6, 1, 9))
        variant = draw(st.sampled_from(["flash", "efficient", "cudnn"]))
        return {"kind": "fused_attention", "variant": variant, "batch": batch, "heads": heads, "s_q": s_q,
                "s_k": s_k, "d_qk": d_qk, "d_v": d_qk if variant == "flash" else d_v, "backward": True}

    # one workload of each kind per input (the counter's mistakes each show on one kind)
    workloads = st.tuples(program, mlp(), fused()).map(lambda specs: (list(specs),))

    return [
        Entry("matmul_flops", plain(s.distinct_sizes(3))),
        Entry("linear_flops", plain(st.tuples(st.integers(1, 48), st.integers(1, 30), st.integers(1, 30)))),
        Entry("attention_score_flops", plain(model)),
        Entry("transformer_forward_flops", plain(model)),
        Entry("training_step_flops", plain(model)),
        Entry("mlp_training_flops", plain(st.tuples(st.integers(1, 9), st.lists(st.integers(1, 12), min_size=2,
                                                                                 max_size=5)))),
        Entry("transformer_param_count", plain(st.tuples(s_flops.transformer_configs()))),
        Entry("approx_training_flops", plain(s.big_sizes(2))),
        Entry("attention_flops_fraction", plain(st.tuples(s_flops.transformer_configs(), seqs)), rel=rel,
              tolerance=_rel(rel)),
        Entry("training_days", plain(st.tuples(st.floats(1e6, 1e12), st.floats(1e6, 1e14), st.integers(1, 4096),
                                               st.floats(1e12, 1e16), st.floats(0.01, 1.0))),
              rel=rel, tolerance=_rel(rel)),
        Entry("mfu", plain(st.tuples(st.floats(1e9, 1e20), st.floats(1e-3, 1e5), st.floats(1e12, 1e16))), rel=rel,
              tolerance=_rel(rel)),
        Entry("FlopCounter", plain(workloads), scenario=scenarios.count_each),
        Entry("FlopCounter entered twice", plain(st.tuples(program, program)), scenario=scenarios.count_twice,
              covers=("FlopCounter",)),
    ]


GRAD_TOL = {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-12), "bfloat16": (1e-2, 1e-3)}


# -- memory --------------------------------------------------------------------------------------------------

def _memory() -> list[Entry]:
    from tests.scenarios import memory as scenarios

    every = sorted({v for v in vars(torch).values() if isinstance(v, torch.dtype)}, key=str)
    dtypes = st.sampled_from(every) | st.sampled_from([d for d in every if str(d).endswith("x2")] or every)
    optimizers = st.sampled_from(sorted(scenarios.OPTIMIZERS))
    policy = s_memory.precision_policies()
    n = st.integers(0, 10**13)
    return [
        Entry("tensor_bytes", plain(st.tuples(st.lists(st.integers(0, 10**6), max_size=4).map(tuple), dtypes))),
        Entry("bytes_per_param", plain(st.tuples(policy, optimizers))),
        Entry("model_state_bytes", plain(st.tuples(n, policy, optimizers))),
        Entry("max_trainable_params", plain(st.tuples(n | n.map(float), policy, optimizers))),
        Entry("mlp_activation_bytes", plain(st.tuples(s.distinct_sizes(3, 1, 300), dtypes).map(
            lambda t: (*t[0], t[1])))),
        Entry("parameter_count", plain(st.tuples(s_memory.module_specs())), scenario=scenarios.parameters,
              covers=("parameter_count",), normalize=lambda answer: answer["count"]),
        Entry("parameter_bytes", plain(st.tuples(s_memory.module_specs())), scenario=scenarios.parameters,
              covers=("parameter_bytes",), normalize=lambda answer: answer["bytes"]),
        Entry("SavedActivations", plain(st.tuples(s_memory.stack_specs())), scenario=scenarios.saved,
              tensor_tol=GRAD_TOL,
              tolerance="counts exact; gradients float32 1e-5, float64 1e-12, bfloat16 1e-2"),
        Entry("SavedActivations entered twice", plain(st.tuples(s_memory.stack_specs(), s_memory.stack_specs())),
              scenario=scenarios.saved_twice, covers=("SavedActivations",)),
    ]


# -- roofline ------------------------------------------------------------------------------------------------

def _roofline() -> list[Entry]:
    from assignment.given import OpCost
    from tests.common.roofline import DTYPES
    from tests.common.roofline import REL as rel

    dtypes = st.sampled_from(DTYPES)
    hardware = st.sampled_from(sorted(HARDWARE)).flatmap(
        lambda name: st.tuples(st.just(HARDWARE[name]), st.sampled_from(sorted(HARDWARE[name].peak_flops, key=str))))
    costs = st.builds(OpCost, flops=st.integers(1, 10**15), bytes=st.integers(1, 10**13))
    size = st.integers(1, 10**4)

    @st.composite
    def at_ridge(draw):  # an intensity exactly at the ridge point (compute-bound there)
        hw, dtype = draw(hardware)
        k = draw(st.integers(1, 1000))
        return OpCost(flops=int(hw.peak(dtype)) * k, bytes=int(hw.memory_bandwidth) * k), hw, dtype

    return [
        Entry("relu_cost", plain(st.tuples(size, dtypes))),
        Entry("gelu_cost", plain(st.tuples(size, dtypes, st.sampled_from(["none", "tanh"])))),
        Entry("dot_cost", plain(st.tuples(size, dtypes))),
        Entry("matvec_cost", plain(st.tuples(size, size, dtypes))),
        Entry("matmul_cost", plain(st.tuples(size, size, size, dtypes))),
        Entry("arithmetic_intensity", plain(st.tuples(costs)), rel=rel, tolerance=_rel(rel)),
        Entry("accelerator_intensity", plain(hardware), rel=rel, tolerance=_rel(rel)),
        Entry("classify", plain(st.one_of(st.tuples(costs, hardware).map(lambda t: (t[0], *t[1])), at_ridge()))),
        Entry("roofline_time", plain(st.tuples(costs, hardware).map(lambda t: (t[0], *t[1]))), rel=rel,
              tolerance=_rel(rel)),
        Entry("attainable_flops_per_sec", plain(st.tuples(st.floats(1e-3, 1e5), hardware).map(lambda t: (t[0], *t[1]))),
              rel=rel, tolerance=_rel(rel)),
        Entry("min_compute_bound_batch", plain(st.tuples(size, size, hardware).map(lambda t: (t[0], t[1], *t[2])))),
    ]


# -- tensors -------------------------------------------------------------------------------------------------

def _tensors() -> list[Entry]:
    from tests.common.tensors import DTYPES, addressing

    chains = s_tensors.op_chains()
    fresh = st.tuples(s_tensors.op_chains(fresh=True, must_succeed=True), st.sampled_from(DTYPES)).map(
        lambda t: (t[0][0][0], t[1], t[0][1]))

    @st.composite
    def offsets(draw):
        shape, strides, offset = draw(s_tensors.tensor_layouts())
        index = tuple(draw(st.integers(0, max(size - 1, 0))) for size in shape)
        return index, strides, offset

    @st.composite
    def views(draw):
        shape, strides, _ = draw(s_tensors.tensor_layouts())
        return shape, strides, draw(s_tensors.view_shapes(shape, wrong=True))

    @st.composite
    def one_op(draw):
        layout, ops = draw(s_tensors.single_ops(draw(st.sampled_from(sorted(s_tensors.TENSOR_OP_FAMILIES)))))
        return (*layout, [draw(st.sampled_from(ops))] if ops else [("contiguous",)])

    @st.composite
    def op_of(draw, name):
        layout = draw(s_tensors.tensor_layouts())
        try:
            return (*layout, [s_tensors._draw_op(draw, layout[0], name)])
        except LookupError:
            assume(False)

    @st.composite
    def size_one_inside(draw):  # a contiguous layout with a size-1 dimension of a stride that matches nothing
        shape = list(draw(s.distinct_sizes(draw(st.integers(2, 3)), 2, 6)))
        strides = list(s_tensors.torch_contiguous_strides(tuple(shape)))
        at = draw(st.integers(1, len(shape) - 1))
        shape.insert(at, 1)
        strides.insert(at, draw(st.integers(0, 50)))
        return tuple(shape), tuple(strides), draw(s_tensors.view_shapes(tuple(shape)))

    @st.composite
    def fresh_expanded(draw):  # a fresh tensor with a size-1 dimension, expanded
        shape = list(draw(s_tensors.tensor_layouts(min_numel=1))[0]) or [1]
        shape[draw(st.integers(0, len(shape) - 1))] = 1
        try:
            op = s_tensors._draw_op(draw, tuple(shape), "expand")
        except LookupError:
            assume(False)
        return tuple(shape), draw(st.sampled_from(DTYPES)), [op]

    def entry(name, inputs, label=""):
        return Entry(name, plain(inputs), normalize=addressing, label=label,
                     tolerance="exact (strides of size-1 dimensions and layouts of empty tensors not compared)")

    return [
        entry("contiguous_strides", st.tuples(st.lists(st.integers(0, 6), max_size=4).map(tuple))),
        entry("element_offset", offsets()),
        entry("is_contiguous", s_tensors.tensor_layouts().map(lambda layout: layout[:2])),
        entry("can_view", views()),
        entry("can_view", size_one_inside(), label="can_view (size-1 dimension inside a run)"),
        *[entry("view_result", op_of(op), label=f"view_result ({op})") for op in s_tensors.TENSOR_OPS],
        entry("view_result", chains.map(lambda c: (*c[0], c[1])), label="view_result (chains)"),
        entry("nbytes", fresh, label="nbytes (chains)"),
        entry("nbytes", fresh_expanded(), label="nbytes (expand)"),
        entry("storage_nbytes", fresh, label="storage_nbytes (chains)"),
        entry("storage_nbytes", fresh_expanded(), label="storage_nbytes (expand)"),
    ]


# -- precision -----------------------------------------------------------------------------------------------

def _precision() -> list[Entry]:
    from tests.common.precision import SMALL_FORMATS, TORCH_FORMATS, decode_code, tensor_from_bits

    def torch_format(name):
        dtype, e, m, _ = TORCH_FORMATS[name]
        return FloatFormat(name, e, m, 2 ** (e - 1) - 1, name != "fp8_e4m3fn", True, torch.finfo(dtype).max,
                           torch.finfo(dtype).smallest_normal, decode_code(1, name), torch.finfo(dtype).eps)

    formats = [torch_format(name) for name in TORCH_FORMATS] + list(SMALL_FORMATS.values())

    @st.composite
    def quantize_inputs(draw):
        fmt = draw(st.sampled_from(formats))
        values = draw(st.lists(s_precision.fp32_near_grid(fmt.exponent_bits, min(fmt.mantissa_bits, 10), fmt.bias),
                               min_size=1, max_size=30))
        specials = draw(st.lists(s_precision.fp32_bits(), max_size=6))
        extremes = [math.inf, -math.inf, math.nan]  # as the small formats' test adds them
        return torch.cat([torch.tensor(values + extremes, dtype=torch.float32), tensor_from_bits(specials)]), fmt

    nvfp4 = s_precision.nvfp4_inputs(max_dynamic_range=12).map(lambda data: torch.tensor(data, dtype=torch.float32))
    exact_nan = "exact, bit for bit (NaN equals NaN)"
    return [
        Entry("float_format", plain(st.tuples(st.sampled_from([TORCH_FORMATS[n][0] for n in TORCH_FORMATS])))),
        Entry("round_to_bf16", plain(st.tuples(st.lists(s_precision.fp32_bits(), min_size=1, max_size=40)
                                               .map(tensor_from_bits))),
              tolerance=exact_nan),
        Entry("quantize", plain(quantize_inputs()), tolerance=exact_nan),
        Entry("nvfp4_quantize", plain(st.tuples(nvfp4)), rel=1e-6,
              tolerance="values and block scales exact, tensor_scale within rel 1e-6"),
        Entry("nvfp4_quantize", plain(st.tuples(st.lists(st.integers(0, 40), min_size=0, max_size=3).map(
            lambda shape: torch.linspace(-3, 3, math.prod(shape)).reshape(shape)))), rel=1e-6,
              label="nvfp4_quantize (any shape)",
              tolerance="values and block scales exact, tensor_scale within rel 1e-6"),
        Entry("nvfp4_dequantize", plain(st.tuples(s_precision.nvfp4_tensors())), tolerance=exact_nan),
    ]


# -- mini_einops and einops_practice -------------------------------------------------------------------------

def _einops_call(spec: dict) -> tuple:
    from tests.common.mini_einops import make_inputs

    tensors = make_inputs(spec)
    if spec["kind"] == "einsum":
        return (*tensors, spec["pattern"]), {}
    # the input, or, `as_list`, the list of its slices along the first axis (einops stacks them)
    given = list(tensors[0].unbind(0)) if spec.get("as_list") else tensors[0]
    if spec["kind"] == "reduce":
        return (given, spec["pattern"], spec["reduction"]), dict(spec["axes_lengths"])
    return (given, spec["pattern"]), dict(spec["axes_lengths"])


@st.composite
def _ellipsis_reduced(draw) -> dict:
    """A reduce whose left side has '...' and right side has not: the ellipsis' dimensions are reduced."""
    sizes = draw(s.distinct_sizes(draw(st.integers(3, 4)), 2, 5))
    before, after = draw(st.booleans()), draw(st.booleans())
    left = (["b"] if before else []) + ["..."] + (["c"] if after else [])
    right = [a for a in left if a != "..." and draw(st.booleans())]
    shape = sizes[: len(sizes)]
    return {"kind": "reduce", "pattern": " ".join(left) + " -> " + " ".join(right), "shapes": [shape],
            "axes_lengths": {}, "reduction": draw(st.sampled_from(s_mini_einops.EINOPS_REDUCTIONS)),
            "dtype": draw(st.sampled_from(["float32", "float64"])), "seed": draw(st.integers(0, 2**16)),
            "mutation": None}


def _mini_einops() -> list[Entry]:
    entries = [Entry("reduce", _ellipsis_reduced().map(_einops_call), tensor_tol=FLOAT_TOL,
                     label="reduce (the ellipsis reduced)", tolerance="float32 1e-5, float64 1e-12")]
    for kind in ("rearrange", "reduce", "repeat", "einsum"):
        tol = {} if kind in ("rearrange", "repeat") else FLOAT_TOL
        tolerance = "float32 1e-5, float64 1e-12" if tol else "exact (torch.equal)"
        valid = s_mini_einops.einsum_specs() if kind == "einsum" else s_mini_einops.einops_specs(kind)
        near = s_mini_einops.einsum_near_misses() if kind == "einsum" else s_mini_einops.einops_near_misses(kind)
        entries.append(Entry(kind, valid.map(_einops_call), tensor_tol=tol, tolerance=tolerance))
        entries.append(Entry(kind, near.map(_einops_call), tensor_tol=tol, label=f"{kind} (near-misses)",
                             tolerance=tolerance + "; errors by class"))
        if kind != "einsum":
            as_list = valid.filter(lambda spec: spec["shapes"][0] and spec["shapes"][0][0] > 0)
            entries.append(Entry(kind, as_list.map(lambda spec: _einops_call({**spec, "as_list": True})),
                                 tensor_tol=tol, label=f"{kind} (a list of tensors)", tolerance=tolerance))
    return entries


def _einops_practice() -> list[Entry]:
    from tests.common.einops_practice import DIFFERENTIAL_TOL, FUNCTIONS, audit_calls

    tol = {"float32": (DIFFERENTIAL_TOL,) * 2, "float64": (DIFFERENTIAL_TOL,) * 2}
    def calls_of(name: str):
        return st.integers(0, 2**16).map(lambda seed: (tuple(dict(audit_calls(seed))[name]), {}))

    tolerance = f"rtol {DIFFERENTIAL_TOL:g}, atol {DIFFERENTIAL_TOL:g}"
    return [Entry(name, calls_of(name), tensor_tol=tol, tolerance=tolerance, pool=1) for name in FUNCTIONS]


# -- activation_checkpointing and benchmarking: their pure functions ----------------------------------------

def _activation_checkpointing() -> list[Entry]:
    @st.composite
    def sizes(draw):
        layers = draw(st.integers(1, 40))
        return layers, draw(st.integers(1, layers))

    @st.composite
    def memory(draw):
        layers = draw(st.integers(1, 10**6))
        segments = draw(st.one_of(st.none(), st.integers(1, min(layers, 5000))))
        return layers, segments, draw(st.integers(1, 10**9))

    strategies = st.sampled_from(["store_all", "checkpoint", "store_none"])
    return [
        Entry("segment_sizes", plain(sizes())),
        Entry("default_segments", plain(st.tuples(st.integers(1, 10**6) | st.integers(10**6, 10**13).map(
            lambda k: k * k + 1)))),  # one past a large square: a float sqrt rounds it down
        Entry("checkpoint_memory", plain(memory())),
        Entry("recompute_flops", plain(st.tuples(st.integers(1, 10**6), st.integers(0, 10**15), strategies))),
    ]


def _benchmarking() -> list[Entry]:
    from tests.common.benchmarking import REL as rel

    names = ["NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H200", "NVIDIA H100 NVL", "NVIDIA GH200 480GB",
             "NVIDIA A100-SXM4-80GB", "NVIDIA GeForce RTX 4090", "NVIDIA H100 SXM5 80GB", "NVIDIA H200 NVL"]
    return [
        Entry("summarize", plain(st.tuples(st.lists(st.floats(1e-6, 10.0, allow_nan=False), min_size=1, max_size=8))),
              rel=rel, tolerance=_rel(rel)),
        Entry("hardware_for_name", plain(st.tuples(st.sampled_from(names)))),
    ]


BUILDERS = {"flops": _flops, "memory": _memory, "roofline": _roofline, "tensors": _tensors, "precision": _precision,
            "mini_einops": _mini_einops, "einops_practice": _einops_practice,
            "activation_checkpointing": _activation_checkpointing, "benchmarking": _benchmarking}

SCENARIO = ("not comparable by inputs: it needs a scenario (a model, an optimizer, a function to recompute, "
            "a training step)")
TIMING = "not comparable by inputs: its answer is a measurement of this machine (or of its device)"
NOT_COMPARABLE = {
    "adamw": {"AdamW": SCENARIO, "tensor_state_bytes": SCENARIO, "optimizer_state_bytes": SCENARIO},
    "gradient_accumulation": {"accumulate_gradients": SCENARIO, "train_step": SCENARIO},
    "activation_checkpointing": {"checkpoint": SCENARIO, "checkpoint_sequential": SCENARIO},
    "precision": {"mixed_precision_step": SCENARIO},
    "benchmarking": {"benchmark": TIMING, "measure_matmul": TIMING, "measure_bandwidth": TIMING,
                     "device_spec": TIMING},
    "roofline": {"plot_roofline": "not comparable by inputs: it writes a picture"},
    "mini_einops": {"parse_count": "not comparable by inputs: it counts the calls made before it"},
}


def entries(problem: str) -> list[Entry]:
    """The comparable functions of `problem` ([] where none is)."""
    return BUILDERS[problem]() if problem in BUILDERS else []
