"""precision: the formats the tests cover (torch's, and small ones decoded by their definition), float32
tensors from bit patterns, torch's reading of one code."""

import numpy as np
import torch

from assignment.given import FloatFormat

TORCH_FORMATS = {  # name -> (dtype, exponent bits, mantissa bits, integer dtype of the same width)
    "fp32": (torch.float32, 8, 23, torch.int32),
    "fp16": (torch.float16, 5, 10, torch.int16),
    "bf16": (torch.bfloat16, 8, 7, torch.int16),
    "fp8_e4m3fn": (torch.float8_e4m3fn, 4, 3, torch.uint8),
    "fp8_e5m2": (torch.float8_e5m2, 5, 2, torch.uint8),
}


def tensor_from_bits(bits: list[int]) -> torch.Tensor:
    return torch.from_numpy(np.array(bits, dtype=np.uint32).view(np.float32).copy())


# -- an oracle for formats torch has no dtype for -------------------------------------------------------

def decode_all(e: int, m: int, bias: int, has_inf: bool, has_nan: bool) -> list[tuple[float, int]]:
    """Every finite non-negative value of the format with its code, by the definition (FloatFormat's docstring)."""
    values = []
    for exponent in range(2**e):
        for mantissa in range(2**m):
            top = exponent == 2**e - 1
            if top and (has_inf or (has_nan and mantissa == 2**m - 1)):
                continue  # inf or NaN
            if exponent == 0:
                value = mantissa / 2**m * 2.0 ** (1 - bias)
            else:
                value = (1 + mantissa / 2**m) * 2.0 ** (exponent - bias)
            values.append((value, exponent << m | mantissa))
    return values


def make_format(name: str, e: int, m: int, has_inf: bool, has_nan: bool) -> FloatFormat:
    """A FloatFormat whose derived fields come from enumerating its codes (formats up to ~12 bits)."""
    bias = 2 ** (e - 1) - 1
    values = sorted(v for v, _ in decode_all(e, m, bias, has_inf, has_nan))
    positive = [v for v in values if v > 0]
    normals = [v for v, code in decode_all(e, m, bias, has_inf, has_nan) if code >> m]
    above_one = [v for v in values if v > 1]
    return FloatFormat(name, e, m, bias, has_inf, has_nan, max_normal=values[-1], min_normal=min(normals),
                       min_subnormal=positive[0], eps=above_one[0] - 1)


SMALL_FORMATS = {
    "fp4_e2m1": make_format("fp4_e2m1", 2, 1, False, False),
    "fp6_e2m3": make_format("fp6_e2m3", 2, 3, False, False),
    "fp6_e3m2": make_format("fp6_e3m2", 3, 2, False, False),
    "e4m3_ieee": make_format("e4m3_ieee", 4, 3, True, True),
    "fp8_e4m3fn": make_format("fp8_e4m3fn", 4, 3, False, True),
    "fp8_e5m2": make_format("fp8_e5m2", 5, 2, True, True),
}


def decode_code(code: int, name: str) -> float:
    """torch's reading of one bit pattern of a torch format."""
    dtype, _, _, int_dtype = TORCH_FORMATS[name]
    if int_dtype is torch.uint8:
        return torch.tensor([code], dtype=torch.uint8).view(dtype).item()
    signed = code - (1 << int_dtype.itemsize * 8) if code >= 1 << (int_dtype.itemsize * 8 - 1) else code
    return torch.tensor([signed], dtype=int_dtype).view(dtype).float().item()
