"""Strategies of problem flops (tests/test_flops.py): transformer configurations and matmul programs."""

from hypothesis import strategies as st

from assignment.given import TransformerConfig


@st.composite
def transformer_configs(draw, max_layers: int = 3) -> TransformerConfig:
    n_heads = draw(st.integers(1, 4))
    d_head = draw(st.integers(1, 6))
    n_kv_heads = draw(st.sampled_from([None] + [h for h in range(1, n_heads + 1) if n_heads % h == 0]))
    return TransformerConfig(
        vocab_size=draw(st.integers(2, 40)),
        d_model=n_heads * d_head,
        n_layers=draw(st.integers(1, max_layers)),
        n_heads=n_heads,
        d_ff=draw(st.integers(1, 24)),
        n_kv_heads=n_kv_heads,
        gated_mlp=draw(st.booleans()),
    )


def transformer_corners(max_layers: int = 3) -> tuple[TransformerConfig, ...]:
    """The corners of `transformer_configs(max_layers)`, an explicit example of every grading (tests/strategies
    `every`): the most layers, gated and not, grouped-query attention and not, every size distinct from the others (a
    slip in the last layers, in the gate or in K and V shows in one of them whatever a draw would have missed: issue
    53, a parameter count forgetting the gate of a third layer passed 6 of 24 one-token resubmissions)."""
    return tuple(TransformerConfig(vocab_size=13, d_model=6, n_layers=max_layers, n_heads=3, d_ff=7, n_kv_heads=kv,
                                   gated_mlp=gated) for gated in (False, True) for kv in (None, 1))


def matmul_programs():
    """Short programs of matmul-family ops on random shapes, as data: a list of (op, shape...) tuples."""
    d = st.integers(1, 9)
    op = st.one_of(
        st.tuples(st.just("mm"), d, d, d),
        st.tuples(st.just("addmm"), d, d, d),
        st.tuples(st.just("bmm"), d, d, d, d),
        st.tuples(st.just("baddbmm"), d, d, d, d),
        st.tuples(st.just("einsum"), d, d, d, d),
        st.tuples(st.just("matmul4d"), d, d, d, d, d),
    )
    return st.lists(op, min_size=1, max_size=4)
