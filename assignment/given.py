"""Given code, shared by every problem and by the tests. Do not edit: the grader uses its own copy.

- `TransformerConfig`: the decoder-only transformer that `flops` counts.
- `HardwareSpec` and `HARDWARE`: accelerator spec sheets (dense peaks, no sparsity), each with its source.
- `PrecisionPolicy`, `POLICIES`, `OPTIMIZER_STATE_TENSORS` and `BytesPerParam`: what training keeps per
  parameter, by named precision policy and optimizer.
- `OpCost`: the FLOPs and bytes of one operation (problem `roofline`).
"""

from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class TransformerConfig:
    """A pre-norm, decoder-only transformer without biases (LLaMA-like).

    Per layer: RMSNorm(d_model) -> attention -> RMSNorm(d_model) -> MLP, each with a residual.
    Attention: W_q (d_model x d_model), W_k and W_v (d_model x n_kv_heads*d_head), W_o (d_model x d_model),
    softmax(QK^T / sqrt(d_head)) V over the full context (a causal mask changes no FLOP count here).
    MLP: W_up (d_model x d_ff) and W_down (d_ff x d_model); with `gated_mlp` also W_gate (d_model x d_ff)
    (SwiGLU). Token embedding (vocab_size x d_model), a final RMSNorm and an untied LM head
    (d_model x vocab_size). No positional parameters.
    """

    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int
    n_kv_heads: int | None = None  # None: as many as n_heads (multi-head attention); fewer: GQA
    gated_mlp: bool = False

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "d_ff"):
            if getattr(self, name) < 1:
                raise ValueError(f"TransformerConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")
        if self.n_kv_heads is not None and (self.n_kv_heads < 1 or self.n_heads % self.n_kv_heads):
            raise ValueError(f"n_heads={self.n_heads} is not a multiple of n_kv_heads={self.n_kv_heads}")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def kv_heads(self) -> int:
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads


@dataclass(frozen=True)
class HardwareSpec:
    """One accelerator's spec sheet. Peaks are dense (no 2:4 sparsity), in FLOP/s per dtype."""

    name: str
    peak_flops: dict[torch.dtype, float] = field(hash=False)
    memory_bandwidth: float  # bytes/s, HBM
    memory_bytes: float
    source: str

    def peak(self, dtype: torch.dtype) -> float:
        if dtype not in self.peak_flops:
            known = ", ".join(str(d) for d in self.peak_flops)
            raise ValueError(f"{self.name} has no listed peak for {dtype} (listed: {known})")
        return self.peak_flops[dtype]


_BF16, _FP16, _FP32 = torch.bfloat16, torch.float16, torch.float32
_FP8, _FP8_E5M2 = torch.float8_e4m3fn, torch.float8_e5m2

# Figures as the vendor's datasheet prints them. FP32 is the non-tensor-core peak: 67 TFLOPS on the H100
# SXM datasheet (66.9 in the Hopper whitepaper, at boost clock), which is what we use; a 67.5e12 figure
# matches neither. Tensor-core figures on the sheets are "with sparsity" (2:4): the dense peak is half.
# The H100 PCIe sheet prints BF16/FP16 1,513 and FP8 3,026 TFLOPS with sparsity: 756.5e12 and 1513e12 dense,
# halved exactly as the SXM's 1,979 gives 989.5e12 (a rounded 756 would be the only figure not so halved).
# FP8 runs at the same rate in both formats (E4M3 and E5M2). Bandwidth and capacity are decimal
# (1 TB/s = 1e12 B/s, 80 GB = 80e9 B).

HARDWARE: dict[str, HardwareSpec] = {
    spec.name: spec
    for spec in (
        HardwareSpec(
            "H100 SXM",
            {_BF16: 989.5e12, _FP16: 989.5e12, _FP8: 1979e12, _FP8_E5M2: 1979e12, _FP32: 67e12},
            3.35e12,
            80e9,
            "NVIDIA H100 Tensor Core GPU datasheet (SXM5 column; sparse figures halved)",
        ),
        HardwareSpec(
            "H100 PCIe",
            {_BF16: 756.5e12, _FP16: 756.5e12, _FP8: 1513e12, _FP8_E5M2: 1513e12, _FP32: 51e12},
            2.0e12,
            80e9,
            "NVIDIA H100 Tensor Core GPU datasheet (PCIe column; sparse figures halved)",
        ),
        HardwareSpec(
            "H200",
            {_BF16: 989.5e12, _FP16: 989.5e12, _FP8: 1979e12, _FP8_E5M2: 1979e12, _FP32: 67e12},
            4.8e12,
            141e9,
            "NVIDIA H200 Tensor Core GPU datasheet (SXM column; sparse figures halved)",
        ),
        HardwareSpec(
            "A100",
            {_BF16: 312e12, _FP16: 312e12, _FP32: 19.5e12},
            2.039e12,
            80e9,
            "NVIDIA A100 Tensor Core GPU datasheet (80GB SXM column; dense)",
        ),
        HardwareSpec(
            "B200",
            {_BF16: 2.25e15, _FP16: 2.25e15, _FP8: 4.5e15, _FP8_E5M2: 4.5e15, _FP32: 75e12},
            7.7e12,
            180e9,
            "NVIDIA HGX B200 specifications, per-GPU column (180 GB HBM3e at 7.7 TB/s, 62 TB/s for 8; early "
            "sheets rounded to 8 TB/s; sparse figures halved)",
        ),
    )
}


@dataclass(frozen=True)
class PrecisionPolicy:
    """The dtypes a training run keeps per parameter. `master_dtype` is None when there is no separate
    master copy of the weights (the optimizer updates the parameters in `param_dtype` directly)."""

    name: str
    param_dtype: torch.dtype
    grad_dtype: torch.dtype
    state_dtype: torch.dtype  # the optimizer's per-parameter state (momentum, second moment, ...)
    master_dtype: torch.dtype | None


POLICIES: dict[str, PrecisionPolicy] = {
    p.name: p
    for p in (
        PrecisionPolicy("fp32", _FP32, _FP32, _FP32, None),
        # the lecture's: bf16 parameters and gradients, fp32 moments, no master copy (2+2+4+4 = 12 for AdamW)
        PrecisionPolicy("bf16", _BF16, _BF16, _FP32, None),
        # ZeRO-style: as bf16, plus fp32 master weights (2+2+4+4+4 = 16 for AdamW)
        PrecisionPolicy("bf16_master", _BF16, _BF16, _FP32, _FP32),
    )
}

# How many state tensors, each the size of the parameter, an optimizer keeps.
OPTIMIZER_STATE_TENSORS: dict[str, int] = {"sgd": 0, "sgd_momentum": 1, "adagrad": 1, "adamw": 2}


@dataclass(frozen=True)
class BytesPerParam:
    """Bytes kept per parameter, by kind. Activations are not included."""

    params: int
    grads: int
    optimizer_state: int
    master_weights: int

    @property
    def total(self) -> int:
        return self.params + self.grads + self.optimizer_state + self.master_weights


@dataclass(frozen=True)
class OpCost:
    """What one operation costs on a roofline: the FLOPs it performs and the bytes it moves between memory
    and the chip (every input read once, every output written once; no caching, no fusion)."""

    flops: int
    bytes: int


# -- problem precision -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format: 1 sign bit, `exponent_bits`, `mantissa_bits` (stored, without the
    implicit leading 1), and the derived numbers that describe its range and resolution.

    A code with exponent field E and mantissa field M is worth (-1)^sign * (1 + M / 2^mantissa_bits) *
    2^(E - bias) when E > 0 (normal) and (-1)^sign * (M / 2^mantissa_bits) * 2^(1 - bias) when E = 0
    (subnormal). The all-ones exponent field is special in one of three ways:
    - `has_inf` (IEEE: fp32, fp16, bf16, fp8 e5m2): it holds +-inf (M = 0) and NaN (M != 0), no numbers;
    - `has_nan` without `has_inf` (fp8 e4m3fn, "finite"): only all-ones exponent and mantissa is NaN, the
      other codes with that exponent are numbers;
    - neither (fp4 e2m1): every code is a number.
    """

    name: str
    exponent_bits: int
    mantissa_bits: int
    bias: int
    has_inf: bool
    has_nan: bool
    max_normal: float  # the largest finite value
    min_normal: float  # the smallest positive normal value, 2^(1 - bias)
    min_subnormal: float  # the smallest positive value
    eps: float  # the gap between 1 and the next larger value


@dataclass(frozen=True, eq=False)
class NVFP4Tensor:
    """A tensor in NVFP4 (problem precision): blocks of 16 consecutive values along the last dimension
    share one scale. The value at [..., i] is values[..., i] * block_scales[..., i // 16] * tensor_scale.

    - `values`: float32, the input's shape, every entry on the fp4 e2m1 grid (0, 0.5, 1, 1.5, 2, 3, 4, 6
      and their negatives).
    - `block_scales`: float32, shape (..., n // 16), every entry non-negative and exactly representable in
      fp8 e4m3fn.
    - `tensor_scale`: the per-tensor scale, a positive float32 value (as a Python float).
    """

    values: torch.Tensor
    block_scales: torch.Tensor
    tensor_scale: float


# -- problem benchmarking --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Timing:
    """Wall-clock times of the timed calls of a benchmark (problem benchmarking), in seconds: each trial's
    time, in order, and their mean, median and *population* standard deviation (denominator n, as
    `statistics.fmean`, `statistics.median` and `statistics.pstdev` compute them; 0.0 for one trial)."""

    times: tuple[float, ...]
    mean: float
    median: float
    std: float


@dataclass(frozen=True)
class Measurement:
    """One operation timed on one device (problem benchmarking): what one call does (`flops`, and `bytes`
    read plus written), its median time, the rates achieved, and what share of the device's spec sheet
    they are. `mfu` is None where no spec sheet is known or it lists no peak for `dtype`;
    `bandwidth_utilization` is None where no spec sheet is known."""

    op: str  # "matmul" or "relu"
    n: int
    dtype: torch.dtype
    device: str  # str(torch.device(...)), e.g. "cpu", "cuda:0"
    flops: int
    bytes: int
    seconds: float
    flops_per_sec: float
    bytes_per_sec: float
    mfu: float | None
    bandwidth_utilization: float | None
