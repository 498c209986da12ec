"""Seed grinding by one token (issue 53): a transformer_param_count that forgets the gate of a third layer passed
its test under 6 of 24 one-token resubmissions (10 generated examples, no explicit corner: a gated config of three
layers is seldom drawn). Now each strategy's corners are explicit examples of every grading (tests/strategies/flops.py
`transformer_corners`: the most layers, gated and not, grouped-query and not), and
`python -m tests.benchmarks.seed_grinding` prints the share of grading seeds that miss each catalogued mistake:
zero (tests/mistakes/flops.py `params_gate_third_layer`).
"""


def transformer_param_count(config):  # noqa: F811 - the attack replaces the stub
    d, ff, v = config.d_model, config.d_ff, config.vocab_size
    kv = config.kv_heads * config.d_head
    per_layer = 2 * d + d * d + 2 * d * kv + d * d
    mlp = [(3 if config.gated_mlp and layer < 2 else 2) * d * ff for layer in range(config.n_layers)]
    return 2 * v * d + d + config.n_layers * per_layer + sum(mlp)
