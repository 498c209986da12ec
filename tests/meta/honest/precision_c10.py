"""bfloat16 rounding the way c10 writes it (`round_to_nearest_even`: the rounding bias is 0x7FFF plus the lowest
kept bit, added to the bits, then the upper half kept; NaN handled apart), and the formats' fields from a table
of (exponent, mantissa) bits, as a student who has done those two parts and not yet the rest would hand in: what
is not written raises NotImplementedError. c10 writes the rounding on uint32 bits; a student working on
`view(torch.int32)` may forget the sign bit's carry, or test NaN after the addition: SLIPS.

Graded by tests/meta/test_honest.py: it must earn the rows of what it implements (float_format, round_to_bf16
and its audit), and lose only the rows of the functions it leaves unfinished."""

import torch

from assignment.given import FloatFormat, NVFP4Tensor

NVFP4_BLOCK = 16
UNFINISHED = ("quantize: torch's formats", "quantize: small formats", "quantize: 1e-8 in fp16 and bf16",
              "nvfp4_quantize", "nvfp4_dequantize", "nvfp4: representable input is exact",
              "nvfp4: error bound per block",
              "differential: nvfp4", "mixed precision: bf16", "mixed precision: fp16 with a loss scaler",
              "mixed precision: the scaler rescues gradients", "mixed precision: overflow", "input validation")
CASE = {"problem": "precision", "score": 4.25, "may_lose": UNFINISHED}
SAYS = ("UNFINISHED",)
SLIPS = {
    "nan_after_rounding": (
        ("    nan = torch.isnan(x)\n", ""),
        ("    return torch.where(nan, torch.full_like(x, float(\"nan\")), rounded)",
         "    return torch.where(torch.isnan(rounded), torch.full_like(x, float(\"nan\")), rounded)"),
        ("round_to_bf16: bit for bit", "round_to_bf16: shape and worked examples")),
}

_TABLE = {  # name: (dtype, exponent bits, mantissa bits, inf, nan)
    "fp32": (torch.float32, 8, 23, True, True),
    "fp16": (torch.float16, 5, 10, True, True),
    "bf16": (torch.bfloat16, 8, 7, True, True),
    "fp8_e4m3fn": (torch.float8_e4m3fn, 4, 3, False, True),
    "fp8_e5m2": (torch.float8_e5m2, 5, 2, True, True),
    "fp4_e2m1": (None, 2, 1, False, False),
}


def float_format(dtype):
    names = [name for name, row in _TABLE.items() if dtype == name or (row[0] is not None and dtype == row[0])]
    if not names:
        raise ValueError(f"no such float format: {dtype!r}")
    name = names[0]
    _, e, m, has_inf, has_nan = _TABLE[name]
    bias = 2 ** (e - 1) - 1
    top = 2**e - 1 if not has_inf else 2**e - 2  # the largest exponent field that holds numbers
    top_mantissa = 2**m - 1 if has_inf or not has_nan else 2**m - 2  # e4m3fn: all ones is NaN
    max_normal = (1 + top_mantissa / 2**m) * 2.0 ** (top - bias)
    return FloatFormat(name, e, m, bias, has_inf, has_nan, max_normal=max_normal, min_normal=2.0 ** (1 - bias),
                       min_subnormal=2.0 ** (1 - bias - m), eps=2.0**-m)


def round_to_bf16(x):
    if x.dtype != torch.float32:
        raise ValueError(f"round_to_bf16 takes float32, not {x.dtype}")
    nan = torch.isnan(x)
    bits = x.view(torch.int32).to(torch.int64) & 0xFFFFFFFF  # the unsigned 32 bits, as c10's uint32_t
    rounding_bias = ((bits >> 16) & 1) + 0x7FFF
    upper = ((bits + rounding_bias) >> 16) & 0xFFFF
    rounded = (upper << 16).to(torch.int64)
    rounded = torch.where(rounded >= 2**31, rounded - 2**32, rounded).to(torch.int32).view(torch.float32)
    return torch.where(nan, torch.full_like(x, float("nan")), rounded)


def quantize(x, fmt):
    raise NotImplementedError("quantize")


def nvfp4_quantize(x):
    raise NotImplementedError("nvfp4_quantize")


def nvfp4_dequantize(q):
    raise NotImplementedError("nvfp4_dequantize")


def mixed_precision_step(model, optimizer, loss_fn, inputs, targets, dtype, scaler=None):
    raise NotImplementedError("mixed_precision_step")


__all__ = ["FloatFormat", "NVFP4Tensor", "float_format", "round_to_bf16", "quantize", "nvfp4_quantize",
           "nvfp4_dequantize", "mixed_precision_step"]
