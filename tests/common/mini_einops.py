"""mini_einops: a generated call's input tensors (tests/strategies/mini_einops.py specs)."""

import torch

_DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64}
# (rtol, atol) of a float result against einops' (tests/test_mini_einops.py's docstring says why)
FLOAT_TOL = {"float32": (1e-5, 1e-5), "float64": (1e-12, 1e-12)}


def make_inputs(spec: dict) -> list[torch.Tensor]:
    """The spec's input tensors, from its seed: standard normal floats, or integers in [-4, 4]; every
    second one non-contiguous (a transposed buffer), so `.view` where `.reshape` is needed fails."""
    generator = torch.Generator().manual_seed(spec["seed"])
    tensors = []
    for i, shape in enumerate(spec["shapes"]):
        flipped = list(reversed(shape))
        if spec["dtype"] == "int64":
            t = torch.randint(-4, 5, flipped, generator=generator)
        else:
            t = torch.randn(flipped, generator=generator, dtype=_DTYPES[spec["dtype"]])
        t = t.permute(*reversed(range(len(shape))))
        tensors.append(t if i % 2 else t.contiguous())
    return tensors
