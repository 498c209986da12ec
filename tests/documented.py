"""Every error a docstring promises, with a fixed call that must raise it (and, where the docstring draws a
line, the allowed call just on the other side of it, which must not raise).

Generated tests may or may not draw an input that raises; under the derandomized grade profile a missed
error would be missed for good. So each problem's `test_documented_errors_are_raised` runs its entries of
`DOCUMENTED_ERRORS` through the package under test (in-process or isolated, by the scenario
tests/scenarios/documented.py:raised), and tests/meta/test_documented.py checks that the table covers every
(function, error) that the docstrings of assignment/ name, that each entry raises its error on the
reference, and that each allowed call returns there.

An entry whose error needs an environment rather than arguments (matplotlib missing) names the fixed
(non-generated) test that covers it instead: `covered_by`.
"""

import math
from dataclasses import dataclass, field

import pytest
import torch

from assignment.given import HARDWARE, FloatFormat, NVFP4Tensor
from tests.scenarios import documented as scenarios


def OBJ(name: str) -> dict:
    """A placeholder for an argument that is not data, built next to the code under test (OBJECTS there)."""
    return {"$object": name}


@dataclass(frozen=True)
class Call:
    args: tuple = ()
    kwargs: dict = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class DocumentedError:
    function: str  # the name in the problem module; a class's name for its constructor
    error: str  # the exception class the docstring names: the raised exception is one (by its MRO's names)
    why: str  # the condition, in the docstring's words (the pytest id)
    call: Call | None = None  # the fixed call that must raise
    allowed: Call | None = None  # the allowed call on the other side of the docstring's line: must not raise
    covered_by: str | None = None  # instead of a call: the fixed test in tests/test_<problem>.py that checks it

    @property
    def id(self) -> str:
        return f"{self.function}: {self.why}"


def E(function: str, error: str, why: str, *args, allowed: Call | None = None, **kwargs) -> DocumentedError:
    return DocumentedError(function, error, why, Call(args, kwargs), allowed)


def ok(*args, **kwargs) -> Call:
    return Call(args, kwargs)


V = "ValueError"
H100, BF16 = HARDWARE["H100 SXM"], torch.bfloat16
FP16 = FloatFormat("fp16", 5, 10, 15, has_inf=True, has_nan=True, max_normal=65504.0, min_normal=2.0**-14,
                   min_subnormal=2.0**-24, eps=2.0**-10)
NVFP4_FLOOR = 6 * 448 * 2.0**-126  # the smallest amax nvfp4_quantize takes: a normal float32 tensor scale
X = torch.ones(2, 3, dtype=torch.float64)


def _with_first(first: float, n: int = 16) -> torch.Tensor:
    return torch.tensor([first] + [0.0] * (n - 1))


DOCUMENTED_ERRORS: dict[str, list[DocumentedError]] = {
    "tensors": [
        E("view_result", V, "view where can_view says no", (4, 6), (6, 1), 0, [("t",), ("view", (-1,))],
          allowed=ok((4, 6), (6, 1), 0, [("view", (-1,))])),
        E("view_result", V, "view across the runs of a slice", (4, 6), (6, 1), 0,
          [("slice", 1, 0, 3, 1), ("view", (12,))],
          allowed=ok((4, 6), (6, 1), 0, [("slice", 0, 0, 2, 1), ("view", (12,))])),
    ],
    "mini_einops": [
        E("rearrange", "EinopsError", "an empty list", [], "a b -> b a",
          allowed=ok([torch.ones(2)], "a b -> b a")),
        E("rearrange", "EinopsError", "a list of tensors of different shapes", [torch.ones(2), torch.ones(3)],
          "a b -> b a", allowed=ok([torch.ones(2), torch.ones(2)], "a b -> b a")),
        # "an input that is neither" (a float, a list of floats) is not tested: the stub's annotation refuses it,
        # and a test sends only what the stubs' annotations allow (grader/harness/typecheck.py)
        E("rearrange", "EinopsError", "lengths einops cannot infer", torch.ones(2, 12), "b (h w) -> b h w",
          allowed=ok(torch.ones(2, 12), "b (h w) -> b h w", h=3)),
        E("rearrange", "EinopsError", "a split that does not divide", torch.ones(2, 12), "b (h w) -> b h w", h=5),
        E("rearrange", "EinopsError", "an axis on one side only", torch.ones(2, 3), "a b -> a"),
        E("reduce", "EinopsError", "an empty list", [], "a b -> a", "sum",
          allowed=ok([torch.ones(2)], "a b -> a", "sum")),
        E("reduce", "EinopsError", "a list of tensors of different shapes", [torch.ones(2), torch.ones(3)],
          "a b -> a", "sum"),
        E("reduce", "EinopsError", "a right axis not on the left", torch.ones(2, 3), "a b -> a c", "sum"),
        E("reduce", "EinopsError", "mean of an integer tensor", torch.ones(2, 3, dtype=torch.int64), "a b -> a",
          "mean", allowed=ok(torch.ones(2, 3, dtype=torch.int64), "a b -> a b", "mean")),
        E("repeat", "EinopsError", "an empty list", [], "a b -> a b c", c=2,
          allowed=ok([torch.ones(2)], "a b -> a b c", c=2)),
        E("repeat", "EinopsError", "a list of tensors of different shapes", [torch.ones(2), torch.ones(3)],
          "a b -> a b c", c=2),
        E("repeat", "EinopsError", "a new axis without a length", torch.ones(2, 3), "a b -> a b c",
          allowed=ok(torch.ones(2, 3), "a b -> a b c", c=1)),
        E("einsum", "EinopsError", "lengths of one axis that do not match", torch.ones(2, 3), torch.ones(4, 5),
          "a b, b c -> a c", allowed=ok(torch.ones(2, 3), torch.ones(3, 5), "a b, b c -> a c")),
        E("einsum", "EinopsError", "an output axis in no input", torch.ones(2, 3), "a b -> c"),
        E("einsum", "EinopsError", "an output axis twice", torch.ones(2, 3), "a b -> a a"),
    ],
    "memory": [
        E("bytes_per_param", V, "an unknown policy name", "fp64", "adamw", allowed=ok("bf16_master", "adamw")),
        E("bytes_per_param", V, "an unknown optimizer", "bf16", "lion", allowed=ok("bf16", "sgd")),
    ],
    "precision": [
        E("float_format", V, "an unknown name", "fp64", allowed=ok("fp4_e2m1")),
        E("float_format", V, "an unknown dtype", torch.float64, allowed=ok(torch.float8_e5m2)),
        E("round_to_bf16", V, "x not float32", torch.ones(3, dtype=torch.float64), allowed=ok(torch.ones(3))),
        E("round_to_bf16", V, "x bfloat16", torch.ones(3, dtype=torch.bfloat16)),
        E("quantize", V, "x not float32", torch.ones(3, dtype=torch.float64), FP16, allowed=ok(torch.ones(3), FP16)),
        E("nvfp4_quantize", V, "amax below 6 * 448 * 2^-126", _with_first(NVFP4_FLOOR / 2),
          allowed=ok(_with_first(NVFP4_FLOOR))),
        E("nvfp4_quantize", V, "a last dimension not a multiple of 16", torch.ones(2, 17),
          allowed=ok(torch.zeros(2, 32))),
        E("nvfp4_quantize", V, "a last dimension of 0 (not positive)", torch.ones(3, 0)),
        # a 0-d tensor never reaches the body: the annotation "*batch n" rejects it first
        E("nvfp4_quantize", V, "x not float32", torch.ones(16, dtype=torch.float64)),
        E("nvfp4_quantize", V, "x with inf", _with_first(-math.inf)),
        E("nvfp4_quantize", V, "x with NaN", _with_first(math.nan)),
        E("nvfp4_dequantize", V, "one block scale per 16 values: too few",
          NVFP4Tensor(torch.ones(32), torch.ones(1), 1.0), allowed=ok(NVFP4Tensor(torch.ones(32), torch.ones(2), 1.0))),
        E("nvfp4_dequantize", V, "one block scale per 16 values: other leading dimensions",
          NVFP4Tensor(torch.ones(2, 16), torch.ones(3, 1), 1.0)),
    ],
    "adamw": [
        E("AdamW", V, "lr < 0", OBJ("two parameters"), lr=-1e-3, allowed=ok(OBJ("two parameters"), lr=0.0)),
        E("AdamW", V, "eps < 0", OBJ("two parameters"), eps=-1e-8, allowed=ok(OBJ("two parameters"), eps=0.0)),
        E("AdamW", V, "weight_decay < 0", OBJ("two parameters"), weight_decay=-1e-2,
          allowed=ok(OBJ("two parameters"), weight_decay=0.0)),
        E("AdamW", V, "beta1 = 1, outside [0, 1)", OBJ("two parameters"), betas=(1.0, 0.999),
          allowed=ok(OBJ("two parameters"), betas=(0.0, 0.999))),
        E("AdamW", V, "beta2 = 1, outside [0, 1)", OBJ("two parameters"), betas=(0.9, 1.0),
          allowed=ok(OBJ("two parameters"), betas=(0.9, 0.0))),
        E("AdamW", V, "beta1 < 0", OBJ("two parameters"), betas=(-0.1, 0.999)),
    ],
    "roofline": [
        E("gelu_cost", V, "an unknown approximate", 8, BF16, "erf", allowed=ok(8, BF16, "tanh")),
        E("min_compute_bound_batch", V, "no batch is enough", 1, 1, H100, BF16,
          allowed=ok(4096, 4096, H100, BF16)),
        E("min_compute_bound_batch", V, "no batch is enough: the limit just below the ridge", 512, 512, H100, BF16,
          allowed=ok(1024, 1024, H100, BF16)),
        DocumentedError("plot_roofline", "ImportError", "matplotlib missing",
                        covered_by="test_plot_roofline_names_the_missing_extra"),
    ],
    "gradient_accumulation": [
        E("accumulate_gradients", V, "micro_batch_size 0", OBJ("linear"), OBJ("mse_loss"), X.repeat(2, 1),
          torch.zeros(4, 1, dtype=torch.float64), 0,
          allowed=ok(OBJ("linear"), OBJ("mse_loss"), X.repeat(2, 1), torch.zeros(4, 1, dtype=torch.float64), 1)),
        E("accumulate_gradients", V, "micro_batch_size < 0", OBJ("linear"), OBJ("mse_loss"), X.repeat(2, 1),
          torch.zeros(4, 1, dtype=torch.float64), -2,
          allowed=ok(OBJ("linear"), OBJ("mse_loss"), X.repeat(2, 1), torch.zeros(4, 1, dtype=torch.float64), 9)),
        E("accumulate_gradients", V, "an empty batch", OBJ("linear"), OBJ("mse_loss"),
          torch.zeros(0, 3, dtype=torch.float64), torch.zeros(0, 1, dtype=torch.float64), 2),
    ],
    "activation_checkpointing": [
        E("segment_sizes", V, "segments 0", 3, 0, allowed=ok(3, 1)),
        E("segment_sizes", V, "segments above layers", 3, 4, allowed=ok(3, 3)),
        E("segment_sizes", V, "segments negative", 5, -1),
        E("segment_sizes", V, "no layers", 0, 1),
        E("checkpoint_sequential", V, "segments 0", OBJ("three layers"), X, 0,
          allowed=ok(OBJ("three layers"), X, 1)),
        E("checkpoint_sequential", V, "segments above len(layers)", OBJ("three layers"), X, 4,
          allowed=ok(OBJ("three layers"), X, 3)),
        E("recompute_flops", V, "an unknown strategy", 4, 10, "sqrt", allowed=ok(4, 10, "store_none")),
    ],
    "benchmarking": [
        E("summarize", V, "no times", [], allowed=ok([0.0])),
        E("benchmark", V, "warmup < 0", OBJ("no-op"), warmup=-1, trials=3, sync=OBJ("no-op"),
          allowed=ok(OBJ("no-op"), warmup=0, trials=3, sync=OBJ("no-op"))),
        E("benchmark", V, "trials < 1", OBJ("no-op"), warmup=2, trials=0, sync=OBJ("no-op"),
          allowed=ok(OBJ("no-op"), warmup=2, trials=1, sync=OBJ("no-op"))),
    ],
}


def _shown(value) -> str:
    if type(value) is dict and set(value) == {"$object"}:
        return f"<{value['$object']}>"
    if isinstance(value, torch.Tensor):
        return f"tensor(shape={tuple(value.shape)}, dtype={value.dtype})"
    if isinstance(value, list):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    if isinstance(value, FloatFormat):
        return f"<FloatFormat {value.name}>"
    if isinstance(value, NVFP4Tensor):
        return (f"NVFP4Tensor(values {tuple(value.values.shape)}, block_scales {tuple(value.block_scales.shape)}, "
                f"{value.tensor_scale})")
    if getattr(value, "name", None) and type(value).__name__ == "HardwareSpec":
        return f"HARDWARE[{value.name!r}]"
    return repr(value)


def call_text(function: str, call: Call) -> str:
    parts = [_shown(a) for a in call.args] + [f"{k}={_shown(v)}" for k, v in call.kwargs.items()]
    return f"{function}({', '.join(parts)})"


def cases(problem: str) -> list:
    """The entries checked by a call, as pytest parameters with readable ids."""
    return [pytest.param(case, id=case.id) for case in DOCUMENTED_ERRORS.get(problem, []) if case.call is not None]


def raised(impl, problem: str, function: str, call: Call) -> list[str] | None:
    return impl.run(scenarios.raised, problem, function, list(call.args), dict(call.kwargs))


def expect_documented_error(impl, problem: str, case: DocumentedError) -> None:
    """The code under test raises the documented error on the entry's call, and not on its allowed call."""
    what = call_text(case.function, case.call)
    got = raised(impl, problem, case.function, case.call)
    assert got is not None and case.error in got, (
        f"{what} should raise {case.error} (the docstring: {case.why}); "
        + ("it returned" if got is None else f"it raised {got[0]}"))
    if case.allowed is not None:
        allowed = call_text(case.function, case.allowed)
        got = raised(impl, problem, case.function, case.allowed)
        assert got is None, (f"{allowed} is allowed (just inside the line that {what} crosses: {case.why}), "
                             f"but it raised {got[0]}")
