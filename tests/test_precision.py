"""Problem (precision): number formats and mixed precision.

Oracles:
- `torch.finfo` for the ranges and resolution of fp32, fp16, bf16, fp8 e4m3fn and e5m2; torch's own
  decoding of bit patterns (`tensor.view(dtype)`) for the bias, the smallest subnormal and the special
  codes; a hand-checked table for fp4 e2m1 (0, 0.5, 1, 1.5, 2, 3, 4, 6), which torch cannot compute with.
- torch's casts `x.to(dtype).float()` for `round_to_bf16` and `quantize`, compared bit for bit (NaN
  against NaN whatever its payload). Verified behaviour of torch 2.13's casts out of range: fp16, bf16
  and fp8 e5m2 round to +-inf from max + ulp/2 on (IEEE); fp8 e4m3fn saturates to +-448, inf included;
  NaN stays NaN in every format.
- For formats torch has no dtype for (fp4 e2m1, the MX fp6 formats e2m3 and e3m2, an IEEE-style e4m3),
  a brute-force oracle: every code decoded by the definition in `FloatFormat`'s docstring, the nearest
  value picked by distance, ties to the code whose last bit is 0. This oracle is itself checked against
  torch's casts on the two fp8 formats.
- NVFP4: properties (values on the e2m1 grid, block scales on the e4m3 grid and within half an e4m3
  step of the ideal scale, each value the nearest grid point, a per-block error bound, exactness for
  representable input) and a ValueError for shapes that do not split into blocks of 16.
- Input validation: each test draws what a docstring refuses and, beside it, what it accepts, whose result must
  be of the right kind (a FloatFormat; float32 of the input's shape; bfloat16 values; values of the format, the
  grid decoded as above; an NVFP4Tensor on the e2m1 grid): its own evidence, so it waits for no value test.
- Mixed precision: a dispatch-mode spy on every op of the step (the dtypes of every matmul), the dtypes of
  parameters, gradients and optimizer state, and a plain float32 step computed in the test process.

Tolerances: formats, rounding and quantization are exact (bits). The NVFP4 tensor scale is amax / 2688
in float32 (one rounding: 1e-6 relative); dequantization is a product of three float32 numbers (two
roundings: 1e-6 relative). Mixed-precision updates against the float32 step, as the norm of the
difference over the norm of the float32 update after two SGD steps: bf16 keeps 8 significant bits (unit
roundoff 2^-9 = 0.002 on every matmul operand), measured up to 0.02 on these models, so 0.1; fp16 keeps
11 (2^-12), measured up to 0.001, so 0.02. The catalogued mistakes are off by 0.5 or more (or fail a
dtype check).
"""

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from assignment.given import FloatFormat
from tests import audit, audit_run, oracles
from tests.audit_run import own_run, run_without
from tests.checks import call_text
from tests.common.precision import (
    SMALL_FORMATS,
    TORCH_FORMATS,
    decode_all,
    decode_code,
    tensor_from_bits,
)
from tests.documented import cases, expect_documented_error
from tests.scenarios import precision as scenarios
from tests.strategies.precision import (
    FP32_BIT_KINDS,
    NOT_FLOAT32,
    float32_arrays,
    float_format_arguments,
    fp32_bits,
    fp32_near_grid,
    mixed_precision_specs,
    nvfp4_inputs,
    nvfp4_mismatched,
    nvfp4_out_of_range,
    nvfp4_shapes_that_do_not_block,
)

pytestmark = pytest.mark.precision

E2M1_GRID = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)  # hand-checked: 0.M * 2^0 subnormal, 1.M * 2^(E-1)
HINT_ROUND = "round to nearest, ties to even (the neighbour whose last mantissa bit is 0), not truncation"


def wrong_floats(got: torch.Tensor, expected: torch.Tensor) -> torch.Tensor:
    """Where two float32 tensors of one shape differ in their bits, NaN matching NaN whatever its payload."""
    got_nan, expected_nan = torch.isnan(got), torch.isnan(expected)
    return (got_nan != expected_nan) | (~expected_nan & (got.view(torch.int32) != expected.view(torch.int32)))


def expect_same_floats(got, expected: torch.Tensor, x: torch.Tensor, *, what: str, source: str, hint: str) -> None:
    """Bit-for-bit equal float32 tensors, NaN matching NaN whatever its payload."""
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32 and got.shape == expected.shape, (
        f"{what}: expected a float32 tensor of shape {tuple(expected.shape)}, got "
        f"{got.dtype if isinstance(got, torch.Tensor) else type(got).__name__} "
        f"{tuple(got.shape) if isinstance(got, torch.Tensor) else ''}")
    wrong = wrong_floats(got, expected)
    if wrong.any():
        i = int(wrong.flatten().nonzero()[0])
        xi, gi, ei = x.flatten()[i], got.flatten()[i], expected.flatten()[i]
        raise AssertionError(
            f"{what} is wrong at {int(wrong.sum())} of {x.numel()} values, e.g. at flat index {i}:\n"
            f"  input:    {xi.item()!r} (bits 0x{xi.view(torch.int32).item() & 0xFFFFFFFF:08X})\n"
            f"  expected: {ei.item()!r} (bits 0x{ei.view(torch.int32).item() & 0xFFFFFFFF:08X})   ({source})\n"
            f"  got:      {gi.item()!r} (bits 0x{gi.view(torch.int32).item() & 0xFFFFFFFF:08X})\n  hint: {hint}")


def brute_quantize(x: torch.Tensor, fmt: FloatFormat) -> torch.Tensor:
    """The nearest value of `fmt` to each element (ties to the even code), inf or saturation beyond range."""
    grid = decode_all(fmt.exponent_bits, fmt.mantissa_bits, fmt.bias, fmt.has_inf, fmt.has_nan)
    if fmt.has_inf:  # rounding as if the exponent went on: past the largest value, the next is inf
        grid.append((2.0 ** (2**fmt.exponent_bits - 1 - fmt.bias), 0))
    out = []
    for value in x.tolist():
        if math.isnan(value):
            out.append(math.nan)
            continue
        size = abs(value)
        best = math.inf if math.isinf(size) else min(grid, key=lambda vc: (abs(vc[0] - size), vc[1] & 1))[0]
        if fmt.has_inf and best > fmt.max_normal:
            best = math.inf
        out.append(math.copysign(min(best, fmt.max_normal) if not fmt.has_inf else best, value))
    return torch.tensor(out, dtype=torch.float32)


# -- formats ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(TORCH_FORMATS))
@pytest.mark.parametrize("by", ["dtype", "name"])
def test_float_format_matches_finfo(impl, name, by):
    dtype, e, m, _ = TORCH_FORMATS[name]
    fmt = impl.precision.float_format(dtype if by == "dtype" else name)
    what = call_text("float_format", dtype if by == "dtype" else name)
    info = torch.finfo(dtype)
    assert type(fmt) is FloatFormat, f"{what} should return a FloatFormat, got {type(fmt).__name__}"
    top = (2**e - 1) << m  # all-ones exponent, zero mantissa
    expected = {
        "name": name, "exponent_bits": e, "mantissa_bits": m,
        "bias": next(b for b in range(2**e) if decode_code(b << m, name) == 1.0),  # the code of 1.0 is bias << m
        "has_inf": math.isinf(decode_code(top, name)),
        "has_nan": math.isnan(decode_code(top | (2**m - 1), name)),
        "max_normal": info.max, "min_normal": info.smallest_normal,
        "min_subnormal": decode_code(1, name), "eps": info.eps,
    }
    for field, value in expected.items():
        assert getattr(fmt, field) == value, (
            f"{what}.{field} is wrong\n  expected: {value!r}   (torch.finfo({dtype}) and torch's decoding of "
            f"bit patterns)\n  got:      {getattr(fmt, field)!r}")
    assert 1 + fmt.exponent_bits + fmt.mantissa_bits == info.bits, (
        f"{what}: 1 sign bit + {fmt.exponent_bits} exponent bits + {fmt.mantissa_bits} mantissa bits should be the "
        f"format's {info.bits} bits")


def test_float_format_fp4_e2m1_hand_table(impl):
    fmt = impl.precision.float_format("fp4_e2m1")
    # Hand-checked: bias 1; codes 0 0 0 and 0 0 1 are 0 and 0.5 (subnormal, 0.M * 2^0); exponents 1..3 give
    # 1, 1.5, 2, 3, 4, 6 (1.M * 2^(E-1)); no code is inf or NaN.
    expected = FloatFormat("fp4_e2m1", 2, 1, 1, has_inf=False, has_nan=False, max_normal=6.0, min_normal=1.0,
                           min_subnormal=0.5, eps=0.5)
    assert fmt == expected, f"float_format('fp4_e2m1')\n  expected: {expected}\n  got:      {fmt}"
    grid = sorted(v for v, _ in decode_all(2, 1, fmt.bias, fmt.has_inf, fmt.has_nan))
    assert tuple(grid) == E2M1_GRID, (f"the values fp4_e2m1's codes decode to with bias {fmt.bias}\n  expected: "
                                      f"{E2M1_GRID}\n  got:      {tuple(grid)}")


# -- input validation ---------------------------------------------------------------------------------------
# Each validation test draws what the docstring refuses and, in the same call, what it accepts: the refused
# argument raises ValueError, the accepted one returns a value of the right kind (type, dtype, shape, and a
# value of the format: the lower 16 bits zero for bf16, a point of the grid for quantize) without error, that
# depends on the input as every rounding does (`expect_follows_the_input`: nonzero with the input's sign where
# the input is a normal number; two formats, two FloatFormats; the values' zeros kept by a dequantization). The
# accepted call is the evidence that the check is on the input and that the function computes from it, so a
# function that always raises, returns a constant or a placeholder of the right kind (zeros), or looks its
# answers up in a table passes none of them; whether the values are the right ones is the other rows' question
# (truncation, ties away, flushed subnormals, saturation, a forgotten scale all pass here), so a slip in the
# values costs those rows alone.

def expect_refused(call, what: str) -> None:
    with pytest.raises(ValueError):
        call()
        pytest.fail(f"{what} should raise ValueError; it returned")


def expect_accepted(call, what: str):
    try:
        return call()
    except NotImplementedError:
        raise
    except Exception as exc:  # noqa: BLE001 - the accepted call must not raise
        pytest.fail(f"{what} is valid input and should return; it raised {type(exc).__name__}: {exc}")


def expect_float32_like(got, shape: tuple, what: str) -> None:
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32 and tuple(got.shape) == shape, (
        f"{what} should return a float32 tensor of shape {shape}; got "
        + (f"{got.dtype} of shape {tuple(got.shape)}" if isinstance(got, torch.Tensor) else type(got).__name__))


def expect_follows_the_input(got: torch.Tensor, x: torch.Tensor, smallest_normal: float, what: str) -> None:
    """Each input of magnitude at least `smallest_normal` (a normal number of the format, within its range as
    drawn) gives a nonzero result of its sign: true of every rounding (to nearest, toward zero, away; subnormals
    flushed or kept), false of a placeholder (zeros, a constant), which computes nothing from the input."""
    normal = x.abs() >= smallest_normal
    lost = normal & ((got == 0) | (torch.sign(got) != torch.sign(x)))
    assert not lost.any(), (
        f"{what}: the inputs {x[lost].tolist()[:5]} (normal numbers of the format) gave {got[lost].tolist()[:5]}; a "
        f"rounding, in any direction, keeps a normal number's sign and does not make it zero")


def on_grid(values: torch.Tensor, fmt: FloatFormat) -> list[float]:
    """The values of `values` that are not values of `fmt` (NaN counts as off the grid)."""
    grid = {sign * v for v, _ in decode_all(fmt.exponent_bits, fmt.mantissa_bits, fmt.bias, fmt.has_inf,
                                            fmt.has_nan) for sign in (1.0, -1.0)}
    return [v for v in values.flatten().tolist() if v not in grid]


def expect_nvfp4_like(q, x: torch.Tensor, what: str) -> None:
    """An NVFP4Tensor for x: float32 values of x's shape on the e2m1 grid, a block scale per 16 values."""
    assert type(q).__name__ == "NVFP4Tensor", f"{what} should return an NVFP4Tensor; got {type(q).__name__}"
    expect_float32_like(q.values, tuple(x.shape), f"{what}.values")
    blocks = (*x.shape[:-1], x.shape[-1] // 16)
    assert isinstance(q.block_scales, torch.Tensor) and tuple(q.block_scales.shape) == blocks, (
        f"{what}.block_scales should have shape {blocks} (one scale per block of 16)")
    off = on_grid(q.values, SMALL_FORMATS["fp4_e2m1"])
    assert not off, f"{what}.values should be on the e2m1 grid (+-{E2M1_GRID}); these are not: {off[:5]}"
    # computed from x: its largest value scales to a nonzero value (6, or near it, whatever the roundings), and no
    # value has the opposite sign of its input
    flipped = torch.sign(q.values) * torch.sign(x) < 0
    assert not flipped.any(), f"{what}.values should keep the signs of x; {int(flipped.sum())} values do not"
    top = x.abs().flatten().argmax()
    assert q.values.flatten()[top] != 0, (
        f"{what}.values is 0 where x has its largest magnitude, {x.flatten()[top].item()!r}: the block holding "
        f"the tensor's amax scales it to the top of the e2m1 grid")


@given(arguments=float_format_arguments())
def test_float_format_rejects_unknown_formats(impl, arguments):
    unknown, known, other = arguments
    expect_refused(lambda: impl.precision.float_format(unknown), f"float_format({unknown!r})")
    got = expect_accepted(lambda: impl.precision.float_format(known), f"float_format({known!r})")
    assert type(got).__name__ == "FloatFormat", (
        f"float_format({known!r}) should return a FloatFormat; got {type(got).__name__}")
    # the evidence that it answers the format asked for (which fields are right is float_format's row)
    assert got != impl.precision.float_format(other), (
        f"float_format({known!r}) and float_format({other!r}) are two formats and should differ; both are {got}")


def test_lecture_facts_ranges_of_fp8(impl):
    e4m3, e5m2 = impl.precision.float_format(torch.float8_e4m3fn), impl.precision.float_format(torch.float8_e5m2)
    # e4m3: more precision (eps 1/8), range +-448; e5m2: less precision (eps 1/4), range +-57344
    for name, got, expected in [("fp8 e4m3fn", e4m3, (448.0, 0.125, 2.0**-9)),
                                ("fp8 e5m2", e5m2, (57344.0, 0.25, 2.0**-16))]:
        seen = (got.max_normal, got.eps, got.min_subnormal)
        assert seen == expected, (
            f"float_format({name}): (max_normal, eps, min_subnormal) should be {expected} (the lecture's ranges, "
            f"the OCP fp8 specification), got {seen}\n  hint: e4m3fn has no inf (its top exponent holds numbers, "
            f"all but the NaN code); eps is 2^-mantissa_bits; subnormals reach 2^(1 - bias - mantissa_bits)")
    assert (torch.finfo(torch.float8_e4m3fn).max, torch.finfo(torch.float8_e5m2).max) == (448.0, 57344.0), (
        "torch's fp8 maxima are not the OCP specification's: a test premise, not your code")


# -- round_to_bf16 ---------------------------------------------------------------------------------------

# one item per kind of bit pattern: a slip in one kind costs that share only
@pytest.mark.parametrize("kind", list(FP32_BIT_KINDS), ids=lambda kind: kind.replace(" ", "-"))
@given(data=st.data())
def test_round_to_bf16_matches_torch_cast(impl, kind, data):
    x = tensor_from_bits(data.draw(st.lists(fp32_bits(kind), min_size=1, max_size=40), label="bits"))
    got = impl.precision.round_to_bf16(x)
    expect_same_floats(got, x.to(torch.bfloat16).float(), x, what="round_to_bf16(x)",
                       source="x.to(torch.bfloat16).float()",
                       hint=HINT_ROUND + "; NaN must stay NaN (adding to its bits can carry into inf or the sign)")


@given(rows=st.integers(1, 4), cols=st.integers(5, 9), bits=st.lists(fp32_bits(), min_size=36, max_size=36))
def test_round_to_bf16_keeps_the_shape(impl, rows, cols, bits):
    x = tensor_from_bits(bits[: rows * cols]).reshape(rows, cols)
    got = impl.precision.round_to_bf16(x)
    hint = HINT_ROUND if isinstance(got, torch.Tensor) and got.shape == x.shape else "keep the input's shape"
    expect_same_floats(got, x.to(torch.bfloat16).float(), x, what="round_to_bf16 of a 2-d tensor",
                       source="x.to(torch.bfloat16).float()", hint=hint)


WORKED_EXAMPLES = {  # kind of bit pattern (FP32_BIT_KINDS) -> fp32 bits -> bf16 upper half, hand-checked
    "normal": {
        0x3F808000: 0x3F80,  # 1 + 2^-8: a tie, rounds down to the even 1.0
        0x3F818000: 0x3F82,  # 1 + 3*2^-8: a tie, rounds up to the even 1 + 2^-6
        0x3F808001: 0x3F81,  # just above the tie: up
    },
    "subnormal or zero": {
        0x80000000: 0x8000,  # -0.0 stays -0.0
        0x00008000: 0x0000,  # a tiny subnormal tie: down to +0
        0x00018000: 0x0002,  # a subnormal tie: up to the even code
    },
    "inf, NaN or overflow": {
        0x7F7FFFFF: 0x7F80,  # the largest float32 rounds to inf
    },
}


# one item per kind of bit pattern: its points wait for that kind's generated tests (grader/registry.py)
@pytest.mark.parametrize("kind", list(WORKED_EXAMPLES), ids=lambda kind: kind.replace(" ", "-"))
def test_round_to_bf16_worked_examples(impl, kind):
    cases = WORKED_EXAMPLES[kind]
    x = tensor_from_bits(list(cases))
    expected = tensor_from_bits([v << 16 for v in cases.values()])
    expect_same_floats(impl.precision.round_to_bf16(x), expected, x, what="round_to_bf16 (worked examples)",
                       source="hand-checked, and torch's cast", hint=HINT_ROUND)
    assert torch.equal(expected.view(torch.int32), x.to(torch.bfloat16).float().view(torch.int32)), (
        "the worked examples and torch's cast disagree: a test premise, not your code")
    if kind == "inf, NaN or overflow":
        nans = tensor_from_bits([0x7F800001, 0x7FFFFFFF, 0xFFFFFFFF, 0x7F807FFF])
        assert torch.isnan(impl.precision.round_to_bf16(nans)).all(), "NaN must stay NaN, never inf or a number"


@given(array=float32_arrays(), dtype=st.sampled_from(NOT_FLOAT32))
def test_round_to_bf16_rejects_other_dtypes(impl, array, dtype):
    shape, values = array
    x = torch.tensor(values, dtype=torch.float32).reshape(shape)
    bad = x.to(getattr(torch, dtype))
    expect_refused(lambda: impl.precision.round_to_bf16(bad), f"round_to_bf16(a {dtype} tensor of shape {shape})")
    what = f"round_to_bf16(a float32 tensor of shape {shape})"
    got = expect_accepted(lambda: impl.precision.round_to_bf16(x), what)
    expect_float32_like(got, shape, what)
    low = got.view(torch.int32) & 0xFFFF
    assert not low.any(), f"{what} should return bfloat16 values (the lower 16 bits zero); some are not: {got}"
    expect_follows_the_input(got, x, torch.finfo(torch.float32).smallest_normal, what)


# -- quantize --------------------------------------------------------------------------------------------

def torch_format(name: str) -> FloatFormat:
    """The FloatFormat of a torch format, from torch (a slip in float_format costs its own row, not quantize's)."""
    dtype, e, m, _ = TORCH_FORMATS[name]
    return FloatFormat(name, e, m, 2 ** (e - 1) - 1, name != "fp8_e4m3fn", True, torch.finfo(dtype).max,
                       torch.finfo(dtype).smallest_normal, decode_code(1, name), torch.finfo(dtype).eps)


@pytest.mark.parametrize("name", list(TORCH_FORMATS))
@given(data=st.data())
def test_quantize_matches_torch_cast(impl, name, data):
    dtype, fmt = TORCH_FORMATS[name][0], torch_format(name)
    values = data.draw(st.lists(fp32_near_grid(fmt.exponent_bits, min(fmt.mantissa_bits, 10), fmt.bias), min_size=1,
                                max_size=30), label="values")
    specials = data.draw(st.lists(fp32_bits(), max_size=6), label="special_bits")
    x = torch.cat([torch.tensor(values + [math.inf, -math.inf, math.nan], dtype=torch.float32),
                   tensor_from_bits(specials)])
    got = impl.precision.quantize(x, fmt)
    expect_same_floats(got, x.to(dtype).float(), x, what=f"quantize(x, <{name}>)", source=f"x.to({dtype}).float()",
                       hint=HINT_ROUND + "; keep subnormals; past the range: inf if the format has inf, else "
                       "saturate to max_normal")


@pytest.mark.parametrize("name", list(SMALL_FORMATS))
@given(data=st.data())
def test_quantize_small_formats_against_brute_force(impl, name, data):
    fmt = SMALL_FORMATS[name]
    values = data.draw(st.lists(fp32_near_grid(fmt.exponent_bits, fmt.mantissa_bits, fmt.bias), min_size=1,
                                max_size=30), label="values")
    x = torch.tensor(values + [math.inf, -math.inf, math.nan], dtype=torch.float32)
    got = impl.precision.quantize(x, fmt)
    expected = brute_quantize(x, fmt)
    if name in TORCH_FORMATS:  # the brute-force oracle, checked against torch where torch has the format
        assert torch.equal(expected.nan_to_num(), x.to(TORCH_FORMATS[name][0]).float().nan_to_num()), (
            f"the brute-force oracle and torch's {name} cast disagree: a test premise, not your code")
    expect_same_floats(got, expected, x, what=f"quantize(x, {fmt})",
                       source="nearest of all the format's codes, decoded by definition", hint=HINT_ROUND)


# Magnitudes that fp16 cannot hold and bf16 can: bf16's normals (from 2^-126) below half of fp16's smallest
# subnormal (2^-25), drawn as float32 bits, never a bf16 tie (the rounding of ties is another row's).
BELOW_FP16 = st.builds(lambda sign, bits: sign << 31 | bits, st.integers(0, 1),
                       st.integers(0x00800000, 0x33000000 - 1).filter(lambda bits: bits & 0xFFFF != 0x8000))


@given(bits=st.lists(BELOW_FP16, max_size=8))
def test_lecture_fact_1e8_underflows_in_fp16_not_in_bf16(impl, bits):
    x = torch.cat([torch.tensor([1e-8, -1e-8]), tensor_from_bits(bits)])
    fp16 = impl.precision.quantize(x, torch_format("fp16"))
    bf16 = impl.precision.quantize(x, torch_format("bf16"))
    expect_same_floats(fp16, x.half().float(), x, what="quantize(x, fp16) for 1e-8 and values below 2^-25",
                       source="x.half()",
                       hint="fp16's smallest subnormal is 2^-24 = 6e-8: 1e-8 rounds to (signed) zero")
    expect_same_floats(bf16, x.bfloat16().float(), x, what="quantize(x, bf16) for 1e-8 and values below 2^-25",
                       source="x.bfloat16()", hint="bf16 has fp32's exponent range: 1e-8 is a normal number there")
    assert (fp16 == 0).all() and (bf16 != 0).all(), f"quantize(1e-8): fp16 gives {fp16}, bf16 {bf16}"
    assert (impl.precision.round_to_bf16(x) == bf16).all(), (
        f"round_to_bf16(x) is {impl.precision.round_to_bf16(x)}, expected quantize's bf16 {bf16}")


@given(data=st.data(), name=st.sampled_from(list(SMALL_FORMATS)), dtype=st.sampled_from(NOT_FLOAT32))
def test_quantize_rejects_other_dtypes(impl, data, name, dtype):
    fmt = SMALL_FORMATS[name]
    shape, values = data.draw(float32_arrays(bound=fmt.max_normal), label="array")  # in range: no overflow
    x = torch.tensor(values, dtype=torch.float32).reshape(shape)
    bad = x.to(getattr(torch, dtype))
    expect_refused(lambda: impl.precision.quantize(bad, fmt), f"quantize(a {dtype} tensor of shape {shape}, {name})")
    what = f"quantize(a float32 tensor of shape {shape} within +-max_normal, {name})"
    got = expect_accepted(lambda: impl.precision.quantize(x, fmt), what)
    expect_float32_like(got, shape, what)
    off = on_grid(got, fmt)
    assert not off, f"{what} should return values of {name}; these are not: {off[:5]}"
    expect_follows_the_input(got, x, fmt.min_normal, what)


# -- NVFP4 -----------------------------------------------------------------------------------------------

def e4m3_half_step(value: float) -> float:
    """Half the e4m3 grid spacing at `value` (subnormal spacing 2^-9 below 2^-6)."""
    exponent = max(math.floor(math.log2(value)), -6) if value > 0 else -6
    return 2.0 ** (exponent - 3) / 2


def check_nvfp4_encoding(x: torch.Tensor, q, what: str) -> None:
    """That q encodes x in NVFP4: values of x's shape on the e2m1 grid, and a non-negative e4m3fn block scale per
    block of 16 (what any NVFP4 quantizer returns, right or wrong in its rounding)."""
    blocks = x.shape[-1] // 16
    assert q.values.shape == x.shape, f"{what}: values should be of shape {tuple(x.shape)}, got {q.values.shape}"
    assert q.block_scales.shape == (*x.shape[:-1], blocks), (
        f"{what}: block_scales should be of shape {(*x.shape[:-1], blocks)}, got {tuple(q.block_scales.shape)}")
    grid = torch.tensor(E2M1_GRID, dtype=torch.float64)
    off_grid = ~torch.isin(q.values.abs().double(), grid)
    assert not off_grid.any(), f"{what}: values off the e2m1 grid: {q.values[off_grid][:5].tolist()}"
    scales = q.block_scales
    assert (scales >= 0).all() and torch.equal(scales.to(torch.float8_e4m3fn).float(), scales), (
        f"{what}: block scales must be non-negative e4m3fn values (torch's cast leaves them unchanged), got "
        f"{scales.flatten()[:8].tolist()}")


def check_nvfp4(x: torch.Tensor, q, what: str) -> None:
    """The structure of an NVFP4Tensor for x, its scales, and each value the nearest e2m1 point."""
    check_nvfp4_encoding(x, q, what)
    assert q.values.dtype == torch.float32 and q.block_scales.dtype == torch.float32, (
        f"{what}: values and block_scales should be float32, got {q.values.dtype} and {q.block_scales.dtype}")
    blocks, scales = x.shape[-1] // 16, q.block_scales
    grid = torch.tensor(E2M1_GRID, dtype=torch.float64)
    amax = x.abs().max().item()
    ts = q.tensor_scale
    assert type(ts) is float, f"{what}: tensor_scale should be a Python float, got {type(ts).__name__}"
    expected_ts = amax / 2688 if amax > 0 else 1.0
    assert math.isclose(ts, expected_ts, rel_tol=1e-6), (
        f"{what}: tensor_scale {ts!r}, expected amax/(6*448) = {expected_ts!r} (1.0 for all zeros)")
    block_amax = x.reshape(*x.shape[:-1], blocks, 16).abs().amax(-1).double()
    ideal = block_amax / 6 / ts
    for s, target in zip(scales.flatten().tolist(), ideal.flatten().tolist(), strict=True):
        bound = e4m3_half_step(min(target, 448.0)) * (1 + 1e-5)
        assert abs(s - min(target, 448.0)) <= bound, (
            f"{what}: block scale {s!r} is not block_amax/6/tensor_scale = {target!r} rounded to e4m3 "
            f"(within half a step, {bound!r})")
    y = x.double().reshape(*x.shape[:-1], blocks, 16) / (scales.double() * ts).unsqueeze(-1).clamp(min=1e-300)
    y = y.reshape(x.shape)
    nearest = (y.abs().unsqueeze(-1) - grid).abs().amin(-1)
    distance = (y.abs() - q.values.abs().double()).abs()
    bad = (distance > nearest + 1e-5 * (1 + y.abs())) | ((q.values != 0) & (torch.sign(q.values) != torch.sign(x)))
    assert not bad.any(), (f"{what}: values are not the nearest e2m1 points of x / (block_scale * tensor_scale): "
                           f"x/scale {y[bad][:4].tolist()}, got {q.values[bad][:4].tolist()}")


@given(data=nvfp4_inputs())
def test_nvfp4_quantize_grid_scales_and_nearest_values(impl, data):
    x = torch.tensor(data, dtype=torch.float32)
    q = impl.precision.nvfp4_quantize(x)
    check_nvfp4(x, q, f"nvfp4_quantize of shape {tuple(x.shape)}")


@given(data=nvfp4_inputs())
def test_nvfp4_error_bound_per_block(impl, data):
    x = torch.tensor(data, dtype=torch.float32)
    q = impl.precision.nvfp4_quantize(x)
    check_nvfp4_encoding(x, q, f"nvfp4_quantize of shape {tuple(x.shape)}")  # the work done: an encoding of x
    restored = impl.precision.nvfp4_dequantize(q)
    # Scale s within 1/16 of block_amax/6 (e4m3 rounding, normal range here); every value within one e2m1
    # step (<= 1, at [4, 6]) of x/s, saturation included: |error| <= s <= (17/16) * block_amax / 6.
    blocks = x.reshape(*x.shape[:-1], -1, 16)
    error = (restored.double() - x.double()).reshape(blocks.shape).abs().amax(-1)
    bound = blocks.abs().amax(-1).double() * 17 / 96 * (1 + 1e-5)
    worst = int((error - bound).flatten().argmax())
    assert (error <= bound).all(), (
        f"nvfp4 round trip of shape {tuple(x.shape)}: block {worst} has error {error.flatten()[worst].item()!r} > "
        f"(17/96) * its amax = {bound.flatten()[worst].item()!r}; each block needs its own scale")


@given(data=st.data())
def test_nvfp4_is_exact_for_representable_input(impl, data):
    rows, blocks = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    e4m3 = torch.arange(1, 127, dtype=torch.int32).to(torch.uint8).view(torch.float8_e4m3fn).float()  # > 0
    scales = torch.tensor(data.draw(st.lists(st.sampled_from(e4m3.tolist()), min_size=rows * blocks,
                                             max_size=rows * blocks))).reshape(rows, blocks)
    scales.view(-1)[data.draw(st.integers(0, rows * blocks - 1))] = 448.0  # the largest block sets the tensor scale
    values = torch.tensor(data.draw(st.lists(st.sampled_from(E2M1_GRID), min_size=rows * blocks * 16,
                                             max_size=rows * blocks * 16))).reshape(rows, blocks, 16)
    values[..., data.draw(st.integers(0, 15))] = 6.0  # every block reaches e2m1's largest value
    values = values * torch.tensor(data.draw(st.lists(st.sampled_from([1.0, -1.0]), min_size=16, max_size=16)))
    tensor_scale = 2.0 ** data.draw(st.integers(-30, 10))
    x = (values * scales.unsqueeze(-1) * tensor_scale).reshape(rows, blocks * 16)
    q = impl.precision.nvfp4_quantize(x)
    check_nvfp4_encoding(x, q, f"nvfp4_quantize of shape {tuple(x.shape)}")  # the work done: an encoding of x
    restored = impl.precision.nvfp4_dequantize(q)
    expect_same_floats(restored, x, x, what="nvfp4_dequantize(nvfp4_quantize(x)) for x = e2m1 * e4m3 * 2^k",
                       source="x itself: every value, block scale and the tensor scale are representable",
                       hint="tensor_scale = amax / (6 * 448); block scale = e4m3(block_amax / 6 / tensor_scale)")


@given(data=nvfp4_inputs())
def test_nvfp4_dequantize_multiplies_the_scales(impl, data):
    x = torch.tensor(data, dtype=torch.float32)
    q = impl.precision.nvfp4_quantize(x)
    got = impl.precision.nvfp4_dequantize(q)
    expected = (q.values.double().reshape(*q.block_scales.shape, 16) * q.block_scales.double().unsqueeze(-1)
                * q.tensor_scale).reshape(x.shape)
    assert got.dtype == torch.float32 and got.shape == x.shape, f"expected float32 {tuple(x.shape)}, got {got.dtype}"
    torch.testing.assert_close(got.double(), expected, rtol=1e-6, atol=0,
                               msg=lambda m: f"nvfp4_dequantize: values * block_scale * tensor_scale\n{m}")


@given(shape=nvfp4_shapes_that_do_not_block(), level=st.floats(0.5, 100.0, width=32), data=nvfp4_inputs())
def test_nvfp4_rejects_shapes_that_do_not_block(impl, shape, level, data):
    bad = torch.full(shape, level)
    with pytest.raises(ValueError, match="16"):
        impl.precision.nvfp4_quantize(bad)
        pytest.fail(f"nvfp4_quantize(a tensor of shape {shape}) should raise ValueError (naming 16); it returned")
    x = torch.tensor(data, dtype=torch.float32)
    what = f"nvfp4_quantize(a tensor of shape {tuple(x.shape)})"
    expect_nvfp4_like(expect_accepted(lambda: impl.precision.nvfp4_quantize(x), what), x, what)


@given(inputs=nvfp4_out_of_range())
def test_nvfp4_rejects_input_out_of_range(impl, inputs):
    """inf, NaN, or an amax below 6 * 448 * 2^-126 (the float32 tensor scale would be subnormal) raise."""
    bad, data = (torch.tensor(d, dtype=torch.float32) for d in inputs)
    amax = bad.abs().max().item()
    expect_refused(lambda: impl.precision.nvfp4_quantize(bad),
                   f"nvfp4_quantize(x) with x of shape {tuple(bad.shape)} and amax {amax!r}")
    what = f"nvfp4_quantize(a tensor of shape {tuple(data.shape)}, amax {data.abs().max().item()!r})"
    expect_nvfp4_like(expect_accepted(lambda: impl.precision.nvfp4_quantize(data), what), data, what)


@given(tensors=nvfp4_mismatched())
def test_nvfp4_dequantize_rejects_shapes_that_do_not_match(impl, tensors):
    bad, q = tensors
    def shapes(t) -> str:
        return f"nvfp4_dequantize of values {tuple(t.values.shape)}, block_scales {tuple(t.block_scales.shape)}"

    expect_refused(lambda: impl.precision.nvfp4_dequantize(bad), shapes(bad))
    got = expect_accepted(lambda: impl.precision.nvfp4_dequantize(q), shapes(q))
    expect_float32_like(got, tuple(q.values.shape), shapes(q))
    # computed from q: a zero value stays zero whatever its scales, and not every value becomes zero when some
    # value and its block scale are not (which scale goes with which value is nvfp4_dequantize's row)
    scaled = (q.values.reshape(*q.block_scales.shape, 16) * q.block_scales.unsqueeze(-1)).reshape(q.values.shape)
    kept = got[q.values == 0]
    assert not kept.any(), f"{shapes(q)}: zero values should stay zero; got {kept[kept != 0].tolist()[:5]}"
    assert got.any() or not scaled.any(), (
        f"{shapes(q)}: every value is 0, though some values and their block scales are not (the tensor scale is "
        f"{q.tensor_scale!r})")


def test_nvfp4_quantizes_the_bottom_of_its_range(impl):
    # just above where it must raise, the bottom of the range is quantized like any other input
    x = torch.tensor([2.0**-114, -2.0**-116] + [2.0**-118] * 14 + [2.0**-120] * 16)
    check_nvfp4(x, impl.precision.nvfp4_quantize(x), "nvfp4_quantize of values near 2^-114 (tensor scale ~2^-125.4)")


# -- mixed precision -------------------------------------------------------------------------------------

def relative_update_error(got: dict, expected: dict, spec: dict) -> float:
    initial = oracles.initial_params(spec)
    num = sum(((g.double() - e.double()) ** 2).sum() for g, e in zip(got["params"], expected["params"], strict=True))
    den = sum(((e.double() - i.double()) ** 2).sum() for e, i in zip(expected["params"], initial, strict=True))
    return math.sqrt(num / den)


def check_mixed(got: dict, spec: dict, tolerance: float) -> None:
    low = spec["dtype"]
    what = f"mixed_precision_step on {spec}"
    assert all(p.dtype == torch.float32 for p in got["params"]), (
        f"{what}: parameters must stay float32 (use torch.autocast, do not cast the model); got "
        f"{[str(p.dtype) for p in got['params']]}")
    assert all(d in (None, torch.float32) for d in got["grad_dtypes"]), (
        f"{what}: gradients must be float32 (like their parameters), got {got['grad_dtypes']}")
    assert got["state_dtypes"] and all(d == torch.float32 for d in got["state_dtypes"]), (
        f"{what}: optimizer state {got['state_dtypes']}, expected float32")
    n_linear = 2
    assert len(got["matmuls"]) >= 3 * n_linear * spec["steps"] - spec["steps"], (
        f"{what}: too few matmuls seen ({got['matmuls']})")
    slow = [m for m in got["matmuls"] if any(d != low for d in m[1:])]
    assert not slow, f"{what}: every matmul (forward and backward) must run in {low}; these did not: {slow[:4]}"
    expected = oracles.fp32_steps(spec)
    error = relative_update_error(got, expected, spec)
    assert error <= tolerance, (f"{what}: the update is {error:.3g} (relative) away from the float32 step's, "
                                f"over the tolerance {tolerance}; unscaled gradients? gradients not cleared?")
    assert all(type(v) is float for v in got["losses"]), f"{what}: return the loss as a Python float"
    # Near its minimum an MSE is a difference of nearly equal numbers, so its relative error has no bound; its
    # error is measured against the largest loss of the run (the scale the low-precision outputs round at).
    scale = max(expected["losses"])
    for g, e in zip(got["losses"], expected["losses"], strict=True):
        assert math.isclose(g, e, rel_tol=tolerance, abs_tol=tolerance * scale), (
            f"{what}: loss {g!r}, float32 loss {e!r} (the unscaled loss)")


@given(spec=mixed_precision_specs("bfloat16"))
def test_mixed_precision_bf16_matmuls_low_params_fp32(impl, spec):
    got = impl.run(scenarios.mixed_steps, spec)
    check_mixed(got, spec, tolerance=0.1)


@given(spec=mixed_precision_specs("float16"))
def test_mixed_precision_fp16_with_scaler(impl, spec):
    got = impl.run(scenarios.mixed_steps, spec)
    check_mixed(got, spec, tolerance=0.02)
    assert got["scale"] == spec["init_scale"], f"no overflow here: the scale should stay {spec['init_scale']}"


@given(spec=mixed_precision_specs("float16"))
def test_mixed_precision_scaler_rescues_underflowing_fp16_gradients(impl, spec):
    # A loss scaled by 1e-7 has gradients ~1e-8 at the fp16 matmuls: below fp16's 6e-8 they would be 0. The
    # scaler (2^16) lifts them into range; the learning rate makes up for the tiny loss.
    spec = dict(spec, loss_scale=1e-7, lr=1e6, init_scale=2.0**16)
    got = impl.run(scenarios.mixed_steps, spec)
    check_mixed(got, spec, tolerance=0.02)


@given(spec=mixed_precision_specs("float16"))
def test_mixed_precision_overflow_skips_the_step_and_backs_off(impl, spec):
    # With a scale of 2^40 the fp16 gradients overflow: GradScaler.step skips the optimizer step and update()
    # multiplies the scale by its backoff factor, 0.5 (torch.amp.GradScaler's documented default).
    spec = dict(spec, steps=1, init_scale=2.0**40)
    got = impl.run(scenarios.mixed_steps, spec)
    initial = oracles.initial_params(spec)
    changed = [i for i, (g, p) in enumerate(zip(got["params"], initial, strict=True)) if not torch.equal(g, p)]
    assert not changed, f"the step with inf gradients must be skipped (scaler.step), but parameters {changed} changed"
    assert got["scale"] == 2.0**39, (
        f"after an overflow the scale should halve to 2^39 (scaler.update()), got {got['scale']}")
    assert math.isfinite(got["losses"][0]), "return the unscaled loss"


# -- audit -----------------------------------------------------------------------------------------------

def cast_mentions_in_round_to_bf16(package: str) -> list[str]:
    """Static part of the audit: casts to a 16-bit float reached inside round_to_bf16."""
    return audit.reaching(package, "precision", (), ("bfloat16", "half", "float16", "BFloat16Tensor", "HalfTensor",
                                                    "quantize"), within="round_to_bf16")


def rounded_right(impl, x: torch.Tensor) -> torch.Tensor | None:
    """The elements of `x` that round_to_bf16 rounds right (its own tests' oracle, torch's cast), or None: the
    audit's inputs, on which it checks the property (a wrong answer is the other tests' business)."""
    got = own_run(lambda: impl.precision.round_to_bf16(x))
    expected = x.to(torch.bfloat16).float()
    if not (isinstance(got, torch.Tensor) and got.dtype == torch.float32 and got.shape == x.shape):
        return None
    right = x[~wrong_floats(got, expected)]
    return right if right.numel() else None


# carries its own evidence (tests/audit_run.py): it checks the values it saw rounded right, and pays beside three
# distinct ones that the rounding changed
@audit_run.evidenced(lambda kwargs: "round_to_bf16", without="a 16-bit float")
@given(bits=st.lists(fp32_bits(), min_size=1, max_size=20))
def test_audit_round_to_bf16_uses_integer_operations(impl, bits):
    x = tensor_from_bits(bits)
    # Fails only where a 16-bit float is made or read: yours watched, then not, the same, on what it rounds right.
    mentions = cast_mentions_in_round_to_bf16(impl.name)
    assert not mentions, (f"{impl.name}/precision.py: round_to_bf16 mentions a 16-bit float type:\n"
                          + "\n".join(mentions))
    x = rounded_right(impl, x)
    if x is None:
        return
    usable = own_run(lambda: impl.precision.round_to_bf16(x))
    if not isinstance(usable, torch.Tensor) or wrong_floats(usable, x.to(torch.bfloat16).float()).any():
        return  # right on each value alone, wrong on them together: the other tests' business
    got = run_without(impl, scenarios.watched_round_to_bf16, x, what=call_text("round_to_bf16", x),
                      oracle="16-bit float casts", hint="work on the bits with integer operations")
    expect_same_floats(got["result"], usable, x, what="round_to_bf16(x) under the audit's dtype spy",
                       source="your round_to_bf16(x) unwatched", hint="work on the bits with integer operations")
    assert not got["outside"], (f"round_to_bf16 ran torch ops with the audit's dtype spy stepped around "
                                f"({', '.join(sorted(set(got['outside'])))}): work on the bits, in view of the spy")
    floats = [d for d in got["dtypes"] if getattr(torch, d).is_floating_point and d != "float32"]
    assert not floats, (f"round_to_bf16 must work on the bits, but its ops made or read tensors of {floats}: a cast "
                        "does the rounding for you")
    rounded = (x.view(torch.int32) & 0xFFFF != 0) & ~torch.isnan(x)  # not a bf16 already: the rounding did work
    for value in usable[rounded].view(torch.int32).tolist():
        audit_run.evidence().saw_right(value)


# -- differential ----------------------------------------------------------------------------------------

@given(data=nvfp4_inputs(max_dynamic_range=12))
def test_differential_nvfp4(impl, ref, data):
    x = torch.tensor(data, dtype=torch.float32)
    got, expected = impl.precision.nvfp4_quantize(x), ref.precision.nvfp4_quantize(x)
    torch.testing.assert_close(got.values, expected.values, rtol=0, atol=0)
    torch.testing.assert_close(got.block_scales, expected.block_scales, rtol=0, atol=0)
    assert math.isclose(got.tensor_scale, expected.tensor_scale, rel_tol=1e-6), (
        f"nvfp4_quantize(x).tensor_scale is {got.tensor_scale!r}, the reference's {expected.tensor_scale!r}")


# -- every error the docstrings promise, on a fixed call (tests/documented.py) -------------------------------

@pytest.mark.parametrize("case", cases("precision"))
def test_documented_errors_are_raised(impl, case):
    expect_documented_error(impl, "precision", case)
