"""Problem (activation_checkpointing): reference solution; the spec and its conventions are in
assignment/activation_checkpointing.py."""

import math
from collections.abc import Callable, Sequence

import torch
from jaxtyping import Float, Shaped
from torch import Tensor, nn


class _Checkpoint(torch.autograd.Function):
    """forward(ctx, fn, dummy, *args): fn(*args) under no_grad, saving only the tensor arguments and the
    CPU RNG state; backward: set that RNG state, rerun fn with grad enabled on detached copies of the
    inputs, backpropagate through the recomputed graph, restore the RNG state that was current."""

    @staticmethod
    def forward(ctx, fn, dummy, *args):
        ctx.fn = fn
        ctx.rng_state = torch.get_rng_state()
        ctx.tensor_positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.args = [None if isinstance(a, Tensor) else a for a in args]
        ctx.save_for_backward(*(args[i] for i in ctx.tensor_positions))
        with torch.no_grad():
            return fn(*args)

    @staticmethod
    def backward(ctx, grad_output):
        args = list(ctx.args)
        inputs = []
        for i, saved in zip(ctx.tensor_positions, ctx.saved_tensors, strict=True):
            args[i] = saved.detach().requires_grad_(saved.requires_grad)
            inputs.append(args[i])
        current = torch.get_rng_state()
        torch.set_rng_state(ctx.rng_state)
        try:
            with torch.enable_grad():
                output = ctx.fn(*args)
        finally:
            torch.set_rng_state(current)
        if output.requires_grad:
            torch.autograd.backward(output, grad_output)
        grads = [None] * len(args)
        for i, t in zip(ctx.tensor_positions, inputs, strict=True):
            grads[i] = t.grad if t.requires_grad else None
        return (None, None, *grads)


def checkpoint(fn: Callable[..., Tensor], *args) -> Shaped[Tensor, "*shape"]:
    # A dummy input that requires grad: the output requires grad and backward runs even when no tensor
    # argument requires grad, so that the parameters inside fn get their gradients.
    dummy = torch.empty(0, requires_grad=True)
    return _Checkpoint.apply(fn, dummy, *args)


def _run(layers: Sequence[Callable[[Tensor], Tensor]], x: Tensor) -> Tensor:
    for layer in layers:
        x = layer(x)
    return x


def segment_sizes(layers: int, segments: int) -> list[int]:
    if not 1 <= segments <= layers:
        raise ValueError(f"segments must be between 1 and the number of layers {layers}, got {segments}")
    q, r = divmod(layers, segments)
    return [q + 1] * r + [q] * (segments - r)


def default_segments(layers: int) -> int:
    return math.isqrt(layers - 1) + 1 if layers > 0 else 0


def checkpoint_sequential(layers: Sequence[Callable[[Tensor], Tensor]] | nn.Sequential,
                          x: Float[Tensor, "batch ..."], segments: int | None = None
                          ) -> Float[Tensor, "batch ..."]:
    layers = list(layers)
    if segments is None:
        segments = default_segments(len(layers))
    start = 0
    for size in segment_sizes(len(layers), segments):
        x = checkpoint(_run, layers[start:start + size], x)
        start += size
    return x


def checkpoint_memory(layers: int, segments: int | None, bytes_per_activation: int) -> int:
    if segments is None:
        return layers * bytes_per_activation
    return (segments + max(segment_sizes(layers, segments))) * bytes_per_activation


def recompute_flops(layers: int, flops_per_layer: int, strategy: str) -> int:
    if strategy == "store_all":
        return 0
    if strategy == "checkpoint":
        return layers * flops_per_layer
    if strategy == "store_none":
        return layers * (layers + 1) // 2 * flops_per_layer
    raise ValueError(f"unknown strategy {strategy!r}: 'store_all', 'checkpoint' or 'store_none'")


__all__ = [
    "checkpoint",
    "checkpoint_sequential",
    "segment_sizes",
    "default_segments",
    "checkpoint_memory",
    "recompute_flops",
]
