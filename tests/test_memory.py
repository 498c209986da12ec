"""Problem (memory): counting bytes.

Oracles: torch's own accounting of a tensor (`numel() * element_size()` of a meta tensor, which has a
shape and a dtype but no storage); `Module.parameters()` (each Parameter once) on generated models with
tied, shared, frozen and mixed-dtype parameters; the state tensors a real `torch.optim` optimizer (SGD,
SGD with momentum, Adagrad, AdamW) holds after a step; the tensors the autograd graph keeps for backward,
read from its nodes' `_saved_*` attributes (a different mechanism from the saved-tensor hooks the solution
uses), each storage once, parameters' storages excluded; worked numbers (ours, on the lecture's 2+2+4+4).

Tolerances: every quantity here is a count of bytes or parameters, compared exactly as an `int`. The
gradients computed with SavedActivations' hooks in place must equal those of a plain backward exactly:
the hooks must hand back the very tensors that were saved, so the arithmetic is the same.
"""

import warnings

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from assignment.given import HARDWARE, POLICIES, BytesPerParam
from tests import oracles
from tests.checks import call_text, expect_equal, expect_int
from tests.documented import cases, expect_documented_error
from tests.scenarios import memory as scenarios
from tests.strategies import big_sizes, distinct_sizes, every
from tests.strategies.memory import module_specs, precision_policies, stack_specs

pytestmark = pytest.mark.memory

OPTIMIZERS = sorted(scenarios.OPTIMIZERS)
ALL_DTYPES = sorted({v for v in vars(torch).values() if isinstance(v, torch.dtype)}, key=str)
HINT_STORAGE = ("count each storage once (untyped_storage().data_ptr()), its whole nbytes(); skip "
                "Parameters and views of them")


def element_bytes(dtype: torch.dtype) -> int:
    """torch's size of one element of `dtype`, from a meta tensor (nothing allocated)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # complex32 and the quantized dtypes warn that they are experimental
        return torch.empty((), dtype=dtype, device="meta").element_size()


def expected_bytes_per_param(policy, optimizer: str) -> BytesPerParam:
    """The breakdown from torch: each dtype's element size, and the number of parameter-sized state
    tensors the real optimizer holds after a step."""
    p = POLICIES[policy] if isinstance(policy, str) else policy
    return BytesPerParam(
        params=element_bytes(p.param_dtype),
        grads=element_bytes(p.grad_dtype),
        optimizer_state=oracles.oracle_state_tensors(optimizer)["tensors"] * element_bytes(p.state_dtype),
        master_weights=0 if p.master_dtype is None else element_bytes(p.master_dtype),
    )


def expect_breakdown(got, expected: BytesPerParam, what: str) -> None:
    expect_equal(type(got).__name__, "BytesPerParam", what=f"{what}: type", source="assignment.given")
    hints = {"params": "the parameter's dtype", "grads": "the gradient's dtype (policy.grad_dtype)",
             "optimizer_state": "state tensors the real optimizer keeps x policy.state_dtype's size",
             "master_weights": "policy.master_dtype's size, 0 without a master copy"}
    for field, hint in hints.items():
        expect_int(getattr(got, field), getattr(expected, field), what=f"{what}.{field}",
                   source="torch.optim state after a step; dtype element sizes", hint=hint)


# -- tensor_bytes -----------------------------------------------------------------------------------------

@given(shape=st.lists(st.integers(0, 9), max_size=4), dtype=st.sampled_from(ALL_DTYPES))
@every({"shape": [2, 3]}, dtype=ALL_DTYPES)  # every dtype (packed ones too), not a draw of a few
def test_tensor_bytes_matches_torch(impl, shape, dtype):
    shape = tuple(shape)
    got = impl.memory.tensor_bytes(shape, dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        meta = torch.empty(shape, dtype=dtype, device="meta")
    expect_int(got, meta.numel() * meta.element_size(), what=call_text("tensor_bytes", shape, dtype),
               source="numel() * element_size() of a meta tensor",
               hint="elements x dtype.itemsize; a packed dtype's element is one byte, as torch counts it")


BIG_DTYPES = (torch.float32, torch.bfloat16, torch.float8_e4m3fn, torch.float4_e2m1fn_x2, torch.complex64)


def bytes_hint(got, elements: int, dtype: torch.dtype) -> str:
    """What a wrong count of bytes is, from the evidence: a whole number of bytes per element other than torch's
    (the element size), or not (a float product rounds beyond 2^53)."""
    size = element_bytes(dtype)
    if type(got) is int and elements and got % elements == 0 and got // elements != size:
        kind = ("a complex element is two floats" if dtype.is_complex else
                "a packed dtype's element is the packed byte" if "x2" in str(dtype) or "x4" in str(dtype) else
                "dtype.itemsize")
        return f"{got // elements} bytes per element: torch's {dtype} element is {size} bytes ({kind})"
    return "multiply the sizes as Python ints: a float product rounds beyond 2^53 (allocating this many bytes fails)"


@given(sizes=big_sizes(3), dtype=st.sampled_from(BIG_DTYPES))
@example(sizes=[2, 3, 5], dtype=torch.float32)  # small first: the first failure shown is the smallest
@every({"sizes": [2**31 + 1, 2**31 + 3, 7]}, dtype=BIG_DTYPES)
@example(sizes=[10**12, 10**12 - 1, 999_999_999_989], dtype=torch.complex64)  # ~8e36 bytes, exact
@example(sizes=[2**31 + 1, 2**31 + 3, 3], dtype=torch.float4_e2m1fn_x2)  # beyond 2^53, odd
def test_tensor_bytes_allocates_nothing(impl, sizes, dtype):
    # petabytes and beyond: allocating them fails, and a float product would round
    shape = tuple(sizes)
    got = impl.memory.tensor_bytes(shape, dtype)
    expect_int(got, sizes[0] * sizes[1] * sizes[2] * element_bytes(dtype), what=call_text("tensor_bytes", shape, dtype),
               source="exact integer product", hint=bytes_hint(got, sizes[0] * sizes[1] * sizes[2], dtype))


def test_tensor_bytes_lecture_example(impl):
    expect_int(impl.memory.tensor_bytes((4, 8), torch.float32), 128, what="tensor_bytes((4, 8), torch.float32)",
               source="a worked example: 4 x 8 float32 is 128 bytes")
    expect_int(impl.memory.tensor_bytes([], torch.bool), 1, what="tensor_bytes([], torch.bool)",
               source="a scalar is one element; a bool is one byte")
    for dtype in (torch.float4_e2m1fn_x2, torch.quint4x2, torch.bits2x4):
        expect_int(impl.memory.tensor_bytes((4, 8), dtype), 32, what=call_text("tensor_bytes", (4, 8), dtype),
                   source="torch: one element of a packed dtype is one byte",
                   hint="the shape of a packed dtype counts its bytes, not the values packed in them")


# -- parameters --------------------------------------------------------------------------------------------

@given(spec=module_specs())
def test_parameter_count_and_bytes_match_torch(impl, spec):
    got = impl.run(scenarios.parameters, spec)
    expected = oracles.oracle_parameters(spec)
    expect_int(got["count"], expected["count"], what=f"parameter_count of {spec}", source="Module.parameters()",
               hint="each Parameter once (tied and shared ones too), frozen ones included, buffers not")
    expect_int(got["bytes"], expected["bytes"], what=f"parameter_bytes of {spec}",
               source="sum of numel() * element_size() over Module.parameters()",
               hint="each Parameter once, in its own dtype")


# -- bytes per parameter, model state -------------------------------------------------------------------

# one item per optimizer: a slip in one costs its share (an id is never a problem's name: grading reads an item's
# problem from its keywords)
@pytest.mark.parametrize("optimizer", OPTIMIZERS, ids=lambda name: f"{name}-state")
@given(policy=precision_policies())
def test_bytes_per_param_matches_real_optimizer_state(impl, optimizer, policy):
    got = impl.memory.bytes_per_param(policy, optimizer)
    expect_breakdown(got, expected_bytes_per_param(policy, optimizer), call_text("bytes_per_param", policy, optimizer))


@pytest.mark.parametrize(("policy", "total"), [("fp32", 16), ("bf16", 12), ("bf16_master", 16)])
def test_bytes_per_param_lecture_adamw(impl, policy, total):
    got = impl.memory.bytes_per_param(policy, "adamw")
    expect_breakdown(got, expected_bytes_per_param(policy, "adamw"), call_text("bytes_per_param", policy, "adamw"))
    assert got.total == total, f"AdamW under {policy!r} keeps {total} bytes per parameter, got {got.total}"


@pytest.mark.parametrize(("policy", "optimizer"), [("fp8", "adamw"), ("fp32", "adam"), ("bf16", "lion")])
def test_bytes_per_param_rejects_unknown_names(impl, policy, optimizer):
    with pytest.raises(ValueError):
        impl.memory.bytes_per_param(policy, optimizer)


@given(shape=distinct_sizes(2, 1, 9), optimizer=st.sampled_from(OPTIMIZERS))
def test_model_state_bytes_matches_a_real_training_step(impl, shape, optimizer):
    n = shape[0] * shape[1]
    got = impl.memory.model_state_bytes(n, "fp32", optimizer)
    expect_int(got, oracles.oracle_state_tensors(optimizer, tuple(shape))["bytes"],
               what=call_text("model_state_bytes", n, "fp32", optimizer),
               source=f"parameter + gradient + state bytes after a torch.optim step on a {shape} float32 parameter",
               hint="parameters + gradients + optimizer state (+ master weights)")


@given(n=big_sizes(1), policy=precision_policies(), optimizer=st.sampled_from(OPTIMIZERS))
def test_model_state_bytes_is_n_times_bytes_per_param(impl, n, policy, optimizer):
    got = impl.memory.model_state_bytes(n[0], policy, optimizer)
    expect_int(got, n[0] * expected_bytes_per_param(policy, optimizer).total,
               what=call_text("model_state_bytes", n[0], policy, optimizer),
               source="n x the breakdown's total", hint="params, grads, optimizer state and master weights")


@given(memory=st.integers(0, 10**15), policy=precision_policies(), optimizer=st.sampled_from(OPTIMIZERS))
def test_max_trainable_params_is_the_largest_that_fits(impl, memory, policy, optimizer):
    got = impl.memory.max_trainable_params(memory, policy, optimizer)
    per = expected_bytes_per_param(policy, optimizer).total
    expect_int(got, memory // per, what=call_text("max_trainable_params", memory, policy, optimizer),
               source="the largest n with n * bytes_per_param <= memory",
               hint="round down: one more parameter does not fit")


def test_max_trainable_params_lecture_example(impl):
    memory = 8 * HARDWARE["H100 SXM"].memory_bytes
    got = impl.memory.max_trainable_params(memory, "bf16", "adamw")
    expect_int(got, 53_333_333_333, what=call_text("max_trainable_params", memory, "bf16", "adamw"),
               source="our worked example: 8 x 80e9 bytes / the lecture's 12 bytes per parameter")


# -- activations --------------------------------------------------------------------------------------------

def expect_saved(impl, spec: dict) -> None:
    """The meter's count against the autograd graph (what backward then gets is another row's)."""
    got = impl.run(scenarios.saved, spec)
    expected = oracles.oracle_saved(spec)
    what = f"SavedActivations around the forward of {spec}"
    expect_int(got["total"], expected["total"], what=f"{what}: total",
               source="the autograd graph's saved tensors (_saved_* attributes)", hint=HINT_STORAGE)
    expect_int(got["storages"], expected["storages"], what=f"{what}: storages",
               source="the autograd graph's saved tensors", hint=HINT_STORAGE)


# Stacks of Linear layers alone, and with each kind of layer between them (ReLU, the MLP's, apart from the other
# activations), on 2-d inputs; and stacks with views (slices, and a Linear on a 3-d input, which saves a view of
# it): one slip costs the kinds it touches. (extras, sequence dimensions)
STACK_KINDS = {"linear": ((None,), (0,)), "relu": ((None, "relu"), (0,)),
               "activations": ((None, "gelu", "tanh", "sigmoid"), (0,)), "layernorm": ((None, "layernorm"), (0,)),
               "views": ((None, "slice", "slice", "relu", "layernorm"), (0, 3))}  # slices drawn twice as often


@pytest.mark.parametrize("kind", list(STACK_KINDS))
@given(data=st.data())
def test_saved_activations_matches_the_autograd_graph(impl, kind, data):
    expect_saved(impl, data.draw(stack_specs(*STACK_KINDS[kind]), label="spec"))


@given(spec=stack_specs())
def test_saved_activations_hands_back_what_was_saved(impl, spec):
    # Its own evidence: saved-tensor hooks are on inside the `with` block (a meter that counts nothing and hooks
    # nothing leaves the gradients right too), and backward through them gets the gradients of a plain backward.
    got = impl.run(scenarios.saved, spec)
    what = f"SavedActivations around the forward of {spec}"
    assert got["hooked"], (f"{what}: no saved-tensor hooks were on inside the `with` block: enter "
                           "torch.autograd.graph.saved_tensors_hooks(pack, unpack) in __enter__")
    for i, (g, e) in enumerate(zip(got["grads"], oracles.oracle_saved(spec)["grads"], strict=True)):
        assert torch.equal(g, e), (f"{what}: gradient {i} differs from a plain backward's: the unpack hook must "
                                   "return the saved tensor unchanged")


@given(first=stack_specs(*STACK_KINDS["linear"]), second=stack_specs(*STACK_KINDS["linear"]))
def test_saved_activations_starts_from_zero_each_time_it_is_entered(impl, first, second):
    # Against your own meter, fresh, on the second forward: a slip in what is counted costs the graph's test, not
    # this one (which waits for it on stacks of Linear layers alone, what it draws: a meter that counts nothing is
    # the same twice).
    got = impl.run(scenarios.saved_twice, first, second)
    reused, fresh = got["reused"], got["fresh"]
    for key in ("total", "storages"):
        hint = (f"reset {key} in __enter__" if reused[key] > fresh[key] else "the second `with` block should count "
                "what a fresh meter counts: keep nothing of the first but the reset, and count again when entered")
        expect_int(reused[key], fresh[key], what=f"SavedActivations entered a second time: {key}",
                   source="your own fresh SavedActivations around the second forward alone", hint=hint)


@given(sizes=distinct_sizes(3, 1, 12), dtype=st.sampled_from(["float32", "bfloat16", "float64"]))
@every({"sizes": [3, 5, 2]}, dtype=("float32", "bfloat16", "float64"))
def test_mlp_activation_bytes_matches_the_measurement(impl, sizes, dtype):
    batch, width, layers = sizes
    got = impl.memory.mlp_activation_bytes(batch, width, layers, scenarios.DTYPES[dtype])
    expected = oracles.oracle_saved(oracles.mlp_spec(batch, width, layers, dtype))["total"]
    expect_int(got, expected, what=call_text("mlp_activation_bytes", batch, width, layers, scenarios.DTYPES[dtype]),
               source="the autograd graph of that MLP",
               hint="each Linear keeps its input; a ReLU's output is the next Linear's input, one storage")


def test_mlp_activation_bytes_lecture_example(impl):
    got = impl.memory.mlp_activation_bytes(64, 1024, 16, torch.bfloat16)
    expect_int(got, 2_097_152, what="mlp_activation_bytes(64, 1024, 16, torch.bfloat16)",
               source="our worked example: B * D * L values of 2 bytes")
    expect_int(got, oracles.oracle_saved(oracles.mlp_spec(64, 1024, 16, "bfloat16"))["total"],
               what="mlp_activation_bytes(64, 1024, 16, torch.bfloat16)", source="the autograd graph")


def test_saved_activations_lecture_mlp(impl):
    # 16M parameters: the gradients are not sent back (the generated stacks check them)
    expect_saved(impl, {**oracles.mlp_spec(64, 1024, 16, "bfloat16"), "check_grads": False})


# -- differential: the same inputs through the reference ----------------------------------------------------

@given(shape=st.lists(st.integers(0, 10**6), max_size=4), dtype=st.sampled_from(ALL_DTYPES),
       policy=precision_policies(), optimizer=st.sampled_from(OPTIMIZERS), n=st.integers(0, 10**13),
       sizes=distinct_sizes(3, 1, 300))
def test_differential_counting_functions(impl, ref, shape, dtype, policy, optimizer, n, sizes):
    cases = [("tensor_bytes", (tuple(shape), dtype)), ("model_state_bytes", (n, policy, optimizer)),
             ("max_trainable_params", (n, policy, optimizer)), ("max_trainable_params", (float(n), policy, optimizer)),
             ("mlp_activation_bytes", (*sizes, dtype))]
    for name, args in cases:
        expect_int(getattr(impl.memory, name)(*args), getattr(ref.memory, name)(*args), what=call_text(name, *args),
                   source="reference")
    expect_equal(impl.memory.bytes_per_param(policy, optimizer), ref.memory.bytes_per_param(policy, optimizer),
                 what=call_text("bytes_per_param", policy, optimizer), source="reference")


@given(module=module_specs(), stack=stack_specs())
def test_differential_measurements(impl, ref, module, stack):
    expect_equal(impl.run(scenarios.parameters, module), ref.run(scenarios.parameters, module),
                 what=f"parameter_count and parameter_bytes of {module}", source="reference")
    got, expected = impl.run(scenarios.saved, stack), ref.run(scenarios.saved, stack)
    expect_equal((got["total"], got["storages"]), (expected["total"], expected["storages"]),
                 what=f"SavedActivations on {stack}", source="reference")


# -- every error the docstrings promise, on a fixed call (tests/documented.py) -------------------------------

@pytest.mark.parametrize("case", cases("memory"))
def test_documented_errors_are_raised(impl, case):
    expect_documented_error(impl, "memory", case)
