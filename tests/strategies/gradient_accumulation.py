"""Strategies of problem gradient_accumulation (tests/test_gradient_accumulation.py): models, batches
and micro-batch sizes."""

from hypothesis import strategies as st

from tests.strategies import distinct_sizes


@st.composite
def grad_accum_specs(draw, dtype: str = "float64") -> dict:
    """Specs of tests/scenarios/gradient_accumulation.py: an MLP of distinct sizes, a batch of 1-12 examples
    (maybe with a sequence dimension), a micro-batch size from 1 to beyond the batch (uneven splits
    included), a mean-reduced loss, maybe stale gradients left in the parameters."""
    batch = draw(st.integers(1, 12))
    return {"seed": draw(st.integers(0, 2**16)), "sizes": draw(distinct_sizes(3, 2, 9)), "batch": batch,
            "micro_batch_size": draw(st.integers(1, batch + 2)), "seq": draw(st.sampled_from([0, 3])),
            "loss": draw(st.sampled_from(["mse", "cross_entropy"])), "dtype": dtype, "stale": draw(st.booleans())}
