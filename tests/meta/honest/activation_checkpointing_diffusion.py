"""Activation checkpointing in the style of the diffusion codebases' `CheckpointFunction`: `apply(run_function,
length, *args)` with the function's arguments first and a trailing dummy, `detach_variable` and
`check_backward_validity` helpers, the recompute under `torch.enable_grad()`, `torch.autograd.backward` on it,
and `checkpoint_sequential` written as torch's old one was, with a `run_function(start, end, functions)`
closure; the RNG state stashed and restored as torch.utils.checkpoint does. The codebases it is modelled on keep
the inputs as ctx attributes (invisible to saved-tensor hooks, never released), skip the RNG, or save every
argument: SLIPS.

Graded by tests/meta/test_honest.py."""

import math
import warnings

import torch

CASE = {"problem": "activation_checkpointing", "score": 6}
SLIPS = {
    "inputs_as_ctx_attributes": (
        ("        ctx.save_for_backward(*tensors)\n", "        ctx.input_tensors = tensors\n"),
        ("detach_variable(ctx.saved_tensors)", "detach_variable(ctx.input_tensors)"),
        ("checkpoint: saves only its inputs", "checkpoint_sequential: segments recomputed",
         "differential: all functions")),
    "rng_not_stashed": ("        torch.set_rng_state(ctx.fwd_cpu_state)\n", "",
                        ("checkpoint: dropout replayed",)),
    "every_argument_saved": (
        ("        ctx.save_for_backward(*tensors)\n", "        ctx.save_for_backward(*args[:length])\n"),
        ("        tensors = detach_variable(ctx.saved_tensors)",
         "        tensors = detach_variable(tuple(t for t in ctx.saved_tensors if torch.is_tensor(t)))"),
        ("checkpoint: non-tensor arguments",)),
}


def detach_variable(inputs):
    """Leaves to recompute from: each tensor detached, requiring grad as the original did."""
    out = []
    for inp in inputs:
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs):
    if not any(torch.is_tensor(inp) and inp.requires_grad for inp in inputs):
        warnings.warn("None of the inputs have requires_grad=True: only the parameters get gradients", stacklevel=3)


class CheckpointFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, run_function, length, *args):
        ctx.run_function = run_function
        ctx.is_tensor = [torch.is_tensor(a) for a in args[:length]]
        ctx.plain_args = [None if is_tensor else a for is_tensor, a in zip(ctx.is_tensor, args)]  # noqa: B905
        ctx.fwd_cpu_state = torch.get_rng_state()
        tensors = [a for a in args[:length] if torch.is_tensor(a)]
        ctx.save_for_backward(*tensors)
        with torch.no_grad():
            return run_function(*args[:length])

    @staticmethod
    def backward(ctx, *output_grads):
        tensors = detach_variable(ctx.saved_tensors)
        pending = iter(tensors)
        inputs = [next(pending) if is_tensor else a for is_tensor, a in zip(ctx.is_tensor, ctx.plain_args)]  # noqa: B905
        bwd_cpu_state = torch.get_rng_state()
        torch.set_rng_state(ctx.fwd_cpu_state)
        try:
            with torch.enable_grad():
                outputs = ctx.run_function(*inputs)
        finally:
            torch.set_rng_state(bwd_cpu_state)
        if outputs.requires_grad:
            torch.autograd.backward(outputs, output_grads)
        grads = iter(t.grad if t.requires_grad else None for t in tensors)
        input_grads = [next(grads) if is_tensor else None for is_tensor in ctx.is_tensor]
        return (None, None, *input_grads, None)


def checkpoint(fn, *args):
    check_backward_validity(args)
    dummy = torch.empty(0, requires_grad=True)  # so that backward runs for the parameters inside fn
    return CheckpointFunction.apply(fn, len(args), *args, dummy)


def segment_sizes(layers, segments):
    if segments < 1 or segments > layers:
        raise ValueError(f"need 1 <= segments <= {layers}, got {segments}")
    base, longer = divmod(layers, segments)
    return [base + (i < longer) for i in range(segments)]


def default_segments(layers):
    if layers == 0:
        return 0
    root = math.isqrt(layers)
    return root if root * root == layers else root + 1


def checkpoint_sequential(layers, x, segments=None):
    functions = list(layers)
    if segments is None:
        segments = default_segments(len(functions))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end):
                input = functions[j](input)
            return input
        return forward

    start = 0
    for size in segment_sizes(len(functions), segments):
        x = checkpoint(run_function(start, start + size, functions), x)
        start += size
    return x


def checkpoint_memory(layers, segments, bytes_per_activation):
    if segments is None:
        return layers * bytes_per_activation
    return (segments + max(segment_sizes(layers, segments))) * bytes_per_activation


def recompute_flops(layers, flops_per_layer, strategy):
    extra = {"store_all": 0, "checkpoint": layers, "store_none": layers * (layers + 1) // 2}
    if strategy not in extra:
        raise ValueError(f"unknown strategy {strategy!r}")
    return extra[strategy] * flops_per_layer


__all__ = ["checkpoint", "checkpoint_sequential", "segment_sizes", "default_segments", "checkpoint_memory",
           "recompute_flops"]
