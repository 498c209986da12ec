"""Classic mistakes in counting compute, each written as the wrong function a student would write."""

from itertools import pairwise

from reference import flops as ref
from tests.mistakes import Mistake


def macs(b, d, k):
    return b * d * k


def two_d_minus_one(b, d, k):
    return b * k * (2 * d - 1)


def backward_same_as_forward(config, batch, seq):
    return 2 * ref.transformer_forward_flops(config, batch, seq)


def no_attention_term(config, batch, seq):
    return ref.transformer_forward_flops(config, batch, seq) - ref.attention_score_flops(config, batch, seq)


def no_lm_head(config, batch, seq):
    head = ref.linear_flops(batch * seq, config.d_model, config.vocab_size)
    return ref.transformer_forward_flops(config, batch, seq) - head


def gqa_ignored(config, batch, seq):
    d, kv = config.d_model, config.kv_heads * config.d_head
    extra = 2 * ref.linear_flops(batch * seq, d, d - kv) * config.n_layers
    return ref.transformer_forward_flops(config, batch, seq) + extra


def attention_per_layer_once(config, batch, seq):
    return config.n_layers and ref.attention_score_flops(config, batch, seq) // config.n_layers


def every_layer_needs_input_grad(batch, dims):
    return sum(3 * ref.linear_flops(batch, a, b) for a, b in pairwise(dims))


def params_without_norms(config):
    return ref.transformer_param_count(config) - (2 * config.n_layers + 1) * config.d_model


def params_gate_from_third_layer(config):
    return ref.transformer_param_count(config) - max(0, config.n_layers - 2) * config.d_model * config.d_ff * \
        config.gated_mlp


def params_tied_embedding(config):
    return ref.transformer_param_count(config) - config.vocab_size * config.d_model


def two_n_d(params, tokens):
    return 2 * params * tokens


def fraction_of_weights(config, seq):
    attention = ref.attention_score_flops(config, 1, seq)
    return attention / (ref.transformer_forward_flops(config, 1, seq) - attention)


def days_without_mfu(params, tokens, n_gpus, peak_flops_per_sec, mfu):
    return ref.training_days(params, tokens, n_gpus, peak_flops_per_sec, 1.0)


def mfu_inverted(flops, seconds, peak_flops_per_sec):
    return peak_flops_per_sec / (flops / seconds)


class CounterMissesBmm(ref.FlopCounter):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket in (ref.aten.bmm, ref.aten.baddbmm):
            return func(*args, **(kwargs or {}))
        return super().__torch_dispatch__(func, types, args, kwargs)


class CounterCountsBias(ref.FlopCounter):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = super().__torch_dispatch__(func, types, args, kwargs)
        if func.overloadpacket is ref.aten.addmm:
            self.total += out.numel()
            self.by_op["aten.addmm"] += out.numel()
        return out


class CounterBmmWithoutBatch(ref.FlopCounter):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket is not ref.aten.bmm:
            return super().__torch_dispatch__(func, types, args, kwargs)
        a, b = args[0], args[1]
        flops = ref.matmul_flops(a.shape[1], a.shape[2], b.shape[2])
        self.total += flops
        self.by_op["aten.bmm"] = self.by_op.get("aten.bmm", 0) + flops
        return func(*args, **(kwargs or {}))


class CounterNeverResets(ref.FlopCounter):
    def __enter__(self):
        return super(ref.FlopCounter, self).__enter__()


class CounterFusedBackwardAsForward(ref.FlopCounter):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = str(func.overloadpacket)
        if name.startswith("aten._scaled_dot_product") and name.endswith("_backward"):
            flops = 2 * ref._sdpa_forward(args[1], args[2], args[3])
            self.total += flops
            self.by_op[name] = self.by_op.get(name, 0) + flops
            return func(*args, **(kwargs or {}))
        return super().__torch_dispatch__(func, types, args, kwargs)


def _m(id, description, **replaces):
    return Mistake("flops", id, description, replaces)


MISTAKES = [
    _m("macs", "counts multiply-accumulates (b*d*k), half the FLOPs", matmul_flops=macs),
    _m("two_d_minus_one", "counts d multiplies and d-1 adds per output: b*k*(2d-1)", matmul_flops=two_d_minus_one),
    _m("backward_1x", "backward counted as 1x forward (training step = 2x forward)",
       training_step_flops=backward_same_as_forward),
    _m("no_attention_term", "drops the context-squared attention scores", transformer_forward_flops=no_attention_term),
    _m("no_lm_head", "forgets the LM head's d_model x vocab_size matmul", transformer_forward_flops=no_lm_head),
    _m("gqa_ignored", "K and V projections counted d_model wide under grouped-query attention",
       transformer_forward_flops=gqa_ignored),
    _m("attention_one_layer", "attention scores counted once, not per layer",
       attention_score_flops=attention_per_layer_once),
    _m("mlp_6nd", "the first layer's input gradient counted (6*N*D for a lone Linear instead of 4)",
       mlp_training_flops=every_layer_needs_input_grad),
    _m("params_no_norms", "RMSNorm weights left out of the parameter count",
       transformer_param_count=params_without_norms),
    _m("params_tied", "embedding and LM head counted once (they are untied)",
       transformer_param_count=params_tied_embedding),
    _m("params_gate_third_layer", "the gate of the third layer and after left out of the parameter count (issue 53: "
       "6 of 24 one-token resubmissions passed before the corners were explicit examples)",
       transformer_param_count=params_gate_from_third_layer),
    _m("two_nd", "training compute as 2*N*D (forward only)", approx_training_flops=two_n_d),
    _m("fraction_of_weights", "attention share over the weight FLOPs instead of all FLOPs",
       attention_flops_fraction=fraction_of_weights),
    _m("days_no_mfu", "training days at 100% of peak, ignoring MFU", training_days=days_without_mfu),
    _m("mfu_inverted", "MFU as peak over achieved", mfu=mfu_inverted),
    _m("counter_misses_bmm", "the counter ignores bmm and baddbmm (attention, einsum)", FlopCounter=CounterMissesBmm),
    _m("counter_counts_bias", "the counter adds m*n FLOPs for addmm's bias", FlopCounter=CounterCountsBias),
    _m("counter_bmm_no_batch", "the counter forgets bmm's batch dimension", FlopCounter=CounterBmmWithoutBatch),
    _m("counter_never_resets", "the counter keeps counting across uses", FlopCounter=CounterNeverResets),
    _m("counter_fused_backward_2x", "fused attention backward counted as 2x its forward (it is 2.5x for equal "
       "head sizes: the scores are recomputed)", FlopCounter=CounterFusedBackwardAsForward),
]


# The behaviours each mistake may cost: those whose tests it failed under the held-out grading seed of
# tests/meta/test_mistakes.py, which checks it (the behaviours that wait for them may lose their points too).
# `python -m tests.meta.mutation --every-test --profile grade --grading-seed 11 --costs` prints what a run saw.
COSTS = {
    "macs": ("matmul_flops and linear_flops",),
    "two_d_minus_one": ("matmul_flops and linear_flops",),
    "backward_1x": ("training-step FLOPs",),
    "no_attention_term": ("transformer forward FLOPs",),
    "no_lm_head": ("transformer forward FLOPs",),
    "gqa_ignored": ("transformer forward FLOPs",),
    "attention_one_layer": ("attention FLOPs",),
    "mlp_6nd": ("training-step FLOPs",),
    "params_no_norms": ("transformer_param_count",),
    "params_tied": ("transformer_param_count",),
    "params_gate_third_layer": ("transformer_param_count",),
    "two_nd": ("6ND, training days, MFU",),
    "fraction_of_weights": ("attention FLOPs", "attention share grows with the context"),
    "days_no_mfu": ("6ND, training days, MFU",),
    "mfu_inverted": ("6ND, training days, MFU",),
    "counter_misses_bmm": ("FlopCounter: attention", "FlopCounter: matmul programs", "FlopCounter: transformers"),
    "counter_counts_bias": ("FlopCounter: MLPs", "FlopCounter: matmul programs"),
    "counter_bmm_no_batch": ("FlopCounter: attention", "FlopCounter: matmul programs", "FlopCounter: transformers"),
    "counter_never_resets": ("FlopCounter: starts from zero",),
    "counter_fused_backward_2x": ("FlopCounter: attention",),
}
