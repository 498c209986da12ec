"""Problem (activation_checkpointing): trade compute for memory.

Oracles (all computed in the test process, on the same seeded model the scenario builds beside the code
under test: tests/scenarios/activation_checkpointing.py):
- plain backward: the same function called directly, everything stored: the output and the gradients of the
  tensor arguments and of every layer's weight; checkpointed as a module on x, as a function of tensors alone,
  and with non-tensor arguments passed through, each call in its own test;
- `torch.utils.checkpoint.checkpoint` (non-reentrant, RNG state preserved): the same with dropout, and the CPU
  RNG draw after backward;
- measured saved bytes: a `saved_tensors_hooks` pack hook logs every tensor autograd saves (parameters
  aside, each storage once), in forward (kept until backward) and in each recomputation during backward:
  checkpoint_sequential's must be the segment inputs and each segment's activations, what the analytic
  `checkpoint_memory` counts (its own test checks it with torch.tensor_split's sizes and the measured plain
  stack, not with your checkpoint_sequential, so that a slip in one costs the other nothing);
- counted forward calls: every layer logs its calls, so "fn runs twice", the order of recomputation and
  `recompute_flops` are checked against counts; "store_none" against a store-nothing backward run here;
- `torch.tensor_split` for the sizes of the segments; `math.isqrt` for the default number of segments.

Tolerances: outputs and gradients in float64 to 1e-12 relative and absolute (checkpointing reruns the same
ops in the same order, so a correct solution is bitwise equal or within a rounding or two of 1e-16; the
closest catalogued mistake, an RNG that is not replayed, changes the dropout mask and moves gradients by
O(1)); float32 to 1e-5 relative, 1e-6 absolute (rounding at 6e-8 through at most six layers). The RNG draw
after backward, byte counts, call counts and every analytic model are exact.
"""

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from tests import audit, audit_run, oracles
from tests.audit_run import own_run, run_without
from tests.checks import Shown, call_text, expect_equal, expect_int
from tests.documented import cases, expect_documented_error
from tests.scenarios import activation_checkpointing as scenarios
from tests.strategies import every
from tests.strategies.activation_checkpointing import NON_TENSORS, TENSORS_ONLY, checkpoint_specs

pytestmark = pytest.mark.activation_checkpointing

TOLERANCES = {"float64": (1e-12, 1e-12), "float32": (1e-5, 1e-6)}
MODULE = "activation_checkpointing"


def activation_bytes(spec: dict) -> int:
    """One activation of the scenario's layers: relu's output, batch x width."""
    return spec["batch"] * spec["width"] * getattr(torch, spec["dtype"]).itemsize


def sizes_by_tensor_split(layers: int, segments: int) -> list[int]:
    return [len(chunk) for chunk in torch.arange(layers).tensor_split(segments)]


def expect_checkpointed_run(got: dict, expected: dict, spec: dict, *, what: str, source: str, hint: str,
                            rng: bool = False) -> None:
    """expect_same_run, and its own evidence that the work was a checkpoint's: fn ran again in backward (a plain
    call gives the same gradients, and no recompute; whether it runs exactly once more is another row's)."""
    expect_same_run(got, expected, spec, what=what, source=source, hint=hint, rng=rng)
    assert got["backward_calls"], (f"{what}: the gradients are right, but fn never ran during backward: a checkpoint "
                                   "recomputes fn in backward from the inputs it saved")


def expect_same_run(got: dict, expected: dict, spec: dict, *, what: str, source: str, hint: str,
                    rng: bool = False) -> None:
    rtol, atol = TOLERANCES[spec["dtype"]]
    assert got["out_requires_grad"] == expected["out_requires_grad"], (
        f"{what}: the output should {'' if expected['out_requires_grad'] else 'not '}require grad ({source})"
        f"\n  hint: {hint}")
    names = [("the output", "out"), ("x.grad", "grad_x"), ("shift.grad", "grad_shift")]
    names += [(f"layer {i}'s weight.grad", ("grad_weights", i)) for i in range(spec["layers"])]
    for label, key in names:
        g = got[key[0]][key[1]] if isinstance(key, tuple) else got[key]
        e = expected[key[0]][key[1]] if isinstance(key, tuple) else expected[key]
        if e is None:
            assert g is None, f"{what}: {label} should be None ({source}), got {g}\n  hint: {hint}"
            continue
        assert g is not None, f"{what}: {label} is None, expected {e} ({source})\n  hint: {hint}"
        assert g.dtype == e.dtype and g.shape == e.shape, (
            f"{what}: {label} should be {e.dtype} {tuple(e.shape)}, got {g.dtype} {tuple(g.shape)}")
        torch.testing.assert_close(g, e, rtol=rtol, atol=atol, msg=lambda m, label=label: (
            f"{what}: {label} differs from {source}\n{m}\n  hint: {hint}"))
    if rng:
        assert torch.equal(got["rng_after"], expected["rng_after"]), (
            f"{what}: the random numbers drawn after backward differ from {source}: "
            f"{got['rng_after'].tolist()} instead of {expected['rng_after'].tolist()}\n"
            "  hint: after the recompute, put back the RNG state that was current before it")


def describe_call(spec: dict) -> str:
    """The checkpoint call a spec makes (tests/scenarios/activation_checkpointing.py `checkpointed`)."""
    call = spec.get("call", "non-tensors")
    if call == "module":
        return "checkpoint(nn.Sequential(*layers), x)"
    if call == "tensor-arguments":
        return "checkpoint(f, x)" if spec["shift"] is None else "checkpoint(f, x, shift)"
    return "checkpoint(block, layers, x, scale, shift, flag)"


GRAD_HINT = ("save the tensor arguments, recompute fn with torch.enable_grad() on detached copies that "
             "requires_grad_ like the originals, backpropagate grad_output through it and return their .grad")


# -- checkpoint ---------------------------------------------------------------------------------------------
# Each test draws the calls of its own behaviour: a module or a function of tensors alone, without dropout, for
# what checkpoint saves and its gradients; non-tensor arguments in their own test; dropout in the RNG's.

@pytest.mark.parametrize("call", TENSORS_ONLY)
@given(data=st.data())
def test_checkpoint_matches_plain_backward(impl, call, data):
    spec = data.draw(checkpoint_specs(dropout=False, calls=(call,)), label="spec")
    got = impl.run(scenarios.run_checkpoint, spec)
    expect_checkpointed_run(got, oracles.plain_checkpoint(spec), spec, what=f"{describe_call(spec)} on {spec}",
                            source="the same block without checkpointing", hint=GRAD_HINT)


@given(spec=checkpoint_specs(dropout=False, calls=NON_TENSORS))
def test_checkpoint_passes_non_tensor_arguments_through(impl, spec):
    got = impl.run(scenarios.run_checkpoint, spec)
    expect_checkpointed_run(got, oracles.plain_checkpoint(spec), spec, what=f"{describe_call(spec)} on {spec}",
                            source="the same block without checkpointing",
                            hint="pass the non-tensor arguments (a list, a float, None, a bool) to fn as they are, "
                                 "in forward and in the recompute; save only the tensors for backward "
                                 "(save_for_backward takes tensors alone), and return None as the gradient of every "
                                 "other argument")


def _noisy(spec: dict) -> bool:
    return spec["batch"] * spec["width"] >= 6  # enough dropout draws that a different mask shows


@given(spec=checkpoint_specs(dropout=True, calls=("tensor-arguments",)).filter(_noisy))
def test_checkpoint_replays_dropout_like_torch_utils_checkpoint(impl, spec):
    got = impl.run(scenarios.run_checkpoint, spec)
    expect_checkpointed_run(got, oracles.torch_checkpoint(spec), spec,
                            what=f"{describe_call(spec)} with dropout on {spec}",
                            source="torch.utils.checkpoint.checkpoint(..., preserve_rng_state=True)",
                            hint="save torch.get_rng_state() in forward and torch.set_rng_state it before the "
                                 "recompute, so dropout draws the same mask; restore the current state afterwards",
                            rng=True)


@given(spec=checkpoint_specs(dropout=False, calls=TENSORS_ONLY))
def test_checkpoint_gives_parameters_gradients_when_no_input_requires_grad(impl, spec):
    spec = dict(spec, x_requires_grad=False, shift=None if spec["shift"] is None else False)
    got = impl.run(scenarios.run_checkpoint, spec)
    expect_checkpointed_run(got, oracles.plain_checkpoint(spec), spec,
                            what=f"{describe_call(spec)} with no argument requiring grad, on {spec}",
                            source="the same block without checkpointing: the weights inside still get gradients",
                            hint="an autograd.Function whose inputs do not require grad never runs its backward: "
                                 "pass a dummy tensor that requires grad")


@pytest.mark.parametrize("part", ["fn runs twice", "only the inputs are saved"], ids=["recompute", "saved"])
@given(spec=checkpoint_specs(dropout=False, calls=TENSORS_ONLY))
def test_checkpoint_keeps_only_its_inputs_and_runs_fn_twice(impl, part, spec):
    got = impl.run(scenarios.run_checkpoint, spec)
    what = f"{describe_call(spec)} on {spec}"
    if part == "fn runs twice":
        layers = list(range(spec["layers"]))
        expect_equal(got["forward_calls"], layers, what=f"{what}: layers called in forward",
                     source="each layer once, in order", hint="run fn once in forward")
        expect_equal(got["backward_calls"], layers, what=f"{what}: layers called in backward",
                     source="the recompute: each layer once more", hint="rerun fn, once, in backward")
    else:
        itemsize = getattr(torch, spec["dtype"]).itemsize
        inputs = activation_bytes(spec) + (0 if spec["shift"] is None else spec["width"] * itemsize)
        hint = ("nothing was saved through ctx.save_for_backward: tensors kept as ctx attributes (ctx.x = x) are "
                "invisible to saved_tensors_hooks, and are not released after backward; save the tensor arguments "
                "with ctx.save_for_backward" if got["forward_bytes"] == 0 else
                "run fn under torch.no_grad() in forward and save only the tensor arguments")
        expect_int(got["forward_bytes"], inputs, what=f"{what}: bytes saved for backward during forward",
                   source="measured with saved_tensors_hooks: only the tensor arguments (x, and shift if passed)",
                   hint=hint)


# -- checkpoint_sequential -----------------------------------------------------------------------------------

@st.composite
def sequential_cases(draw, dropout: bool | None = False, default: bool | None = None):
    spec = draw(checkpoint_specs(max_layers=9, dropout=dropout))
    spec = dict(spec, x_requires_grad=True, shift=None)
    use_default = draw(st.booleans()) if default is None else default
    segments = None if use_default else draw(st.integers(1, spec["layers"]))
    return spec, segments


def expected_segments(layers: int, segments: int | None) -> list[int]:
    return sizes_by_tensor_split(layers, math.isqrt(layers - 1) + 1 if segments is None else segments)


def recompute_order(sizes: list[int]) -> list[int]:
    """The layers checkpoint_sequential calls in backward: each segment's once, the last segment first."""
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    return [i for start, size in reversed(list(zip(starts, sizes, strict=True))) for i in range(start, start + size)]


@given(case=sequential_cases(dropout=False, default=False))  # the RNG and the default are other tests'
def test_checkpoint_sequential_matches_plain_backward(impl, case):
    spec, segments = case
    got = impl.run(scenarios.run_sequential, spec, segments)
    expect_same_run(got, oracles.plain_sequential(spec), spec,
                    what=f"checkpoint_sequential(<{spec['layers']} layers>, x, {segments}) on {spec}",
                    source="the layers run one after the other", hint=GRAD_HINT)


# one item with the segments given, one with the default: a slip in the default costs that share (and what waits
# for the default), not what waits for segments given
@pytest.mark.parametrize("segments_given", [True, False], ids=["given", "default"])
@given(data=st.data())
def test_checkpoint_sequential_keeps_segment_inputs_and_recomputes_each_segment(impl, segments_given, data):
    spec, segments = data.draw(sequential_cases(default=not segments_given), label="case")
    got = impl.run(scenarios.run_sequential, spec, segments)
    sizes = expected_segments(spec["layers"], segments)
    order = recompute_order(sizes)
    act = activation_bytes(spec)
    what = call_text("checkpoint_sequential", Shown(f"<{spec['layers']} layers>"), Shown("x"), segments)
    default = " (default ceil(sqrt(L)))" if segments is None else ""
    expect_equal(got["forward_calls"], list(range(spec["layers"])), what=f"{what}: layers called in forward",
                 source="each layer once, in order")
    expect_equal(got["backward_calls"], order, what=f"{what}: layers called in backward",
                 source=f"segments of sizes {sizes}{default} recomputed once each, last segment first",
                 hint="checkpoint every segment (the last one too); split as torch.tensor_split does")
    expect_int(got["forward_bytes"], len(sizes) * act, what=f"{what}: bytes kept from forward until backward",
               source=f"measured: the input of each of the {len(sizes)} segments{default}, {act} bytes each",
               hint="keep only the segment inputs; the default is ceil(sqrt(L)) segments, not L")
    expect_equal(got["recompute_bytes"], [size * act for size in reversed(sizes)],
                 what=f"{what}: bytes saved by each recomputation in backward",
                 source=f"measured: one activation per layer of the segment being recomputed, sizes {sizes}")


@given(layers=st.integers(0, 10**30))
@every({}, layers=(0, 1, 2, 3, 4, 5, 9, 10, 16, 17, 10**12, 10**24 + 1))  # squares, their neighbours, a big L
def test_default_segments_is_ceil_sqrt(impl, layers):
    expected = math.isqrt(layers - 1) + 1 if layers else 0  # the docstring: 0 for 0 layers
    expect_int(impl.activation_checkpointing.default_segments(layers), expected,
               what=call_text("default_segments", layers), source="ceil(sqrt(L)) with math.isqrt",
               hint="ceil of the square root, exactly (math.isqrt(L - 1) + 1): floats round for big L")


@given(layers=st.integers(1, 40), data=st.data())
def test_segment_sizes_like_tensor_split(impl, layers, data):
    segments = data.draw(st.integers(1, layers), label="segments")
    got = impl.activation_checkpointing.segment_sizes(layers, segments)
    expect_equal(got, sizes_by_tensor_split(layers, segments), what=call_text("segment_sizes", layers, segments),
                 source="torch.tensor_split: as even as possible, longer segments first")


@pytest.mark.parametrize(("layers", "segments"), [(3, 0), (3, 4), (1, 2), (5, -1)])
def test_invalid_segments_raise_value_error(impl, layers, segments):
    got = impl.run(scenarios.checkpoint_error, layers, segments)
    assert got == "ValueError", (
        f"checkpoint_sequential(<{layers} layers>, x, {segments}) should raise ValueError, raised {got}")
    got = impl.run(scenarios.analytic, [["segment_sizes", layers, segments]])[0]
    assert got == {"raised": "ValueError"}, f"segment_sizes({layers}, {segments}) should raise ValueError, got {got}"


# -- the analytic models against measurement ---------------------------------------------------------------

@given(case=sequential_cases(default=False))
def test_checkpoint_memory_matches_measured_bytes(impl, case):
    spec, segments = case
    act = activation_bytes(spec)
    plain = oracles.plain_sequential(spec)
    got = impl.run(scenarios.analytic, [["checkpoint_memory", spec["layers"], segments, act],
                                        ["checkpoint_memory", spec["layers"], None, act]])
    # The model's formula with torch.tensor_split's sizes: what checkpoint_sequential's own test measures with
    # saved_tensors_hooks (segment inputs kept, each segment's activations while recomputed). Your
    # checkpoint_sequential is not measured here: a slip in it costs its own test, not this one.
    sizes = sizes_by_tensor_split(spec["layers"], segments)
    expect_int(got[0], (len(sizes) + max(sizes)) * act,
               what=call_text("checkpoint_memory", spec["layers"], segments, act),
               source=f"segment inputs ({len(sizes)}) + the largest segment ({max(sizes)} layers) recomputed",
               hint="the segment boundaries and the activations of the largest segment while it is recomputed")
    expect_int(got[1], plain["forward_bytes"], what=call_text("checkpoint_memory", spec["layers"], None, act),
               source="measured with saved_tensors_hooks: no checkpointing keeps one activation per layer")


def test_checkpoint_memory_falls_from_linear_to_square_root(impl):
    # 16 layers: everything stored keeps 16 activations; ceil(sqrt(16)) = 4 segments keep 4 + 4 = 8.
    spec = {"seed": 7, "layers": 16, "batch": 3, "width": 5, "dtype": "float32", "dropout": 0.0,
            "x_requires_grad": True, "shift": None, "scale": 1.0}
    act = activation_bytes(spec)
    plain = oracles.plain_sequential(spec)
    expect_int(plain["forward_bytes"], 16 * act, what="plain forward of 16 layers", source="one activation a layer")
    got = impl.run(scenarios.analytic, [["checkpoint_memory", n, seg, 1] for n, seg in
                                        [(16, None), (16, 4), (100, None), (100, 10), (10**6, 1000)]])
    assert got == [16, 8, 100, 20, 2000], f"checkpoint_memory: O(L) -> O(sqrt L) expected [16, 8, 100, 20, 2000], " \
                                          f"got {got}"


@given(case=sequential_cases(default=False), flops=st.sampled_from([1, 7, 2 * 4096 * 4096, 10**15 + 3]))
def test_recompute_flops_matches_counted_forward_calls(impl, case, flops):
    spec, segments = case
    L = spec["layers"]
    # Layer calls counted during backward on the plain stack and on the store-none oracle (tests/oracles.py);
    # checkpointing reruns each layer once, which checkpoint_sequential's own test counts on yours.
    expected = {"store_all": len(oracles.plain_sequential(spec)["backward_calls"]) * flops,
                "checkpoint": L * flops,
                "store_none": oracles.store_none_backward_calls(spec) * flops}
    got = impl.run(scenarios.analytic, [["recompute_flops", L, flops, s] for s in expected])
    for g, (strategy, e) in zip(got, expected.items(), strict=True):
        expect_int(g, e, what=call_text("recompute_flops", L, flops, strategy),
                   source="layer calls counted during backward x flops_per_layer",
                   hint="store_all: 0; checkpoint: one extra forward; store_none: L(L+1)/2 layer forwards")


STRATEGIES = ("store_all", "checkpoint", "store_none")
UNKNOWN_STRATEGIES = st.one_of(st.sampled_from(["sqrt", "none", "all", "Checkpoint", "store-none", "store_al", ""]),
                               st.text(max_size=10)).filter(lambda name: name not in STRATEGIES)


@given(layers=st.integers(1, 10**4), flops=st.integers(0, 10**15), unknown=UNKNOWN_STRATEGIES,
       known=st.sampled_from(STRATEGIES))
def test_recompute_flops_rejects_unknown_strategies(impl, layers, flops, unknown, known):
    # its own evidence: beside the refused call, a known strategy returns an int (not a raise-always)
    got = impl.run(scenarios.analytic, [["recompute_flops", layers, flops, unknown],
                                        ["recompute_flops", layers, flops, known]])
    assert got[0] == {"raised": "ValueError"}, (
        f"{call_text('recompute_flops', layers, flops, unknown)} should raise ValueError, got {got[0]!r}")
    assert isinstance(got[1], int) and not isinstance(got[1], bool), (
        f"{call_text('recompute_flops', layers, flops, known)} should return an int, got {got[1]!r}")


# -- differential ----------------------------------------------------------------------------------------------

@given(layers=st.integers(1, 10**6), data=st.data(), act=st.integers(1, 10**9), flops=st.integers(0, 10**15))
def test_analytic_models_match_reference(impl, ref, layers, data, act, flops):
    segments = data.draw(st.one_of(st.none(), st.integers(1, min(layers, 5000))), label="segments")
    queries = [["checkpoint_memory", layers, segments, act], ["default_segments", layers]]
    queries += [["recompute_flops", layers, flops, s] for s in ("store_all", "checkpoint", "store_none")]
    if segments is not None and layers <= 5000:
        queries.append(["segment_sizes", layers, segments])
    got = impl.run(scenarios.analytic, queries)
    expected = ref.run(scenarios.analytic, queries)
    for g, e, q in zip(got, expected, queries, strict=True):
        expect_equal(g, e, what=call_text(q[0], *q[1:]), source="reference/activation_checkpointing.py")


@given(case=sequential_cases(dropout=None))
def test_checkpoint_sequential_matches_reference(impl, ref, case):
    spec, segments = case
    got = impl.run(scenarios.run_sequential, spec, segments)
    expected = ref.run(scenarios.run_sequential, spec, segments)
    expect_same_run(got, expected, spec, what=f"checkpoint_sequential(<{spec['layers']} layers>, x, {segments})",
                    source="reference/activation_checkpointing.py", hint=GRAD_HINT, rng=True)
    for key in ("forward_calls", "backward_calls", "forward_bytes", "recompute_bytes"):
        expect_equal(got[key], expected[key], what=f"{key} of checkpoint_sequential on {spec}",
                     source="reference/activation_checkpointing.py")


# -- audit ----------------------------------------------------------------------------------------------------

def torch_checkpoint_mentions(package: str) -> list[str]:
    """Static part of the audit: torch.utils.checkpoint imported or reached as an attribute."""
    return audit.reaching(package, MODULE, ("torch.utils.checkpoint",))


def right_run(got: dict, expected: dict, spec: dict, calls: list[int]) -> bool:
    """Whether a run is right: its gradients those of `expected`, its layers called in backward `calls` (the RNG
    after it is the dropout row's business)."""
    try:
        expect_same_run(got, expected, spec, what="", source="", hint="")
    except AssertionError:
        return False
    return got["backward_calls"] == calls


# carries its own evidence (tests/audit_run.py): it checks the runs it saw right, and pays beside three of them
@audit_run.evidenced(lambda kwargs: "checkpoint", without="torch.utils.checkpoint")
@given(case=sequential_cases(dropout=True), call=st.sampled_from(scenarios.CALLS))
def test_audit_checkpoint_does_not_use_torch_utils_checkpoint(impl, case, call):
    spec, segments = case
    spec = dict(spec, shift=True, call=call)  # every way of calling checkpoint: a slip in one leaves the others' runs
    # Fails only where torch.utils.checkpoint is reached: yours with it usable, then unusable, the same.
    mentions = torch_checkpoint_mentions(impl.name)
    assert not mentions, f"{impl.name}/{MODULE}.py uses torch.utils.checkpoint (the oracle):\n" + "\n".join(mentions)
    usable = own_run(lambda: {"block": impl.run(scenarios.run_checkpoint, spec),
                              "sequential": impl.run(scenarios.run_sequential, spec, segments)})
    if usable is None:  # it raises with the oracle usable: a wrong answer, the other tests' business
        return
    right = {"block": right_run(usable["block"], oracles.torch_checkpoint(spec), spec, list(range(spec["layers"]))),
             # the sequential's recomputation (its gradients draw dropout)
             "sequential": usable["sequential"]["backward_calls"] == recompute_order(
                 expected_segments(spec["layers"], segments))}
    if not any(right.values()):  # wrong answers: the other tests' business, and no evidence for the audit
        return
    hint = "recompute fn yourself in backward; do not call torch.utils.checkpoint"
    got = run_without(impl, scenarios.run_without_oracle, spec, segments, what=f"checkpoint on {spec}",
                      oracle="torch.utils.checkpoint", hint=hint)
    source = "your own checkpoint with torch.utils.checkpoint usable: it reaches it"
    if right["block"]:
        expect_same_run(got["block"], usable["block"], spec, what=f"checkpoint(block, ...) on {spec}", source=source,
                        hint=hint)
    for kind in [kind for kind, is_right in right.items() if is_right]:
        expect_equal(got[kind]["backward_calls"], usable[kind]["backward_calls"],
                     what=f"layers recomputed in backward ({kind}, torch.utils.checkpoint unusable)", source=source,
                     hint=hint)
    if right["block"]:
        audit_run.evidence().saw_right((spec["layers"], usable["block"]["out"].double().sum().item()))


# -- every error the docstrings promise, on a fixed call (tests/documented.py) -------------------------------

@pytest.mark.parametrize("case", cases("activation_checkpointing"))
def test_documented_errors_are_raised(impl, case):
    expect_documented_error(impl, "activation_checkpointing", case)
