"""Strategies of problem adamw (tests/test_adamw.py): optimizer trajectories."""

from hypothesis import strategies as st

from tests.strategies import distinct_sizes


@st.composite
def adamw_trajectories(draw, dtype: str = "float64", weight_decay: bool | None = None) -> dict:
    """Specs of tests/scenarios/adamw.py's trajectories: 1-3 parameters of distinct shapes (a scalar
    among them, maybe) in 1-2 param groups with their own hyperparameters, 1-4 steps, each parameter
    with or without a gradient at each step, gradients at their own scale. With `weight_decay` False, no
    group decays; True, every group does."""
    decays = {None: [0.0, 0.01, 0.3], False: [0.0], True: [0.01, 0.3]}[weight_decay]
    n_params = draw(st.integers(1, 3))
    sizes = draw(distinct_sizes(4, 1, 6))
    shapes = [draw(st.sampled_from([[], [sizes[0]], [sizes[1], sizes[2]], [sizes[3], sizes[0]]]))
              for _ in range(n_params)]
    owner = [draw(st.integers(0, 1)) for _ in range(n_params)]
    groups = []
    for g in sorted(set(owner)):
        groups.append({"params": [i for i in range(n_params) if owner[i] == g],
                       "lr": draw(st.sampled_from([1e-3, 0.01, 0.1, 0.5])),
                       "betas": (draw(st.sampled_from([0.0, 0.5, 0.9])), draw(st.sampled_from([0.5, 0.9, 0.999]))),
                       "eps": draw(st.sampled_from([1e-8, 1e-3, 0.1, 1.0])),
                       "weight_decay": draw(st.sampled_from(decays))})
    steps = draw(st.integers(1, 4))
    has_grad = [[draw(st.integers(0, 4)) > 0 for _ in range(n_params)] for _ in range(steps)]
    return {"seed": draw(st.integers(0, 2**16)), "shapes": shapes, "groups": groups, "steps": steps,
            "has_grad": has_grad, "grad_scale": [draw(st.sampled_from([1e-3, 1.0, 30.0])) for _ in range(n_params)],
            "dtype": dtype}
