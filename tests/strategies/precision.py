"""Strategies of problem precision (tests/test_precision.py): float32 bit patterns, values near a format's
grid, NVFP4 blocks, mixed-precision runs."""

from hypothesis import strategies as st

from tests.strategies import distinct_sizes

# float32 bit patterns worth trying on every rounding function: zeros, subnormals, ties and near-ties of
# the 16 bits that bf16 drops (1 + 2^-8 rounds down to even, 1 + 3*2^-8 up), the largest finite values
# (0x7F7F8000 rounds to inf), infinities, and NaNs whose payload would carry into the exponent or the sign.
FP32_SPECIAL_BITS = (
    0x00000000, 0x80000000, 0x00000001, 0x00007FFF, 0x00008000, 0x00018000, 0x007FFFFF, 0x80008000,
    0x3F808000, 0x3F818000, 0x3F807FFF, 0x3F808001, 0x32ABCC77, 0x7F7FFFFF, 0x7F7F7FFF, 0x7F7F8000,
    0xFF7F8000, 0x7F800000, 0xFF800000, 0x7F800001, 0x7F807FFF, 0x7FBFFFFF, 0x7FC00000, 0x7FFFFFFF,
    0xFFFFFFFF, 0xFF800001,
)


# exponent fields; the last kind adds the largest normals that round up to inf (each kind has inputs that change)
FP32_BIT_KINDS = {"normal": (1, 254), "subnormal or zero": (0, 0), "inf, NaN or overflow": (255, 255)}


def fp32_bits(kind: str | None = None):
    """One float32 bit pattern, as an unsigned int: any, a special one, or one whose lower 16 bits are a
    tie or a near-tie; with `kind` (FP32_BIT_KINDS), only those whose exponent field is of that kind, except
    that "inf, NaN or overflow" also draws the largest finite floats, those that round to inf in bf16 (their
    exponent field is 254: "normal" draws them too)."""
    tails = st.sampled_from([0x8000, 0x7FFF, 0x8001, 0x0000, 0xFFFF])
    if kind is None:
        return st.one_of(st.integers(0, 2**32 - 1), st.sampled_from(FP32_SPECIAL_BITS),
                         st.builds(lambda upper, tail: (upper << 16) | tail, st.integers(0, 0xFFFF), tails))
    low, high = FP32_BIT_KINDS[kind]
    specials = [b for b in FP32_SPECIAL_BITS if low <= (b >> 23) & 0xFF <= high]
    exponents, signs = st.integers(low, high), st.integers(0, 1)
    kinds = [
        st.builds(lambda s, e, mantissa: s << 31 | e << 23 | mantissa, signs, exponents, st.integers(0, 2**23 - 1)),
        st.sampled_from(specials),
        st.builds(lambda s, e, upper, tail: s << 31 | e << 23 | upper << 16 | tail, signs, exponents,
                  st.integers(0, 0x7F), tails)]
    if kind == "inf, NaN or overflow":  # 0x7F7F8000 and up: finite in float32, inf in bf16
        kinds.append(st.builds(lambda s, tail: s << 31 | 0x7F7F0000 | tail, signs, st.integers(0x8000, 0xFFFF)))
    return st.one_of(kinds)


@st.composite
def fp32_near_grid(draw, exponent_bits: int, mantissa_bits: int, bias: int) -> float:
    """A float32 value on or near the grid of a format with these fields: a grid point, the midpoint of two
    neighbours (a tie), one float32 step either side of a midpoint, or a random point between; from
    below the subnormals to beyond the largest value; either sign."""
    import numpy as np

    e = draw(st.integers(-bias - mantissa_bits - 1, min(2**exponent_bits - bias, 126)))
    ulp = 2.0 ** (max(e, 1 - bias) - mantissa_bits)
    k = draw(st.integers(0, 2 ** (mantissa_bits + 1) - 1))
    kind = draw(st.sampled_from(["point", "tie", "below_tie", "above_tie", "between"]))
    value = k * ulp + {"point": 0.0, "between": draw(st.floats(0, 1)) * ulp}.get(kind, ulp / 2)
    value = np.float32(value)
    if kind in ("below_tie", "above_tie"):
        value = np.nextafter(value, np.float32(-np.inf if kind == "below_tie" else np.inf))
    return float(value) * draw(st.sampled_from([1.0, -1.0]))


@st.composite
def nvfp4_inputs(draw, max_dynamic_range: int = 4) -> list:
    """Nested lists of finite float32-representable values of shape (rows, 16 * blocks), each block at its
    own magnitude (2^-range .. 2^range times a common base, reached by one of its values), so per-block
    scales matter; with the default range every block scale is in e4m3's normal range."""
    rows, blocks = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    base = 2.0 ** draw(st.integers(-20, 20))
    data = []
    for _ in range(rows):
        row = []
        for _ in range(blocks):
            magnitude = base * 2.0 ** draw(st.integers(-max_dynamic_range, max_dynamic_range))
            block = draw(st.lists(st.floats(-1, 1, width=32), min_size=16, max_size=16))
            block[draw(st.integers(0, 15))] = draw(st.sampled_from([0.5, -0.75, 1.0, -1.0]))  # the block's amax
            row += [magnitude * v for v in block]
        data.append(row)
    return data


@st.composite
def nvfp4_tensors(draw, max_blocks: int = 3):
    """NVFP4Tensors as the spec allows them, built without quantizing: values on the e2m1 grid, block scales
    exactly representable in e4m3fn (zero included), a positive float32 tensor scale."""
    import numpy as np
    import torch

    from assignment.given import NVFP4Tensor
    from tests.common.precision import decode_all

    rows, blocks = draw(st.integers(1, 3)), draw(st.integers(1, max_blocks))
    grid = [sign * v for v, _ in decode_all(2, 1, 1, False, False) for sign in (1, -1)]
    values = draw(st.lists(st.sampled_from(grid), min_size=rows * blocks * 16, max_size=rows * blocks * 16))
    scales = draw(st.lists(st.floats(0, 448), min_size=rows * blocks, max_size=rows * blocks))
    tensor_scale = float(np.float32(draw(st.floats(2.0**-20, 2.0**20))))
    return NVFP4Tensor(torch.tensor(values, dtype=torch.float32).reshape(rows, blocks * 16),
                       torch.tensor(scales).to(torch.float8_e4m3fn).float().reshape(rows, blocks), tensor_scale)


@st.composite
def mixed_precision_specs(draw, dtype: str = "bfloat16") -> dict:
    """Specs of tests/scenarios/precision.py's `mixed_steps`: a 2-layer MLP of distinct sizes, 2 steps."""
    return {"seed": draw(st.integers(0, 2**16)), "sizes": draw(distinct_sizes(3, 1, 12)),
            "batch": draw(st.integers(1, 8)), "steps": 2, "dtype": dtype,
            "init_scale": 2.0**10 if dtype == "float16" else None, "lr": 0.1}


# -- input validation: what the docstrings reject, beside what they accept ------------------------------------

ACCEPTED_NAMES = ("fp32", "fp16", "bf16", "fp8_e4m3fn", "fp8_e5m2", "fp4_e2m1")  # float_format's docstring
ACCEPTED_DTYPES = ("float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")  # the same formats, in order
OTHER_DTYPES = ("float64", "int8", "uint8", "int32", "int64", "bool", "complex64", "float8_e4m3fnuz",
                "float8_e5m2fnuz")
NOT_FLOAT32 = ("float64", "float16", "bfloat16")  # the float dtypes the stubs' annotations let through


@st.composite
def float_format_arguments(draw) -> tuple:
    """(an argument float_format must refuse, one it accepts, one it accepts for another format): another dtype,
    or a name that is not in the docstring's list (any text, or one of its names misspelt); an accepted dtype or
    name; a name or dtype of another of the accepted formats."""
    import torch

    # misspelt, not merely written in capitals or padded: code that normalises a name is not wrong about formats
    misspelt = st.sampled_from(ACCEPTED_NAMES).flatmap(lambda name: st.sampled_from(
        [name[:-1], f"{name}_", name.replace("_", ""), name.replace("fp", "float")])).filter(
        lambda name: name not in ACCEPTED_NAMES)
    unknown_text = st.text(max_size=12).filter(lambda t: t.strip().lower() not in ACCEPTED_NAMES)
    unknown = draw(st.one_of(st.sampled_from(OTHER_DTYPES).map(lambda d: getattr(torch, d)),
                             unknown_text, misspelt))
    def spelt(k: int):  # format k of ACCEPTED_NAMES, by its name or, where torch has it, its dtype
        dtype = [getattr(torch, ACCEPTED_DTYPES[k])] if k < len(ACCEPTED_DTYPES) else []
        return draw(st.sampled_from([ACCEPTED_NAMES[k], *dtype]))

    known, other = draw(st.lists(st.integers(0, len(ACCEPTED_NAMES) - 1), min_size=2, max_size=2, unique=True))
    return unknown, spelt(known), spelt(other)


@st.composite
def float32_arrays(draw, bound: float | None = None) -> tuple[tuple[int, ...], list[float]]:
    """(a shape of 0-3 small dimensions, its values flat): finite float32 values (of magnitude <= bound)."""
    shape = tuple(draw(st.lists(st.integers(0, 4), max_size=3)))
    size = 1
    for n in shape:
        size *= n
    floats = st.floats(None if bound is None else -bound, bound, width=32, allow_nan=False, allow_infinity=False)
    values = draw(st.lists(floats, min_size=size, max_size=size))
    return shape, values


@st.composite
def nvfp4_shapes_that_do_not_block(draw) -> tuple[int, ...]:
    """Shapes whose last dimension is not a positive multiple of 16 (0 among them), 0-2 leading dimensions."""
    last = draw(st.integers(0, 50).filter(lambda n: n % 16 or n == 0))
    return (*draw(st.lists(st.integers(1, 3), max_size=2)), last)


@st.composite
def nvfp4_out_of_range(draw) -> tuple[list, list]:
    """(an input nvfp4_quantize must refuse, a well-formed one): the well-formed input (`nvfp4_inputs`) with an
    inf, -inf or NaN at a drawn place, or scaled so that its amax is below 6 * 448 * 2^-126 (not all zeros)."""
    data = draw(nvfp4_inputs())
    bad = [list(row) for row in data]
    if draw(st.booleans()):
        row, column = draw(st.integers(0, len(bad) - 1)), draw(st.integers(0, len(bad[0]) - 1))
        bad[row][column] = draw(st.sampled_from([float("inf"), float("-inf"), float("nan")]))
    else:
        amax = max(abs(v) for row in data for v in row)
        tiny = draw(st.floats(2.0**-149, 21 * 2.0**-120, width=32))  # up to half of 6 * 448 * 2^-126
        bad = [[v / amax * tiny for v in row] for row in data]
    return bad, data


@st.composite
def nvfp4_mismatched(draw) -> tuple:
    """(an NVFP4Tensor nvfp4_dequantize must refuse, a well-formed one): the well-formed one (`nvfp4_tensors`)
    with one block scale too few or too many per row, or a row of scales too many."""
    import torch

    from assignment.given import NVFP4Tensor

    q = draw(nvfp4_tensors())
    scales = q.block_scales
    how = draw(st.sampled_from(["too few", "too many", "other leading dimensions"]))
    if how == "too few" and scales.shape[-1] > 1:
        scales = scales[..., :-1]
    elif how == "other leading dimensions":
        scales = torch.cat([scales, scales[:1]])
    else:
        scales = torch.cat([scales, scales[..., :1]], dim=-1)
    return NVFP4Tensor(q.values, scales.contiguous(), q.tensor_scale), q
