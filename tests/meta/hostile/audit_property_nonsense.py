"""Properties paid for nonsense (issue 41): answers made to satisfy the tests that check only a property, and
nothing else. "The attention share grows with the context" checks attention_flops_fraction lies in (0, 1) and
grows with seq, and that training_step_flops / (6 N D) grows too, with N from transformer_param_count: a share of
seq / (seq + 1), a parameter count that leaves N = 1 and a step of 6 seq^2 satisfy all three (2.25 points on a
grader that gated the property on attention FLOPs alone). The property now waits for every function it calls
(grader/registry.py `requires`), and none of these is right; N is now the torch model's (issue 51: a slip in the
parameter count costs its own row), so the first and the third alone would have to pass, and they do not.
"""


def attention_flops_fraction(config, seq):  # noqa: F811 - the attack replaces the stub
    return seq / (seq + 1)


def transformer_param_count(config):  # noqa: F811
    return config.vocab_size * config.d_model + 1  # N = 1 once the embedding is left out


def training_step_flops(config, batch, seq):  # noqa: F811
    return 6 * seq * seq  # over 6 * N * seq = 6 seq: grows with the context
