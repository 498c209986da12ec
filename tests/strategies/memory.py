"""Strategies of problem memory (tests/test_memory.py): precision policies, and specs of the models and
stacks of tests/scenarios/memory.py."""

from hypothesis import strategies as st

from tests.strategies import distinct_sizes


def precision_policies():
    """Named policies, and made-up ones whose parameter, gradient, state and master dtypes differ."""
    import torch

    from assignment.given import POLICIES, PrecisionPolicy

    floats = st.sampled_from([torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.float8_e4m3fn])
    made_up = st.builds(PrecisionPolicy, name=st.just("made_up"), param_dtype=floats, grad_dtype=floats,
                        state_dtype=floats, master_dtype=st.none() | floats)
    return st.sampled_from(sorted(POLICIES)) | made_up


@st.composite
def module_specs(draw) -> dict:
    """Specs of tests/scenarios/memory.py's `build_model`: tied, shared, frozen and mixed-dtype parameters."""
    d, hidden, vocab = draw(distinct_sizes(3, 1, 9))
    return {"d": d, "hidden": hidden, "vocab": vocab, "n_blocks": draw(st.integers(1, 3)),
            "bias": draw(st.booleans()), "norm": draw(st.sampled_from([None, "layernorm", "batchnorm"])),
            "tie": draw(st.booleans()), "share": draw(st.booleans()), "frozen": draw(st.booleans()),
            "dtype": draw(st.sampled_from(["float32", "bfloat16", "float64"]))}


@st.composite
def stack_specs(draw, extras: tuple = (None, "relu", "gelu", "tanh", "sigmoid", "layernorm", "slice"),
                seqs: tuple = (0, 3)) -> dict:
    """Specs of tests/scenarios/memory.py's `build_stack`: Linear layers of distinct widths, each maybe
    followed by one of `extras` (an activation, a LayerNorm or a slicing view; None: nothing), on an input
    with a sequence dimension of one of `seqs` (0: none; a Linear on a 3-d input saves a view of it)."""
    widths = draw(distinct_sizes(draw(st.integers(2, 5)), 2, 12))
    layers = []
    for width in widths[1:]:
        layers.append(["linear", width, draw(st.booleans())])
        extra = draw(st.sampled_from(extras))
        if extra:
            layers.append([extra])
    return {"width": widths[0], "layers": layers, "batch": draw(st.integers(1, 5)),
            "seq": draw(st.sampled_from(seqs)), "dtype": draw(st.sampled_from(["float32", "float64", "bfloat16"])),
            "input_grad": draw(st.booleans()), "seed": draw(st.integers(0, 2**16))}
