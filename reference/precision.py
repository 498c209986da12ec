"""Problem (precision): number formats and mixed precision. Reference solution; the spec is in
assignment/precision.py."""

from collections.abc import Callable

import torch
from jaxtyping import Float, Shaped
from torch import Tensor, nn

from assignment.given import FloatFormat, NVFP4Tensor

# name -> (exponent bits, mantissa bits, has_inf, has_nan)
_LAYOUTS = {
    "fp32": (8, 23, True, True),
    "fp16": (5, 10, True, True),
    "bf16": (8, 7, True, True),
    "fp8_e4m3fn": (4, 3, False, True),
    "fp8_e5m2": (5, 2, True, True),
    "fp4_e2m1": (2, 1, False, False),
}
_DTYPE_NAMES = {
    torch.float32: "fp32",
    torch.float16: "fp16",
    torch.bfloat16: "bf16",
    torch.float8_e4m3fn: "fp8_e4m3fn",
    torch.float8_e5m2: "fp8_e5m2",
}
NVFP4_BLOCK = 16


def float_format(dtype: torch.dtype | str) -> FloatFormat:
    name = _DTYPE_NAMES.get(dtype, dtype) if isinstance(dtype, torch.dtype) else dtype
    if name not in _LAYOUTS:
        raise ValueError(f"unknown floating-point format {dtype!r}; known: {', '.join(_LAYOUTS)} "
                         f"and the dtypes {', '.join(str(d) for d in _DTYPE_NAMES)}")
    e, m, has_inf, has_nan = _LAYOUTS[name]
    bias = 2 ** (e - 1) - 1
    top_exponent = 2**e - 2 if has_inf else 2**e - 1  # the all-ones exponent holds numbers unless inf lives there
    top_mantissa = 2**m - 2 if has_nan and not has_inf else 2**m - 1  # e4m3fn: all ones is NaN
    return FloatFormat(
        name=name, exponent_bits=e, mantissa_bits=m, bias=bias, has_inf=has_inf, has_nan=has_nan,
        max_normal=(1 + top_mantissa / 2**m) * 2.0 ** (top_exponent - bias),
        min_normal=2.0 ** (1 - bias),
        min_subnormal=2.0 ** (1 - bias - m),
        eps=2.0**-m,
    )


def round_to_bf16(x: Float[Tensor, "*shape"]) -> Float[Tensor, "*shape"]:
    if x.dtype != torch.float32:
        raise ValueError(f"round_to_bf16 takes float32, got {x.dtype}")
    bits = x.contiguous().view(torch.int32).to(torch.int64) & 0xFFFFFFFF  # the fp32 bits, unsigned
    lowest_kept = (bits >> 16) & 1
    rounded = (bits + 0x7FFF + lowest_kept) & 0xFFFF0000  # half up, ties to the even upper half
    is_nan = (bits & 0x7FFFFFFF) > 0x7F800000
    rounded = torch.where(is_nan, (bits | 0x00400000) & 0xFFFF0000, rounded)  # a quiet NaN, sign kept
    signed = torch.where(rounded >= 2**31, rounded - 2**32, rounded)
    return signed.to(torch.int32).view(torch.float32)


def quantize(x: Float[Tensor, "*shape"], fmt: FloatFormat) -> Float[Tensor, "*shape"]:
    if x.dtype != torch.float32:
        raise ValueError(f"quantize takes float32, got {x.dtype}")
    wide = x.to(torch.float64)  # every float32 and every step below is exact in float64
    size = wide.abs()
    _, exponent = torch.frexp(size)  # size = f * 2**exponent, f in [0.5, 1)
    exponent = (exponent - 1).clamp(min=1 - fmt.bias)  # below the normal range the grid is evenly spaced
    ulp = torch.ldexp(torch.ones_like(size), exponent - fmt.mantissa_bits)
    rounded = torch.round(size / ulp) * ulp  # torch.round: half to even
    overflow = torch.inf if fmt.has_inf else fmt.max_normal
    rounded = torch.where(rounded > fmt.max_normal, overflow, rounded)
    rounded = torch.copysign(rounded, wide)
    return torch.where(torch.isnan(wide), torch.nan, rounded).to(torch.float32)


def nvfp4_quantize(x: Float[Tensor, "*batch n"]) -> NVFP4Tensor:
    if x.ndim == 0 or x.shape[-1] == 0 or x.shape[-1] % NVFP4_BLOCK:
        raise ValueError(f"NVFP4 quantizes blocks of {NVFP4_BLOCK} along the last dimension: shape "
                         f"{tuple(x.shape)} does not split into blocks of {NVFP4_BLOCK}")
    if x.dtype != torch.float32:
        raise ValueError(f"nvfp4_quantize takes float32, got {x.dtype}")
    if not torch.isfinite(x).all():
        raise ValueError("nvfp4_quantize takes finite values only")
    e2m1, e4m3 = float_format("fp4_e2m1"), float_format("fp8_e4m3fn")
    amax = x.abs().max()
    tensor_scale = (amax / (e2m1.max_normal * e4m3.max_normal)).item() if amax > 0 else 1.0
    if tensor_scale < torch.finfo(torch.float32).tiny:  # a subnormal (or zero) scale loses the recipe's precision
        raise ValueError(f"nvfp4_quantize: the largest |x|, {amax.item()!r}, is below 6 * 448 * 2^-126 (about "
                         "3.2e-35): its tensor scale would not be a normal float32; scale the tensor up first")
    blocks = x.reshape(*x.shape[:-1], x.shape[-1] // NVFP4_BLOCK, NVFP4_BLOCK)
    block_scales = quantize(blocks.abs().amax(-1) / e2m1.max_normal / tensor_scale, e4m3)
    scale = (block_scales * tensor_scale).unsqueeze(-1)
    scaled = torch.where(scale > 0, blocks / scale.where(scale > 0, 1.0), 0.0)
    values = quantize(scaled, e2m1).reshape(x.shape)
    return NVFP4Tensor(values=values, block_scales=block_scales, tensor_scale=tensor_scale)


def nvfp4_dequantize(q: NVFP4Tensor) -> Float[Tensor, "*batch n"]:
    values, block_scales = q.values, q.block_scales
    if values.ndim == 0 or values.shape[:-1] != block_scales.shape[:-1] or \
            values.shape[-1] != NVFP4_BLOCK * block_scales.shape[-1]:
        raise ValueError(f"values of shape {tuple(values.shape)} do not match block scales of shape "
                         f"{tuple(block_scales.shape)} (one scale per {NVFP4_BLOCK} values)")
    blocks = values.reshape(*block_scales.shape, NVFP4_BLOCK)
    return (blocks * block_scales.unsqueeze(-1) * q.tensor_scale).reshape(values.shape)


def mixed_precision_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    loss_fn: Callable[[Tensor, Tensor], Tensor],
    inputs: Float[Tensor, "batch ..."],
    targets: Shaped[Tensor, "batch ..."],
    dtype: torch.dtype,
    scaler: torch.amp.GradScaler | None = None,
) -> float:
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=inputs.device.type, dtype=dtype):
        loss = loss_fn(model(inputs), targets)
    if scaler is None:
        loss.backward()
        optimizer.step()
    else:
        scaler.scale(loss).backward()
        scaler.step(optimizer)  # unscales the gradients first; skips the step if any is inf or NaN
        scaler.update()
    return loss.item()


__all__ = [
    "FloatFormat",
    "NVFP4Tensor",
    "float_format",
    "round_to_bf16",
    "quantize",
    "nvfp4_quantize",
    "nvfp4_dequantize",
    "mixed_precision_step",
]
