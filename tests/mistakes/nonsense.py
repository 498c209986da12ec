"""Nonsense: implementations that compute nothing right, and must earn (almost) nothing.

Not mistakes a student makes (those are the problems' catalogues, each caught by a test): code that a
student who has read the tests could write to collect the points of tests that check only a property (a
bound, a trend, "raises on bad input", "a torch optimizer"). `tests/meta/test_nonsense.py` swaps each into
the reference, as `--mutant` swaps a catalogued mistake (`pytest --impl reference --mutant
memory:nonsense-zero`), scores the run with the grader's own scoring and asserts how little it earns.

Two kinds, per problem (`nonsense(problem)`):

- **whole module** (`nonsense-<flavour>`): every public function of the module replaced by one flavour of
  nonsense (returns 0, returns its first argument, raises the module's error), and each class with a
  behaviour (a counter, an optimizer) by one that does nothing; plus the problem's own nonsense where a
  generic one is too easy to catch (a loop over micro-batches that never calls the loss);
- **placeholder** (`nonsense-placeholder`, where a problem's input validation asks a valid call for a value of
  the right kind): every function checks its input as the docstring says, then returns a placeholder of the
  right kind without computing (`torch.zeros_like`, a `Timing` of zeros after calling `fn` as often as asked);
- **core** (`core-<what>`): the reference with only the problem's core replaced by nonsense (the activation
  counter counting nothing, `view_result` answering its input's layout): the rest of the problem is right.
"""

import importlib
import inspect
import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from assignment.given import FloatFormat, Measurement, NVFP4Tensor, Timing
from grader.registry import BY_ID, WHOLE_DOMAIN_TESTED
from reference import benchmarking as ref_benchmarking
from reference import precision as ref_precision
from tests.mistakes import Mistake

WHOLE, CORE = "whole module", "core"


def _zero(*args, **kwargs):
    return 0


def _first(*args, **kwargs):
    return args[0] if args else None


def _raiser(error: type[Exception]):
    def raises(*args, **kwargs):
        raise error("nonsense")

    return raises


class CountsNothingFlops(TorchDispatchMode):
    """A FlopCounter that runs every op and counts none."""

    def __init__(self) -> None:
        super().__init__()
        self.total, self.by_op = 0, {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


class CountsNothingSaved:
    """A SavedActivations that saves as autograd does and counts nothing."""

    def __init__(self) -> None:
        self.total, self.storages = 0, 0

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None


class StepsNothing(torch.optim.Optimizer):
    """An AdamW that is a torch optimizer with AdamW's hyperparameters and never changes a parameter."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, **kwargs):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    def step(self, closure=None):
        if closure is None:
            return None
        with torch.enable_grad():
            return closure()


class HooksCountNothing(CountsNothingSaved):
    """A SavedActivations whose saved-tensor hooks hand back what was saved and count nothing: it earns the row
    of what backward gets (which it does), no count."""

    def __enter__(self):
        self._hooks = torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        hooks, self._hooks = self._hooks, None
        hooks.__exit__(*exc)


BEHAVING_CLASSES = {"FlopCounter": CountsNothingFlops, "SavedActivations": CountsNothingSaved,
                    "AdamW": StepsNothing}


def never_calls_the_loss(model, loss_fn, inputs, targets, micro_batch_size):
    """The issue's example: a loop over micro-batches that backpropagates the outputs' sum, never the loss,
    and returns 0.0."""
    model.zero_grad(set_to_none=True)
    for start in range(0, inputs.shape[0], max(micro_batch_size, 1)):
        model(inputs[start:start + micro_batch_size]).sum().backward()
    return 0.0


def train_step_never_calls_the_loss(model, optimizer, loss_fn, inputs, targets, micro_batch_size):
    optimizer.zero_grad(set_to_none=True)
    never_calls_the_loss(model, loss_fn, inputs, targets, micro_batch_size)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return 0.0


def checkpoint_calls_fn_once(fn, *args):
    """A checkpoint that is a plain call: nothing recomputed, everything saved."""
    plain = fn(*args)
    return plain


def sequential_calls_each_once(layers, segments, x):
    for layer in layers:
        x = layer(x)
    return x


def view_result_of_the_input(shape, strides, offset, ops):
    """view_result answering its input's layout, whatever the ops."""
    return tuple(shape), tuple(strides), offset


def _checked_as(reference, placeholder):
    """`reference` run first for its checks alone (its answer dropped), then `placeholder`'s answer."""
    def checked(*args, **kwargs):
        reference(*args, **kwargs)
        return placeholder(*args, **kwargs)
    checked.__name__ = reference.__name__
    return checked


def _zero_timing(count: int) -> Timing:
    return Timing(times=(0.0,) * count, mean=0.0, median=0.0, std=0.0)


def benchmark_calls_fn_times_nothing(fn, *, warmup, trials, sync=None, clock=None):
    """benchmark's counts checked (the reference's checks, on callables that do nothing), `fn` called once per
    warm-up and trial, the clock never read: a Timing of zeros."""
    ref_benchmarking.benchmark(lambda: None, warmup=warmup, trials=trials, sync=lambda: None, clock=lambda: 0.0)
    for _ in range(warmup + trials):
        fn()
    return _zero_timing(trials)


def _zero_measurement(op: str):
    def measure(n, dtype, device, **kwargs):
        return Measurement(op=op, n=n, dtype=dtype, device=str(torch.device(device)), flops=0, bytes=0, seconds=0.0,
                           flops_per_sec=0.0, bytes_per_sec=0.0, mfu=None, bandwidth_utilization=None)
    return measure


_ZERO_FORMAT = FloatFormat("", 0, 0, 0, False, False, 0.0, 0.0, 0.0, 0.0)

# Per problem, its public functions as placeholders: the input checked as the reference checks it, an answer of
# the right kind that computes nothing.
PLACEHOLDERS = {
    "precision": {
        "float_format": _checked_as(ref_precision.float_format, lambda dtype: _ZERO_FORMAT),
        "round_to_bf16": _checked_as(ref_precision.round_to_bf16, torch.zeros_like),
        "quantize": _checked_as(ref_precision.quantize, lambda x, fmt: torch.zeros_like(x)),
        "nvfp4_quantize": _checked_as(ref_precision.nvfp4_quantize, lambda x: NVFP4Tensor(
            torch.zeros_like(x), x.new_zeros(*x.shape[:-1], x.shape[-1] // 16), 1.0)),
        "nvfp4_dequantize": _checked_as(ref_precision.nvfp4_dequantize, lambda q: torch.zeros_like(q.values)),
        "mixed_precision_step": lambda *args, **kwargs: 0.0,
    },
    "benchmarking": {
        "summarize": _checked_as(ref_benchmarking.summarize, lambda times: _zero_timing(len(times))),
        "benchmark": benchmark_calls_fn_times_nothing,
        "hardware_for_name": lambda name: None,
        "device_spec": lambda device: None,
        "measure_matmul": _zero_measurement("matmul"),
        "measure_bandwidth": _zero_measurement("relu"),
    },
}


def _public(problem: str) -> dict[str, object]:
    module = importlib.import_module(f"reference.{problem}")
    return {name: getattr(module, name) for name in module.__all__}


def _whole(problem: str, flavour: str, function, description: str, extra: dict | None = None) -> Mistake:
    replaces = {}
    for name, value in _public(problem).items():
        if name in BEHAVING_CLASSES:
            replaces[name] = BEHAVING_CLASSES[name]
        elif inspect.isfunction(value):
            replaces[name] = function
    replaces.update(extra or {})
    return Mistake(problem, f"nonsense-{flavour}", f"{WHOLE}: {description}", replaces)


# The core of each problem, where it has one that the rest of the problem does not need: replaced alone.
CORES = {
    "tensors": ("view_result", {"view_result": view_result_of_the_input}),
    "flops": ("FlopCounter", {"FlopCounter": CountsNothingFlops}),
    "memory": ("SavedActivations", {"SavedActivations": CountsNothingSaved}),
    "adamw": ("AdamW", {"AdamW": StepsNothing}),
    "gradient_accumulation": ("the loop", {"accumulate_gradients": never_calls_the_loss,
                                           "train_step": train_step_never_calls_the_loss}),
    "activation_checkpointing": ("checkpoint", {"checkpoint": checkpoint_calls_fn_once,
                                                "checkpoint_sequential": sequential_calls_each_once}),
}

EXTRA = {
    "memory": {"SavedActivations": HooksCountNothing},
    "gradient_accumulation": {"accumulate_gradients": never_calls_the_loss,
                              "train_step": train_step_never_calls_the_loss},
    "activation_checkpointing": {"checkpoint": checkpoint_calls_fn_once,
                                 "checkpoint_sequential": sequential_calls_each_once},
}


def _called_from_a_fixed_test(problem: str) -> bool:
    """Whether a test of `problem` that hypothesis does not drive is on the stack (its inputs are public and
    fixed), other than the whole-domain ones (grader/registry.py WHOLE_DOMAIN_TESTED: a table is right there)."""
    module = sys.modules.get(f"tests.test_{problem}")
    whole = {t for b in BY_ID[problem].behaviours if (problem, b.name) in WHOLE_DOMAIN_TESTED for t in b.tests}
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_name
        test = getattr(module, name, None) if name.startswith("test_") else None
        if test is not None and not getattr(test, "is_hypothesis_test", False) and name not in whole:
            return True
        frame = frame.f_back
    return False


# Functions whose tests can check only that something was made (a PNG file): the table makes it every time.
ALWAYS_MADE = frozenset({"plot_roofline"})


def _table(problem: str) -> Mistake:
    """Every public function answers as the reference when a test of fixed inputs calls it, as a table of the
    public inputs' answers would, and 0 otherwise (a plot is always drawn, ALWAYS_MADE); classes do nothing."""
    def answers(name, reference):
        def table(*args, **kwargs):
            made = name in ALWAYS_MADE or _called_from_a_fixed_test(problem)
            return reference(*args, **kwargs) if made else 0
        table.__name__ = name
        return table

    public = _public(problem)
    extra = {name: answers(name, value) for name, value in public.items()
             if inspect.isfunction(value) and name not in BEHAVING_CLASSES}
    return _whole(problem, "table", _zero, "a table of the public inputs' answers: the reference's answer in a test "
                  "of fixed inputs, 0 elsewhere; classes do nothing", extra)


def nonsense(problem: str) -> list[Mistake]:
    """The nonsense implementations of `problem`: whole-module ones, then its core's."""
    error = getattr(importlib.import_module(f"reference.{problem}"), "EinopsError", ValueError)
    found = [
        _whole(problem, "zero", _zero, "every function returns 0; classes do nothing"),
        _whole(problem, "input", _first, "every function returns its first argument; classes do nothing"),
        _whole(problem, "raise", _raiser(error), f"every function raises {error.__name__}; classes do nothing"),
        _table(problem),
    ]
    if problem in EXTRA:
        found.append(_whole(problem, "own", _zero, "every function returns 0, the problem's own nonsense where a "
                            "generic one is caught at once", EXTRA[problem]))
    if problem in PLACEHOLDERS:
        found.append(_whole(problem, "placeholder", _zero, "every function checks its input as the docstring says "
                            "and returns a placeholder of the right kind (zeros, a Timing of zeros after calling fn "
                            "as often as asked)", PLACEHOLDERS[problem]))
    if problem in CORES:
        what, replaces = CORES[problem]
        found.append(Mistake(problem, "core-nonsense", f"{CORE}: {what} replaced by nonsense, the rest right",
                             replaces))
    return found
