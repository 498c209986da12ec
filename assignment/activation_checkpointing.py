"""Problem (activation_checkpointing): trade compute for memory. See handout.md, "Problem
(activation_checkpointing)".

Conventions (this course's; the tests hold you to them):
- A *layer* is a callable (usually an `nn.Module`) from one tensor to one tensor. One *activation* is what
  one layer keeps for its backward; `bytes_per_activation` is its size in bytes (the tests use layers that
  keep exactly one tensor of their input's shape, so one activation = the bytes of one layer input).
- `checkpoint_sequential` splits `layers` into `segments` contiguous segments as evenly as possible, the
  longer ones first (sizes ceil(L/s) for the first L % s segments, floor(L/s) for the rest, as
  `torch.tensor_split` does), and checkpoints *every* segment, the last one included.
- Backward recomputes each segment once, so every layer runs twice in total: once in forward, once in
  backward.

Do not use `torch.utils.checkpoint` in this file: it is the oracle the tests compare you against, and the
grader checks.
"""

import math  # noqa: F401 - you will want math.isqrt
from collections.abc import Callable, Sequence

import torch
from jaxtyping import Float, Shaped
from torch import Tensor, nn


class _Checkpoint(torch.autograd.Function):
    """A suggested shape for the autograd.Function behind `checkpoint` (you may design your own):

    forward(ctx, fn, dummy, *args): remember fn, the non-tensor arguments, where the tensors go, and the
    CPU RNG state (`torch.get_rng_state()`); save only the tensor arguments (`ctx.save_for_backward`); run
    fn(*args) under `torch.no_grad()`, so none of its internals are kept, and return its output.

    backward(ctx, grad_output): rebuild the arguments from detached copies of the saved tensors (each
    `requires_grad_` as the original), set the saved RNG state, rerun fn with `torch.enable_grad()`, call
    `torch.autograd.backward(output, grad_output)` on the recomputed output (this also accumulates the
    gradients of the parameters inside fn), put back the RNG state that was current before the recompute,
    and return one gradient per forward argument (None for fn, dummy and the non-tensor arguments).
    """

    @staticmethod
    def forward(ctx, fn, dummy, *args):
        raise NotImplementedError("_Checkpoint.forward")

    @staticmethod
    def backward(ctx, grad_output):
        raise NotImplementedError("_Checkpoint.backward")


def checkpoint(fn: Callable[..., Tensor], *args) -> Shaped[Tensor, "*shape"]:
    """`fn(*args)`, computed so that autograd keeps only the tensor arguments, not fn's internals; backward
    reruns fn with gradients enabled and backpropagates through the rerun. `fn` returns one tensor.

    Requirements (each is tested):
    - the same output and the same gradients (of the tensor arguments that require grad, and of the
      parameters used inside fn) as calling `fn(*args)` directly; None for arguments that do not require
      grad;
    - parameters inside fn get their gradients even when no tensor argument requires grad (an
      autograd.Function whose inputs do not require grad has an output that does not either, and its
      backward never runs: pass a dummy tensor that requires grad, e.g. `torch.empty(0,
      requires_grad=True)`);
    - random ops (dropout) draw the same numbers in the recompute as in forward: save the CPU RNG state
      before forward and set it before the recompute; afterwards restore the state that was current, so
      the random numbers drawn after backward are the same as without checkpointing;
    - non-tensor arguments (floats, bools, lists of modules, None) are passed through to fn unchanged;
    - while forward runs, the only tensors saved for backward are the tensor arguments themselves, saved
      with `ctx.save_for_backward` (the tests measure what is saved with `saved_tensors_hooks`, which sees
      only that; keep the RNG state, the function and the non-tensor arguments as attributes of ctx);
    - fn runs exactly twice: once in forward, once in backward.
    """
    raise NotImplementedError("checkpoint")


def segment_sizes(layers: int, segments: int) -> list[int]:
    """The sizes of the `segments` contiguous segments `checkpoint_sequential` splits `layers` layers into:
    as even as possible, the longer ones first, e.g. segment_sizes(7, 3) == [3, 2, 2]. Raises ValueError
    unless 1 <= segments <= layers."""
    raise NotImplementedError("segment_sizes")


def default_segments(layers: int) -> int:
    """The default number of segments: ceil(sqrt(layers)), computed exactly with integers (1 -> 1, 4 -> 2,
    5 -> 3, 10 -> 4); 0 for 0 layers."""
    raise NotImplementedError("default_segments")


def checkpoint_sequential(layers: Sequence[Callable[[Tensor], Tensor]] | nn.Sequential,
                          x: Float[Tensor, "batch ..."], segments: int | None = None
                          ) -> Float[Tensor, "batch ..."]:
    """Run `layers` one after the other on x, split into `segments` segments (`segment_sizes`; None:
    `default_segments(len(layers))`), each segment run through `checkpoint`. Returns the last layer's
    output. Forward keeps only each segment's input; backward recomputes the segments one at a time, last
    first. Raises ValueError unless 1 <= segments <= len(layers)."""
    raise NotImplementedError("checkpoint_sequential")


def checkpoint_memory(layers: int, segments: int | None, bytes_per_activation: int) -> int:
    """Peak bytes of activations kept for backward, in this (textbook, upper-bound) model:

    - segments None (no checkpointing, everything stored): layers * bytes_per_activation;
    - 1 <= segments <= layers (checkpoint_sequential): the input of every segment, kept from forward until
      backward, plus the activations of the largest segment while backward recomputes it:
      (segments + max(segment_sizes(layers, segments))) * bytes_per_activation.

    With segments = ceil(sqrt(L)) that is about 2 sqrt(L) activations instead of L. An exact int.
    """
    raise NotImplementedError("checkpoint_memory")


def recompute_flops(layers: int, flops_per_layer: int, strategy: str) -> int:
    """Extra forward FLOPs spent recomputing during backward (on top of the one ordinary forward), for
    `layers` layers of `flops_per_layer` forward FLOPs each. An exact int. Strategies:

    - "store_all": no checkpointing, nothing is recomputed: 0;
    - "checkpoint": checkpoint_sequential with any number of segments: every layer is recomputed exactly
      once, one extra forward: layers * flops_per_layer;
    - "store_none": only the input x is kept; for the backward of layer i (counting from 1), layers 1..i are
      rerun from x (layer i itself included, to get its internals): 1 + 2 + ... + L = L(L+1)/2 layer
      forwards, O(L^2).

    Raises ValueError for any other strategy.
    """
    raise NotImplementedError("recompute_flops")


__all__ = [
    "checkpoint",
    "checkpoint_sequential",
    "segment_sizes",
    "default_segments",
    "checkpoint_memory",
    "recompute_flops",
]
