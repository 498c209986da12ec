"""Problem (precision): number formats and mixed precision. See handout.md, "Problem (precision)".

Conventions:
- A `FloatFormat` (in assignment/given.py; read its docstring) describes a binary floating-point format
  by its exponent and mantissa bits, its bias, how it uses the all-ones exponent (inf and NaN, NaN only,
  or numbers), and the derived numbers: the largest finite value, the smallest positive normal and
  subnormal values, and eps (the gap between 1 and the next value up).
- The bias is 2^(exponent_bits - 1) - 1 in every format here.
- Rounding is round-to-nearest, ties to even (the code whose last mantissa bit is 0), as in IEEE 754 and
  in PyTorch's casts.
- Values are carried in float32 tensors: `round_to_bf16` and `quantize` return float32 tensors whose
  values are exactly representable in the target format.
"""

from collections.abc import Callable

import torch
from jaxtyping import Float, Shaped
from torch import Tensor, nn

from assignment.given import FloatFormat, NVFP4Tensor

NVFP4_BLOCK = 16


def float_format(dtype: torch.dtype | str) -> FloatFormat:
    """The `FloatFormat` of a dtype or a format name, with every field filled in.

    Accepts the dtypes torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn and
    torch.float8_e5m2, and the names "fp32", "fp16", "bf16", "fp8_e4m3fn", "fp8_e5m2" and "fp4_e2m1"
    (fp4 e2m1 has no torch dtype to compute with). The format's `name` is the name in that list.

    | name       | exponent | mantissa | all-ones exponent        |
    | fp32       | 8        | 23       | inf and NaN (IEEE)       |
    | fp16       | 5        | 10       | inf and NaN (IEEE)       |
    | bf16       | 8        | 7        | inf and NaN (IEEE)       |
    | fp8_e4m3fn | 4        | 3        | numbers, except all-ones mantissa = NaN; no inf |
    | fp8_e5m2   | 5        | 2        | inf and NaN (IEEE)       |
    | fp4_e2m1   | 2        | 1        | numbers; no inf, no NaN  |

    The derived fields follow from these (e4m3fn's largest value is 448, e2m1's is 6). Anything else:
    ValueError.
    """
    raise NotImplementedError("float_format")


def round_to_bf16(x: Float[Tensor, "*shape"]) -> Float[Tensor, "*shape"]:
    """Round float32 values to the nearest bfloat16 value, ties to even, working on the bits.

    bfloat16 is the upper 16 bits of a float32. Reinterpret the float32 tensor as integers
    (`x.view(torch.int32)`), round the lower 16 bits away with integer operations (add, shift, mask,
    compare), and reinterpret the result as float32: a float32 tensor of the same shape whose values
    are all bfloat16 values (the lower 16 bits zero). Every value that is not NaN must agree bit for bit
    with `x.to(torch.bfloat16).float()`: subnormals round like every other value, values that round past
    the largest bfloat16 become inf (with their sign), inf stays inf, -0.0 stays -0.0. NaN stays NaN, any
    NaN (never inf or a number: adding to a NaN's bits can carry into the exponent); its sign and payload
    are not checked (torch's cast canonicalises them, so no bit pattern is promised for NaN).

    No floating-point dtype other than float32 may appear, and no cast may do the rounding for you: the
    grader watches every op this function runs. `x` must be float32, else ValueError.
    """
    raise NotImplementedError("round_to_bf16")


def quantize(x: Float[Tensor, "*shape"], fmt: FloatFormat) -> Float[Tensor, "*shape"]:
    """Round float32 values to the nearest value of `fmt`, ties to even; a float32 tensor of the same shape.

    - In the normal range, the grid spacing (ulp) in [2^e, 2^(e+1)) is 2^(e - mantissa_bits); below
      `min_normal` it is `min_subnormal` everywhere (subnormals), so tiny values round to 0 (sign kept:
      -1e-30 becomes -0.0).
    - Out of range: a value whose rounding exceeds `max_normal` becomes +-inf when `fmt.has_inf` (IEEE:
      that happens from max_normal + ulp/2 on) and saturates to +-max_normal otherwise.
    - inf becomes inf when `fmt.has_inf`, else +-max_normal (saturation, as PyTorch's float8_e4m3fn cast
      does). NaN stays NaN.

    For fp32, fp16, bf16, fp8 e4m3fn and e5m2 this is exactly `x.to(dtype).float()`. `x` must be
    float32, else ValueError.
    """
    raise NotImplementedError("quantize")


def nvfp4_quantize(x: Float[Tensor, "*batch n"]) -> NVFP4Tensor:
    """Quantize `x` to NVFP4: fp4 e2m1 values in blocks of 16 along the last dimension, an fp8 e4m3fn
    scale per block and a float32 scale per tensor (`NVFP4Tensor` in assignment/given.py).

    1. tensor_scale = amax / (6 * 448), amax the largest |x| (1.0 if x is all zeros), computed in
       float32: it maps the largest block scale onto e4m3's largest value, 448.
    2. For each block of 16, block_scale = quantize(block_amax / 6 / tensor_scale, fp8 e4m3fn): the
       scale that maps the block's largest |value| onto e2m1's largest, 6, rounded to e4m3.
    3. values = quantize(x / (block_scale * tensor_scale), fp4 e2m1), saturating at +-6; a block whose
       scale is 0 has all values 0.

    So each value is within half an e2m1 step (times the block's scale) of its input, and an input that
    is already of this form comes back exactly. The input range: x all zeros, or amax at least
    6 * 448 * 2^-126 (about 3.2e-35), so that tensor_scale is a normal float32; below that the recipe in
    float32 breaks down (a subnormal or zero tensor_scale), and nvfp4_quantize raises ValueError. Also
    ValueError if the last dimension is not a positive multiple of 16, if x is not float32, or if x has inf
    or NaN.
    """
    raise NotImplementedError("nvfp4_quantize")


def nvfp4_dequantize(q: NVFP4Tensor) -> Float[Tensor, "*batch n"]:
    """The float32 tensor `q` stands for: values * block_scale (of each value's block) * tensor_scale,
    multiplied in that order. ValueError if the shapes do not match (one block scale per 16 values)."""
    raise NotImplementedError("nvfp4_dequantize")


def mixed_precision_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    loss_fn: Callable[[Tensor, Tensor], Tensor],
    inputs: Float[Tensor, "batch ..."],
    targets: Shaped[Tensor, "batch ..."],
    dtype: torch.dtype,
    scaler: torch.amp.GradScaler | None = None,
) -> float:
    """One training step in autocast mixed precision (PyTorch's AMP, not the lecture's bf16 policy: see the
    handout's Conventions); returns the loss (a Python float, not scaled).

    The parameters, their gradients and the optimizer's state stay float32; the matrix products of the
    forward and backward pass run in `dtype` (torch.bfloat16, or torch.float16 with a scaler). So:
    clear the gradients (set them to None), run the forward pass and the loss under
    `torch.autocast(device_type=inputs.device.type, dtype=dtype)` (never cast the model), then backward
    and the optimizer step outside it.

    With a `torch.amp.GradScaler`: backward from the scaled loss (`scaler.scale(loss)`), so that small
    float16 gradients do not underflow; `scaler.step(optimizer)` (it unscales the gradients, and skips
    the step when any of them is inf or NaN); then `scaler.update()` (it lowers the scale after a
    skipped step).
    """
    raise NotImplementedError("mixed_precision_step")


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
