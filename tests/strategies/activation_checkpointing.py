"""Strategies of problem activation_checkpointing (tests/test_activation_checkpointing.py): models to checkpoint."""

from hypothesis import strategies as st

from tests.strategies import distinct_sizes

NON_TENSORS = ("non-tensors",)
TENSORS_ONLY = ("module", "tensor-arguments")


@st.composite
def checkpoint_specs(draw, max_layers: int = 6, dropout: bool | None = None, calls: tuple = NON_TENSORS) -> dict:
    """Specs of tests/scenarios/activation_checkpointing.py: 1-`max_layers` layers, batch != width, dropout
    (maybe), the input with or without requires_grad, an extra tensor argument (maybe), a float scale, a flag,
    and how the block is checkpointed, one of `calls` (tests/scenarios/activation_checkpointing.py CALLS: a
    module called on x alone has no extra argument)."""
    batch, width = draw(distinct_sizes(2, 1, 7))
    has_dropout = draw(st.booleans()) if dropout is None else dropout
    call = draw(st.sampled_from(calls))
    return {"seed": draw(st.integers(0, 2**16)), "layers": draw(st.integers(1, max_layers)), "batch": batch,
            "width": width, "dtype": draw(st.sampled_from(["float64", "float32"])),
            "dropout": draw(st.sampled_from([0.25, 0.5])) if has_dropout else 0.0,
            "x_requires_grad": draw(st.booleans()),
            "shift": None if call == "module" else draw(st.sampled_from([None, False, True])),
            "scale": draw(st.sampled_from([0.5, -2.0, 3.0])), "flag": draw(st.booleans()), "call": call}
