"""Classic mistakes with number formats and mixed precision, each written as the wrong code a student would write."""

import dataclasses
import functools

import torch

from reference import precision as ref
from tests.mistakes import Mistake


def fn_as_ieee(dtype):
    fmt = ref.float_format(dtype)
    if fmt.name != "fp8_e4m3fn":
        return fmt
    return dataclasses.replace(fmt, has_inf=True, max_normal=240.0)  # the all-ones exponent taken for inf/NaN


def eps_as_unit_roundoff(dtype):
    fmt = ref.float_format(dtype)
    return dataclasses.replace(fmt, eps=fmt.eps / 2)


def no_subnormals(dtype):
    fmt = ref.float_format(dtype)
    return dataclasses.replace(fmt, min_subnormal=fmt.min_normal)


def bias_off_by_one(dtype):
    fmt = ref.float_format(dtype)
    return dataclasses.replace(fmt, bias=fmt.bias + 1)


def _from_bits(bits):
    signed = torch.where(bits >= 2**31, bits - 2**32, bits)
    return signed.to(torch.int32).view(torch.float32)


def _bits(x):
    return x.contiguous().view(torch.int32).to(torch.int64) & 0xFFFFFFFF


def _checked_as(reference):
    """A slip in the values, not in the checks: the mistake rejects what `reference` rejects (it runs first,
    its answer dropped), so that it costs the tests of its values and not those of the input's validation."""
    def wrap(mistake):
        @functools.wraps(mistake)
        def checked(*args):
            reference(*args)
            return mistake(*args)
        return checked
    return wrap


@_checked_as(ref.round_to_bf16)
def bf16_truncate(x):
    return _from_bits(_bits(x) & 0xFFFF0000)


@_checked_as(ref.round_to_bf16)
def bf16_round_half_up(x):
    bits = _bits(x)
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    return _from_bits(torch.where(nan, bits | 0x00400000, bits + 0x8000) & 0xFFFF0000)


@_checked_as(ref.round_to_bf16)
def bf16_nan_to_inf(x):
    bits = _bits(x)
    return _from_bits((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000 & 0xFFFFFFFF)


@_checked_as(ref.round_to_bf16)
def bf16_by_cast(x):
    return x.to(torch.bfloat16).float()


def _quantize_with(x, fmt, rounding, subnormals=True, overflow=None, inf_input=None):
    wide = x.to(torch.float64)
    size = wide.abs()
    _, exponent = torch.frexp(size)
    exponent = exponent - 1
    if subnormals:
        exponent = exponent.clamp(min=1 - fmt.bias)
    ulp = torch.ldexp(torch.ones_like(size), exponent - fmt.mantissa_bits)
    rounded = rounding(size / ulp) * ulp
    if not subnormals:
        rounded = torch.where(size < fmt.min_normal, 0.0, rounded)
    if overflow is None:
        overflow = torch.inf if fmt.has_inf else fmt.max_normal
    rounded = torch.where(rounded > fmt.max_normal, overflow, rounded)
    if inf_input is not None:
        rounded = torch.where(torch.isinf(size), inf_input, rounded)
    rounded = torch.copysign(rounded, wide)
    return torch.where(torch.isnan(wide), torch.nan, rounded).to(torch.float32)


@_checked_as(ref.quantize)
def quantize_truncate(x, fmt):
    return _quantize_with(x, fmt, torch.floor)


@_checked_as(ref.quantize)
def quantize_ties_away(x, fmt):
    return _quantize_with(x, fmt, lambda v: torch.floor(v + 0.5))


@_checked_as(ref.quantize)
def quantize_flush_subnormals(x, fmt):
    return _quantize_with(x, fmt, torch.round, subnormals=False)


@_checked_as(ref.quantize)
def quantize_always_saturate(x, fmt):
    return _quantize_with(x, fmt, torch.round, overflow=fmt.max_normal)


@_checked_as(ref.quantize)
def quantize_overflow_to_inf(x, fmt):
    return _quantize_with(x, fmt, torch.round, overflow=torch.inf)


@_checked_as(ref.quantize)
def quantize_inf_stays_inf(x, fmt):
    return _quantize_with(x, fmt, torch.round, inf_input=torch.inf)


@_checked_as(ref.nvfp4_quantize)
def nvfp4_one_scale(x):
    q = ref.nvfp4_quantize(x)
    amax = x.abs().max()
    scale = (amax / 6).item() if amax > 0 else 1.0
    values = ref.quantize(x / scale, ref.float_format("fp4_e2m1"))
    return ref.NVFP4Tensor(values=values, block_scales=torch.full_like(q.block_scales, 448.0),
                           tensor_scale=scale / 448)


@_checked_as(ref.nvfp4_quantize)
def nvfp4_scale_truncated(x):
    q = ref.nvfp4_quantize(x)
    blocks = x.reshape(*x.shape[:-1], -1, 16)
    e4m3 = ref.float_format("fp8_e4m3fn")
    scales = quantize_truncate(blocks.abs().amax(-1) / 6 / q.tensor_scale, e4m3)
    scale = (scales * q.tensor_scale).unsqueeze(-1)
    values = ref.quantize(torch.where(scale > 0, blocks / scale.where(scale > 0, 1.0), 0.0),
                          ref.float_format("fp4_e2m1"))
    return ref.NVFP4Tensor(values=values.reshape(x.shape), block_scales=scales, tensor_scale=q.tensor_scale)


@_checked_as(ref.nvfp4_quantize)
def nvfp4_values_truncated(x):
    q = ref.nvfp4_quantize(x)
    blocks = x.reshape(*x.shape[:-1], -1, 16)
    scale = (q.block_scales * q.tensor_scale).unsqueeze(-1)
    scaled = torch.where(scale > 0, blocks / scale.where(scale > 0, 1.0), 0.0)
    values = quantize_truncate(scaled, ref.float_format("fp4_e2m1"))
    return ref.NVFP4Tensor(values=values.reshape(x.shape), block_scales=q.block_scales, tensor_scale=q.tensor_scale)


def nvfp4_no_shape_check(x):
    pad = (-x.shape[-1]) % 16 if x.ndim else 0
    if x.ndim and x.shape[-1] == 0:
        pad = 16
    padded = torch.nn.functional.pad(x, (0, pad)) if pad else x
    return ref.nvfp4_quantize(padded)


@_checked_as(ref.nvfp4_dequantize)
def nvfp4_dequantize_no_tensor_scale(q):
    blocks = q.values.reshape(*q.block_scales.shape, 16)
    return (blocks * q.block_scales.unsqueeze(-1)).reshape(q.values.shape)


def _autocast_step(model, optimizer, loss_fn, inputs, targets, dtype, scaler, *, zero=True, unscale=True,
                   update=True, scaled_loss=False):
    if zero:
        optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type=inputs.device.type, dtype=dtype):
        loss = loss_fn(model(inputs), targets)
    if scaler is None:
        loss.backward()
        optimizer.step()
        return loss.item()
    scaled = scaler.scale(loss)
    scaled.backward()
    if unscale:
        scaler.step(optimizer)
    else:
        optimizer.step()
    if update:
        scaler.update()
    return scaled.item() if scaled_loss else loss.item()


def mp_cast_model(model, optimizer, loss_fn, inputs, targets, dtype, scaler=None):
    model.to(dtype)
    optimizer.zero_grad(set_to_none=True)
    loss = loss_fn(model(inputs.to(dtype)), targets)
    loss.backward()
    optimizer.step()
    return loss.item()


def mp_no_autocast(model, optimizer, loss_fn, inputs, targets, dtype, scaler=None):
    optimizer.zero_grad(set_to_none=True)
    loss = loss_fn(model(inputs), targets)
    loss.backward()
    optimizer.step()
    return loss.item()


def mp_no_unscale(model, optimizer, loss_fn, inputs, targets, dtype, scaler=None):
    return _autocast_step(model, optimizer, loss_fn, inputs, targets, dtype, scaler, unscale=False)


def mp_no_update(model, optimizer, loss_fn, inputs, targets, dtype, scaler=None):
    return _autocast_step(model, optimizer, loss_fn, inputs, targets, dtype, scaler, update=False)


def mp_no_zero_grad(model, optimizer, loss_fn, inputs, targets, dtype, scaler=None):
    return _autocast_step(model, optimizer, loss_fn, inputs, targets, dtype, scaler, zero=False)


def mp_scaled_loss(model, optimizer, loss_fn, inputs, targets, dtype, scaler=None):
    return _autocast_step(model, optimizer, loss_fn, inputs, targets, dtype, scaler, scaled_loss=True)


def mp_ignores_scaler(model, optimizer, loss_fn, inputs, targets, dtype, scaler=None):
    return _autocast_step(model, optimizer, loss_fn, inputs, targets, dtype, None)


def _m(id, description, **replaces):
    return Mistake("precision", id, description, replaces)


MISTAKES = [
    _m("e4m3fn_as_ieee", "fp8 e4m3fn read as IEEE: inf in the top exponent, largest value 240 instead of 448",
       float_format=fn_as_ieee),
    _m("eps_unit_roundoff", "eps taken as the unit roundoff 2^-(m+1) instead of the gap above 1, 2^-m",
       float_format=eps_as_unit_roundoff),
    _m("no_subnormals", "the smallest positive value taken to be the smallest normal one", float_format=no_subnormals),
    _m("bias_off_by_one", "bias 2^(e-1) instead of 2^(e-1) - 1", float_format=bias_off_by_one),
    _m("bf16_truncate", "round_to_bf16 truncates the lower 16 bits (round toward zero)", round_to_bf16=bf16_truncate),
    _m("bf16_half_up", "round_to_bf16 adds 0x8000: ties away from zero, not to even", round_to_bf16=bf16_round_half_up),
    _m("bf16_nan_to_inf", "round_to_bf16 rounds NaN's bits like a number, turning some NaNs into inf or -0",
       round_to_bf16=bf16_nan_to_inf),
    _m("bf16_by_cast", "round_to_bf16 lets a dtype cast do the rounding", round_to_bf16=bf16_by_cast),
    _m("quantize_truncate", "quantize rounds toward zero", quantize=quantize_truncate),
    _m("quantize_ties_away", "quantize rounds ties away from zero", quantize=quantize_ties_away),
    _m("quantize_flush_subnormals", "quantize flushes values below the smallest normal to zero",
       quantize=quantize_flush_subnormals),
    _m("quantize_always_saturate", "quantize saturates even where the format has inf (fp16, e5m2)",
       quantize=quantize_always_saturate),
    _m("quantize_overflow_to_inf", "quantize overflows to inf even where the format has none (e4m3fn, e2m1)",
       quantize=quantize_overflow_to_inf),
    _m("quantize_inf_stays_inf", "quantize keeps inf in formats without inf instead of saturating",
       quantize=quantize_inf_stays_inf),
    _m("nvfp4_one_scale", "NVFP4 with one scale for the whole tensor, no per-block scales",
       nvfp4_quantize=nvfp4_one_scale),
    _m("nvfp4_scale_truncated", "NVFP4 block scales truncated to e4m3 instead of rounded",
       nvfp4_quantize=nvfp4_scale_truncated),
    _m("nvfp4_values_truncated", "NVFP4 values truncated to the e2m1 grid instead of rounded",
       nvfp4_quantize=nvfp4_values_truncated),
    _m("nvfp4_no_shape_check", "NVFP4 pads a last dimension that is not a multiple of 16 instead of refusing it",
       nvfp4_quantize=nvfp4_no_shape_check),
    _m("nvfp4_dequantize_no_tensor_scale", "NVFP4 dequantization forgets the per-tensor scale",
       nvfp4_dequantize=nvfp4_dequantize_no_tensor_scale),
    _m("mp_cast_model", "mixed precision by casting the model (and inputs) to the low dtype: no fp32 parameters",
       mixed_precision_step=mp_cast_model),
    _m("mp_no_autocast", "no autocast: the matmuls run in float32", mixed_precision_step=mp_no_autocast),
    _m("mp_no_unscale", "scaled backward, then optimizer.step() directly: the update is scale times too big",
       mixed_precision_step=mp_no_unscale),
    _m("mp_no_update", "scaler.update() forgotten: the scale never backs off after an overflow",
       mixed_precision_step=mp_no_update),
    _m("mp_no_zero_grad", "gradients not cleared: each step adds the previous ones",
       mixed_precision_step=mp_no_zero_grad),
    _m("mp_scaled_loss", "returns the scaled loss", mixed_precision_step=mp_scaled_loss),
    _m("mp_ignores_scaler", "the scaler ignored: small fp16 gradients underflow, overflowing steps are taken",
       mixed_precision_step=mp_ignores_scaler),
]


# The behaviours each mistake may cost: those whose tests it failed under the held-out grading seed of
# tests/meta/test_mistakes.py, which checks it (the behaviours that wait for them may lose their points too).
# `python -m tests.meta.mutation --every-test --profile grade --grading-seed 11 --costs` prints what a run saw.
COSTS = {
    "e4m3fn_as_ieee": ("float_format",),
    "eps_unit_roundoff": ("float_format",),
    "no_subnormals": ("float_format",),
    "bias_off_by_one": ("float_format",),
    "bf16_truncate": ("quantize: 1e-8 in fp16 and bf16", "round_to_bf16: bit for bit",
                      "round_to_bf16: shape and worked examples"),
    "bf16_half_up": ("round_to_bf16: bit for bit", "round_to_bf16: shape and worked examples"),
    "bf16_nan_to_inf": ("round_to_bf16: bit for bit", "round_to_bf16: shape and worked examples"),
    "bf16_by_cast": ("audit: round_to_bf16 with integer operations",),
    "quantize_truncate": ("quantize: 1e-8 in fp16 and bf16", "quantize: small formats", "quantize: torch's formats"),
    "quantize_ties_away": ("quantize: small formats", "quantize: torch's formats"),
    "quantize_flush_subnormals": ("quantize: small formats", "quantize: torch's formats"),
    "quantize_always_saturate": ("quantize: small formats", "quantize: torch's formats"),
    "quantize_overflow_to_inf": ("quantize: small formats", "quantize: torch's formats"),
    "quantize_inf_stays_inf": ("quantize: small formats", "quantize: torch's formats"),
    "nvfp4_one_scale": ("nvfp4: error bound per block", "nvfp4: representable input is exact", "nvfp4_quantize"),
    "nvfp4_scale_truncated": ("nvfp4_quantize",),
    "nvfp4_values_truncated": ("nvfp4: error bound per block", "nvfp4_quantize"),
    "nvfp4_no_shape_check": ("input validation",),
    "nvfp4_dequantize_no_tensor_scale": ("nvfp4: error bound per block", "nvfp4: representable input is exact",
                                         "nvfp4_dequantize"),
    "mp_cast_model": ("mixed precision: bf16", "mixed precision: fp16 with a loss scaler",
                      "mixed precision: overflow", "mixed precision: the scaler rescues gradients"),
    "mp_no_autocast": ("mixed precision: bf16", "mixed precision: fp16 with a loss scaler",
                       "mixed precision: overflow", "mixed precision: the scaler rescues gradients"),
    "mp_no_unscale": ("mixed precision: fp16 with a loss scaler", "mixed precision: overflow",
                      "mixed precision: the scaler rescues gradients"),
    "mp_no_update": ("mixed precision: fp16 with a loss scaler", "mixed precision: overflow",
                     "mixed precision: the scaler rescues gradients"),
    "mp_no_zero_grad": ("mixed precision: bf16",),
    "mp_scaled_loss": ("mixed precision: fp16 with a loss scaler", "mixed precision: the scaler rescues gradients"),
    "mp_ignores_scaler": ("mixed precision: overflow", "mixed precision: the scaler rescues gradients"),
}
