"""Problem (flops): counting compute.

Oracles: torch.utils.flop_counter.FlopCounterMode on generated matmul programs, MLPs, attention (math
backend, and the fused kernels' ops on the meta device) and transformers built from generated configs
(the closed-form functions against the config's own model, built in this process alone: tests/oracles.py
`ConfigTransformer`; the counter against the workload's, a wider variant the worker runs); the parameters
of the config's model; worked numbers (the lecture's question, our answer). Counts are
exact integers, so every comparison of a count is exact. Times and ratios are compared to 1e-9 relative:
a few float64 operations round at ~1e-16, and every catalogued mistake is off by more than 1e-3.
"""

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from assignment.given import TransformerConfig
from tests import audit, audit_run, oracles
from tests.audit_run import own_run
from tests.checks import call_text, expect_close, expect_equal, expect_int
from tests.common.flops import REL
from tests.scenarios import flops as scenarios
from tests.strategies import big_sizes, distinct_sizes, every
from tests.strategies.flops import matmul_programs, transformer_configs, transformer_corners

pytestmark = pytest.mark.flops

ORACLE = "FlopCounterMode"
HINT_MACS = "a multiply-add is 2 FLOPs: (b x d) @ (d x k) costs 2*b*d*k (not MACs, not b*k*(2d-1))"
HINT_BACKWARD = "backward is 2x forward for every matmul whose input gradient is needed"
HINT_TRANSFORMER = ("count Q, K, V, O (K and V are n_kv_heads*d_head wide), the MLP's 2 or 3 matrices, the "
                    "LM head, and the attention scores QK^T and PV")

batches = st.integers(1, 4)
seqs = st.integers(1, 12)
# A fixed example whose counts are beyond 2^53 and not representable as floats (odd sizes: a count computed
# in floating point rounds): 4 layers of a 70B-class width with GQA and a gated MLP, 1025 x 16383 tokens.
# The model runs on the meta device, so FlopCounterMode counts it in well under a second.
BIG_CONFIG = TransformerConfig(vocab_size=50257, d_model=8190, n_layers=4, n_heads=65, d_ff=28671, n_kv_heads=5,
                               gated_mlp=True)
BIG_BATCH, BIG_SEQ = 1025, 16383
# A small example before each big one, so that a slip fails there first and the failure shown is small (hypothesis
# runs explicit examples first, and shows the first that fails unshrunk).
SMALL_CONFIG = TransformerConfig(vocab_size=11, d_model=6, n_layers=1, n_heads=2, d_ff=5)


def by_op_name(by_op: dict) -> dict:
    """by_op with each key as the op's name alone ("aten.mm.default" -> "aten.mm"): how the counts are compared
    (how the keys are written is `test_counter_names_each_op_without_its_overload`'s business)."""
    named: dict = {}
    for key, count in by_op.items():
        parts = str(key).split(".")
        name = ".".join(parts[:2]) if len(parts) == 3 and parts[0] == "aten" else key
        named[name] = named.get(name, 0) + count if isinstance(count, int) else count
    return named


def expect_counter(impl, spec: dict, scenario=scenarios.count) -> None:
    """The counter under test agrees with FlopCounterMode on `spec`, op by op and in total."""
    got = impl.run(scenario, oracles.workload(spec))  # first: a failing answer fails fast, before the oracle's work
    expected = oracles.oracle_count(spec)
    what = f"FlopCounter on {spec}"
    by_op = by_op_name(got["by_op"]) if isinstance(got["by_op"], dict) else got["by_op"]
    differing = sorted(op for op in set(by_op) | set(expected["by_op"])
                       if by_op.get(op) != expected["by_op"].get(op)) if isinstance(by_op, dict) else []
    expect_equal(by_op, expected["by_op"], what=f"{what}: by_op", source=ORACLE,
                 hint=counter_hint(by_op, expected["by_op"], differing) if isinstance(by_op, dict) else None)
    expect_int(got["total"], expected["total"], what=f"{what}: total", source=ORACLE,
               hint="total is the sum of by_op")


def counter_hint(got: dict, expected: dict, differing: list[str]) -> str:
    """What a wrong by_op is, from the evidence: every count exactly half (multiply-adds counted), or twice, the
    oracle's; else which ops differ."""
    def ratio(op):
        g, e = got.get(op), expected.get(op)
        return g / e if isinstance(g, int) and isinstance(e, int) and e else None

    ratios = {ratio(op) for op in differing}
    if ratios == {0.5} and set(got) == set(expected):
        return f"every count is half FlopCounterMode's: you count multiply-adds (MACs); {HINT_MACS}"
    if ratios == {2.0} and set(got) == set(expected):
        return "every count is twice FlopCounterMode's: a multiply-add is 2 FLOPs, counted once"
    return f"wrong for {', '.join(differing)}: check those ops' formulas and their batch dimension"


def transformer_spec(config, batch, seq, backward=False) -> dict:
    return {"kind": "transformer", "config": config, "batch": batch, "seq": seq, "backward": backward}


# -- closed-form counts, against FlopCounterMode ------------------------------------------------------

@given(sizes=distinct_sizes(3))
@example(sizes=[3, 5, 7])
@example(sizes=[2**20 + 1, 2**21 + 3, 2**22 + 5])  # 2^64 FLOPs: exact beyond 2^53
def test_matmul_flops_matches_flopcountermode(impl, sizes):
    b, d, k = sizes
    got = impl.flops.matmul_flops(b, d, k)
    expected = oracles.oracle_count({"kind": "program", "ops": [("mm", b, d, k)]})["total"]
    expect_int(got, expected, what=call_text("matmul_flops", b, d, k),
               source=ORACLE, hint=HINT_MACS)


@given(sizes=distinct_sizes(3), bias=st.booleans(), extra_dim=st.sampled_from([0, 3]))
@example(sizes=[3, 5, 7], bias=True, extra_dim=0)
@example(sizes=[2**20 + 1, 2**21 + 3, 2**22 + 5], bias=True, extra_dim=3)  # beyond 2^53
def test_linear_flops_matches_flopcountermode(impl, sizes, bias, extra_dim):
    tokens, d_in, d_out = sizes
    spec = {"kind": "mlp", "dims": [d_in, d_out], "batch": tokens, "bias": bias, "extra_dim": extra_dim}
    rows = tokens * (extra_dim or 1)
    got = impl.flops.linear_flops(rows, d_in, d_out)
    expected = oracles.oracle_count(spec)["total"]
    expect_int(got, expected, what=call_text("linear_flops", rows, d_in, d_out),
               source=f"{ORACLE} on nn.Linear(bias={bias})", hint=HINT_MACS + "; the bias add is free")


@given(config=transformer_configs(), batch=batches, seq=seqs)
@example(config=SMALL_CONFIG, batch=2, seq=3)
@every({"batch": 2, "seq": 3}, config=transformer_corners())
@example(config=BIG_CONFIG, batch=BIG_BATCH, seq=BIG_SEQ)
def test_transformer_forward_flops_matches_flopcountermode(impl, config, batch, seq):
    got = impl.flops.transformer_forward_flops(config, batch, seq)
    expected = oracles.model_count(config, batch, seq)["total"]
    expect_int(got, expected,
               what=call_text("transformer_forward_flops", config, batch, seq),
               source=f"{ORACLE} on the torch model of this config", hint=HINT_TRANSFORMER)


@given(config=transformer_configs(), batch=batches, seq=seqs)
@example(config=SMALL_CONFIG, batch=2, seq=3)
@every({"batch": 2, "seq": 3}, config=transformer_corners())
@example(config=BIG_CONFIG, batch=BIG_BATCH, seq=BIG_SEQ)
def test_attention_score_flops_matches_the_bmm_count(impl, config, batch, seq):
    # In the model only attention runs batched products (its projections fold into aten.mm).
    got = impl.flops.attention_score_flops(config, batch, seq)
    expected = oracles.model_count(config, batch, seq)["by_op"]["aten.bmm"]
    expect_int(got, expected,
               what=call_text("attention_score_flops", config, batch, seq),
               source=f"{ORACLE}'s aten.bmm count on the torch model",
               hint="Q K^T and (scores) V, each 2*seq*d_head*seq per head, in every layer")


@given(config=transformer_configs(), seq=seqs, batch=batches)
@every({"seq": 5, "batch": 2}, config=transformer_corners())
def test_attention_flops_fraction_matches_measured_share(impl, config, seq, batch):
    got = impl.flops.attention_flops_fraction(config, seq)
    measured = oracles.model_count(config, batch, seq)
    expected = measured["by_op"]["aten.bmm"] / measured["total"]
    expect_close(got, expected, rel=REL,
                 what=call_text("attention_flops_fraction", config, seq),
                 source=f"{ORACLE}: aten.bmm share of the forward", hint="attention-score FLOPs / all forward FLOPs")


@given(config=transformer_configs(), batch=batches, seq=seqs)
@example(config=SMALL_CONFIG, batch=2, seq=3)
@every({"batch": 2, "seq": 3}, config=transformer_corners())
@example(config=BIG_CONFIG, batch=BIG_BATCH, seq=BIG_SEQ)
def test_training_step_flops_matches_forward_and_backward(impl, config, batch, seq):
    got = impl.flops.training_step_flops(config, batch, seq)
    expected = oracles.model_count(config, batch, seq, backward=True)["total"]
    expect_int(got, expected,
               what=call_text("training_step_flops", config, batch, seq),
               source=f"{ORACLE} on forward + backward of the torch model", hint=HINT_BACKWARD)


@given(dims=st.lists(st.integers(1, 12), min_size=2, max_size=5), batch=st.integers(1, 9))
def test_mlp_training_flops_matches_forward_and_backward(impl, dims, batch):
    spec = {"kind": "mlp", "dims": dims, "batch": batch, "bias": True, "backward": True, "input_grad": False}
    got = impl.flops.mlp_training_flops(batch, dims)
    expected = oracles.oracle_count(spec)["total"]
    expect_int(got, expected, what=call_text("mlp_training_flops", batch, dims),
               source=f"{ORACLE} on forward + backward, input without grad",
               hint=HINT_BACKWARD + "; the first layer's input gradient is not needed (4*N*D there, not 6)")


@given(config=transformer_configs())
@every({}, config=transformer_corners())
def test_transformer_param_count_matches_the_module(impl, config):
    expect_int(impl.flops.transformer_param_count(config), oracles.param_count(config),
               what=call_text("transformer_param_count", config), source="sum of numel() over the torch model",
               hint="embedding and LM head are separate (untied); each RMSNorm has d_model weights")


# -- the FLOP counter, against FlopCounterMode --------------------------------------------------------

@given(ops=matmul_programs(), backward=st.booleans())
def test_counter_matches_flopcountermode_on_matmul_programs(impl, ops, backward):
    expect_counter(impl, {"kind": "program", "ops": ops, "backward": backward})


@given(ops=matmul_programs())
def test_counter_names_each_op_without_its_overload(impl, ops):
    spec = {"kind": "program", "ops": ops, "backward": False}
    got = impl.run(scenarios.count, spec)
    expected = oracles.oracle_count(spec)
    expect_equal(sorted(got["by_op"]), sorted(expected["by_op"]), what=f"FlopCounter on {spec}: the keys of by_op",
                 source=ORACLE, hint="each op's name without its overload, str(func.overloadpacket) (\"aten.mm\", "
                 "not \"aten.mm.default\"), and only the ops that counted FLOPs")


def mlp_specs(bias: bool):
    """Generated MLP workloads (Linear layers, with or without bias: addmm or mm), forward or forward and backward."""
    return st.builds(lambda dims, batch, extra_dim, input_grad, backward: {
        "kind": "mlp", "dims": dims, "batch": batch, "extra_dim": extra_dim, "bias": bias, "input_grad": input_grad,
        "backward": backward}, st.lists(st.integers(1, 12), min_size=2, max_size=4), st.integers(1, 6),
        st.sampled_from([0, 2]), st.booleans(), st.booleans())


# In two parts, mm and addmm: the part without bias is the evidence that a counter counts (starts from zero).
@pytest.mark.parametrize("bias", [False, True], ids=["without-bias", "with-bias"])
@given(data=st.data())
def test_counter_matches_flopcountermode_on_mlps(impl, bias, data):
    expect_counter(impl, data.draw(mlp_specs(bias), label="spec"))


@given(sizes=distinct_sizes(6, 1, 9), causal=st.booleans(), backward=st.booleans())
def test_counter_matches_flopcountermode_on_math_attention(impl, sizes, causal, backward):
    batch, heads, s_q, s_k, d_qk, d_v = sizes
    if causal:
        s_k = s_q  # the math backend's causal mask needs a square score matrix here
    expect_counter(impl, {"kind": "math_attention", "batch": batch, "heads": heads, "s_q": s_q, "s_k": s_k,
                          "d_qk": d_qk, "d_v": d_v, "causal": causal, "backward": backward})


FUSED_VARIANTS = ("flash", "efficient", "cudnn")
FUSED_SIZES = [2, 3, 5, 7, 4, 6]  # batch, heads, s_q, s_k, d_qk, d_v: all distinct, so a swapped size shows


@given(sizes=distinct_sizes(6, 1, 9), variant=st.sampled_from(FUSED_VARIANTS), backward=st.booleans())
@every({"sizes": FUSED_SIZES}, variant=FUSED_VARIANTS, backward=(False, True))
def test_counter_matches_flopcountermode_on_fused_attention(impl, sizes, variant, backward):
    batch, heads, s_q, s_k, d_qk, d_v = sizes
    if variant == "flash":
        d_v = d_qk  # the flash kernel's backward needs equal head sizes
    expect_counter(impl, {"kind": "fused_attention", "variant": variant, "batch": batch, "heads": heads,
                          "s_q": s_q, "s_k": s_k, "d_qk": d_qk, "d_v": d_v, "backward": backward})


@given(config=transformer_configs(max_layers=2), batch=batches, seq=seqs, backward=st.booleans())
@every({"batch": 2, "seq": 3}, config=transformer_corners(max_layers=2), backward=(False, True))
def test_counter_matches_flopcountermode_on_transformers(impl, config, batch, seq, backward):
    expect_counter(impl, transformer_spec(config, batch, seq, backward))


@given(first_spec=mlp_specs(bias=False), second_spec=mlp_specs(bias=False))
def test_counter_starts_from_zero_each_time_it_is_entered(impl, first_spec, second_spec):
    # Against your own counter, fresh, on the second workload: a slip in what is counted costs the tests above,
    # not this one (which waits for them, on the same workloads, MLPs of mm alone: a counter that counts nothing
    # is the same twice).
    got = impl.run(scenarios.count_twice, first_spec, second_spec)
    reused, fresh = got["reused"], got["fresh"]
    hint = ("reset total and by_op in __enter__" if reused["total"] > fresh["total"] else
            "the second `with` block should count what a fresh counter counts: keep nothing of the first but the "
            "reset, and count again when entered again")
    expect_int(reused["total"], fresh["total"], what="FlopCounter entered a second time: total",
               source="your own fresh FlopCounter around the second workload alone", hint=hint)
    assert reused["by_op"] == fresh["by_op"], (
        f"FlopCounter entered a second time: by_op should be what a fresh counter counts on the second workload "
        f"alone, {fresh['by_op']}; got {reused['by_op']}\n  hint: {hint}")


# -- approximations and the worked numbers -----------------------------------------------------------

@given(sizes=big_sizes(2))
@example(sizes=[7, 11])
@example(sizes=[70 * 10**9 + 1, 15 * 10**12 + 7])  # 6.3e24: a float product rounds
def test_approx_training_flops_is_six_n_d(impl, sizes):
    params, tokens = sizes
    expect_int(impl.flops.approx_training_flops(params, tokens), 6 * params * tokens,
               what=call_text("approx_training_flops", params, tokens), source="6*N*D",
               hint="2 FLOPs per parameter per token forward, 4 backward")


@given(config=transformer_configs(), seq=st.integers(1, 64))
@every({"seq": 9}, config=transformer_corners())
def test_attention_share_grows_with_context_and_six_n_d_falls_behind(impl, config, seq):
    short = impl.flops.attention_flops_fraction(config, seq)
    longer = impl.flops.attention_flops_fraction(config, 2 * seq)
    assert 0 < short < longer < 1, (
        f"attention_flops_fraction({config}, seq) should lie in (0, 1) and grow with seq: "
        f"got {short!r} at seq={seq}, {longer!r} at seq={2 * seq}")
    # The exact step over 6*N*D (N without the embedding, which costs no FLOPs) grows with the context. N is the
    # torch model's (the oracle's), not transformer_param_count's: the property is training_step_flops' alone, and
    # a slip in the parameter count costs its own row.
    n = oracles.param_count(config) - config.vocab_size * config.d_model
    steps = [impl.flops.training_step_flops(config, 1, s) for s in (seq, 2 * seq)]
    ratios = [step / (6 * n * s) for step, s in zip(steps, (seq, 2 * seq), strict=True)]
    assert ratios[0] < ratios[1], f"exact / 6ND should grow with the context, got {ratios} at seq={seq}, {2 * seq}"
    # Evidence that the step is counted, not made up to grow: at both contexts it is the same multiple of the
    # forward (the torch model's, measured), as every matmul's backward is a fixed multiple of its forward, whatever
    # multiple one counts.
    forwards = [oracles.model_count(config, 1, s)["total"] for s in (seq, 2 * seq)]
    assert steps[0] * forwards[1] == steps[1] * forwards[0], (
        f"training_step_flops({config}, 1, seq) should be the same multiple of the forward's FLOPs at every "
        f"context: {steps[0]} / {forwards[0]} at seq={seq}, {steps[1]} / {forwards[1]} at seq={2 * seq} "
        f"({ORACLE} on the torch model's forward)")


def test_training_days_lecture_example(impl):
    days = impl.flops.training_days(70e9, 15e12, 1024, 989.5e12, 0.5)
    # the lecture's question (70B parameters, 15T tokens, 1024 H100s, 6*N*D); MFU 0.5 and the SXM's bf16 peak are
    # our choices: 6 * 70e9 * 15e12 / (1024 * 989.5e12 * 0.5) s = 143.92 days, our "about 144"
    expect_close(days, 6 * 70e9 * 15e12 / (1024 * 989.5e12 * 0.5) / 86400, rel=REL,
                 what=call_text("training_days", 70e9, 15e12, 1024, 989.5e12, 0.5),
                 source="the lecture's question, our worked answer: ~144 days",
                 hint="6*N*D FLOPs / (n_gpus * peak * mfu) seconds, / 86400")
    assert round(days) == 144, f"{call_text('training_days', 70e9, 15e12, 1024, 989.5e12, 0.5)} is {days}: about 144"


@given(params=st.floats(1e6, 1e12), tokens=st.floats(1e6, 1e14), n_gpus=st.integers(1, 4096),
       peak=st.floats(1e12, 1e16), util=st.floats(0.01, 1.0))
def test_training_days_scales_as_compute_over_throughput(impl, params, tokens, n_gpus, peak, util):
    expected = 6 * params * tokens / (n_gpus * peak * util) / 86400
    expect_close(impl.flops.training_days(params, tokens, n_gpus, peak, util), expected, rel=REL,
                 what=call_text("training_days", params, tokens, n_gpus, peak, util),
                 source="6*N*D / (n_gpus * peak * mfu) / 86400", hint="mfu scales the peak down")


@given(flops=st.floats(1e9, 1e20), seconds=st.floats(1e-3, 1e5), peak=st.floats(1e12, 1e16))
def test_mfu_is_achieved_over_peak(impl, flops, seconds, peak):
    expect_close(impl.flops.mfu(flops, seconds, peak), flops / seconds / peak, rel=REL,
                 what=call_text("mfu", flops, seconds, peak), source="(flops / seconds) / peak",
                 hint="achieved FLOP/s as a share of the peak")


# -- audit ---------------------------------------------------------------------------------------------

# carries its own evidence (tests/audit_run.py): it checks the counts it saw right (against FlopCounterMode), on
# the MLP test's inputs, and pays beside three distinct right totals
@audit_run.evidenced(lambda kwargs: "FlopCounter", without="torch.utils.flop_counter")
@given(dims=st.lists(st.integers(1, 12), min_size=2, max_size=4), batch=st.integers(1, 6),
       extra_dim=st.sampled_from([0, 2]), bias=st.booleans(), input_grad=st.booleans(), backward=st.booleans())
def test_audit_counter_does_not_use_flopcountermode(impl, dims, batch, extra_dim, bias, input_grad, backward):
    mentions = audit.reaching(impl.name, "flops", ("torch.utils.flop_counter",))
    assert not mentions, f"{impl.name}/flops.py uses torch's FLOP counter (the oracle):\n" + "\n".join(mentions)
    # And at run time: the counter counts the same with torch.utils.flop_counter made unusable, where it counts
    # right. Whether the count is right is the other tests' business: the audit fails only where the oracle is
    # reached.
    spec = {"kind": "mlp", "dims": dims, "batch": batch, "extra_dim": extra_dim, "bias": bias,
            "input_grad": input_grad, "backward": backward}
    what = f"FlopCounter on {spec}"
    hint = "count with your own formulas per aten op; do not use torch.utils.flop_counter"
    usable = own_run(lambda: impl.run(scenarios.count, oracles.workload(spec)))
    expected = oracles.oracle_count(spec)
    if usable is None or usable.get("total") != expected["total"] or not isinstance(usable.get("by_op"), dict) \
            or by_op_name(usable["by_op"]) != expected["by_op"]:
        return  # a wrong count, or an error: the other tests' business, and no evidence for the audit
    try:
        unusable = impl.run(scenarios.count_without_oracle, oracles.workload(spec))
    except Exception as error:
        if type(error).__module__.startswith("grader.harness"):  # the worker died or timed out: not an answer
            raise
        raise AssertionError(f"{what} with torch.utils.flop_counter made unusable raised\n  "
                             f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}\n"
                             f"  hint: {hint}") from None
    assert unusable == usable, (f"{what} counts {usable} with torch.utils.flop_counter usable and {unusable} with "
                                f"it made unusable: it uses the oracle\n  hint: {hint}")
    audit_run.evidence().saw_right(expected["total"])


# -- differential: the same inputs through the reference ------------------------------------------------

@given(config=transformer_configs(), batch=batches, seq=seqs, dims=st.lists(st.integers(1, 30), min_size=2, max_size=5))
def test_differential_counting_functions(impl, ref, config, batch, seq, dims):
    cases = [
        ("transformer_forward_flops", (config, batch, seq)),
        ("attention_score_flops", (config, batch, seq)),
        ("training_step_flops", (config, batch, seq)),
        ("transformer_param_count", (config,)),
        ("mlp_training_flops", (batch, dims)),
        ("matmul_flops", tuple(dims[:3]) if len(dims) >= 3 else (batch, seq, dims[0])),
        ("linear_flops", (batch * seq, dims[0], dims[1])),
    ]
    for name, args in cases:
        expect_int(getattr(impl.flops, name)(*args), getattr(ref.flops, name)(*args),
                   what=call_text(name, *args), source="reference")
    expect_close(impl.flops.attention_flops_fraction(config, seq), ref.flops.attention_flops_fraction(config, seq),
                 rel=REL, what=call_text("attention_flops_fraction", config, seq), source="reference")


@given(sizes=distinct_sizes(6, 1, 9), variant=st.sampled_from(FUSED_VARIANTS), ops=matmul_programs())
@every({"sizes": FUSED_SIZES, "ops": [("mm", 2, 3, 4)]}, variant=FUSED_VARIANTS)
def test_differential_counter(impl, ref, sizes, variant, ops):
    batch, heads, s_q, s_k, d_qk, d_v = sizes
    for spec in (
        {"kind": "fused_attention", "variant": variant, "batch": batch, "heads": heads, "s_q": s_q, "s_k": s_k,
         "d_qk": d_qk, "d_v": d_qk if variant == "flash" else d_v, "backward": True},
        {"kind": "program", "ops": ops, "backward": True},
    ):
        got, expected = impl.run(scenarios.count, spec), ref.run(scenarios.count, spec)
        if isinstance(got, dict) and isinstance(got.get("by_op"), dict):
            got = {**got, "by_op": by_op_name(got["by_op"])}  # the counts: the keys' form is tested apart
        expect_equal(got, expected, what=f"FlopCounter on {spec}", source="reference")
