"""Strategies of problem gradient_accumulation (tests/test_gradient_accumulation.py): models, batches
and micro-batch sizes."""

from hypothesis import strategies as st

from tests.strategies import distinct_sizes

SPLITS = ("even", "uneven")


def split_of(batch: int, micro_batch_size: int) -> str:
    """"even" where the micro-batches are all the same size (micro_batch_size divides the batch), else "uneven":
    the last micro-batch is smaller (or the only one is: micro_batch_size beyond the batch)."""
    return "even" if batch % micro_batch_size == 0 else "uneven"


@st.composite
def grad_accum_specs(draw, dtype: str = "float64", split: str | None = None) -> dict:
    """Specs of tests/scenarios/gradient_accumulation.py: an MLP of distinct sizes, a batch of 1-12 examples
    (maybe with a sequence dimension), a micro-batch size from 1 to beyond the batch, a mean-reduced loss,
    maybe stale gradients left in the parameters. `split` (SPLITS) draws only even or only uneven splits
    (`split_of`); None, either."""
    batch = draw(st.integers(2 if split == "uneven" else 1, 12))
    sizes = [m for m in range(1, batch + 3) if split in (None, split_of(batch, m))]
    return {"seed": draw(st.integers(0, 2**16)), "sizes": draw(distinct_sizes(3, 2, 9)), "batch": batch,
            "micro_batch_size": draw(st.sampled_from(sizes)), "seq": draw(st.sampled_from([0, 3])),
            "loss": draw(st.sampled_from(["mse", "cross_entropy"])), "dtype": dtype, "stale": draw(st.booleans())}


@st.composite
def peak_specs(draw) -> dict:
    """Specs for measuring the saved-activation peak: float32, no stale gradients, a batch of 2-12 examples and
    `peak_sizes`, two to four of its divisors (even splits), largest first."""
    batch = draw(st.integers(2, 12))
    divisors = [m for m in range(1, batch + 1) if batch % m == 0]
    sizes = sorted(draw(st.lists(st.sampled_from(divisors), min_size=2, max_size=4, unique=True)), reverse=True)
    return {"seed": draw(st.integers(0, 2**16)), "sizes": draw(distinct_sizes(3, 2, 9)), "batch": batch,
            "micro_batch_size": sizes[0], "seq": draw(st.sampled_from([0, 3])),
            "loss": draw(st.sampled_from(["mse", "cross_entropy"])), "dtype": "float32", "stale": False,
            "peak_sizes": sizes}
