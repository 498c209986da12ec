"""Classic mistakes in activation checkpointing, each written as the wrong code a student would write."""

import math

import torch

from reference import activation_checkpointing as ref
from tests.mistakes import Mistake


def checkpoint_without_recompute(fn, *args):
    """fn under no_grad and nothing else: memory saved, but no gradients flow."""
    with torch.no_grad():
        return fn(*args)


class _RngNotReplayed(ref._Checkpoint):
    @staticmethod
    def backward(ctx, grad_output):
        ctx.rng_state = torch.get_rng_state()  # the recompute draws from wherever the RNG is now
        return ref._Checkpoint.backward(ctx, grad_output)


def checkpoint_rng_not_replayed(fn, *args):
    return _RngNotReplayed.apply(fn, torch.empty(0, requires_grad=True), *args)


class _RngNotRestored(ref._Checkpoint):
    @staticmethod
    def backward(ctx, grad_output):
        grads = ref._Checkpoint.backward(ctx, grad_output)
        torch.set_rng_state(ctx.rng_state)  # leaves the RNG where forward started, not where it was
        return grads


def checkpoint_rng_not_restored(fn, *args):
    return _RngNotRestored.apply(fn, torch.empty(0, requires_grad=True), *args)


class _NoDummy(ref._Checkpoint):
    @staticmethod
    def forward(ctx, fn, *args):
        return ref._Checkpoint.forward(ctx, fn, None, *args)

    @staticmethod
    def backward(ctx, grad_output):
        return ref._Checkpoint.backward(ctx, grad_output)[1:]


def checkpoint_without_dummy(fn, *args):
    return _NoDummy.apply(fn, *args)


class _KeepsInternals(ref._Checkpoint):
    @staticmethod
    def forward(ctx, fn, dummy, *args):
        with torch.enable_grad():  # the forward graph (and all it saves) is built and kept
            ctx.kept = fn(*[a.detach().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a
                            for a in args])
        return ref._Checkpoint.forward(ctx, fn, dummy, *args)


def checkpoint_keeps_internals(fn, *args):
    return _KeepsInternals.apply(fn, torch.empty(0, requires_grad=True), *args)


def checkpoint_delegates_to_torch(fn, *args):
    import torch.utils.checkpoint

    return torch.utils.checkpoint.checkpoint(fn, *args, use_reentrant=False)


def _plain(layers, x):
    for layer in layers:
        x = layer(x)
    return x


def sequential_without_checkpointing(layers, x, segments=None):
    """Every layer's activations stored: the outputs of every layer kept, no memory saved."""
    return _plain(list(layers), x)


def sequential_default_all_layers(layers, x, segments=None):
    layers = list(layers)
    return ref.checkpoint_sequential(layers, x, len(layers) if segments is None else segments)


def sequential_last_segment_stored(layers, x, segments=None):
    """The last segment run without checkpointing (torch's choice, not this course's convention)."""
    layers = list(layers)
    sizes = ref.segment_sizes(len(layers), ref.default_segments(len(layers)) if segments is None else segments)
    start = 0
    for i, size in enumerate(sizes):
        chunk = layers[start:start + size]
        x = _plain(chunk, x) if i == len(sizes) - 1 else ref.checkpoint(_plain, chunk, x)
        start += size
    return x


def sizes_last_takes_rest(layers, segments):
    if not 1 <= segments <= layers:
        raise ValueError(segments)
    size = layers // segments
    return [size] * (segments - 1) + [layers - size * (segments - 1)]


def default_segments_float(layers):
    return math.ceil(math.sqrt(layers))


def default_segments_floor(layers):
    return math.isqrt(layers)


def memory_without_recompute(layers, segments, bytes_per_activation):
    return (layers if segments is None else segments) * bytes_per_activation


def memory_average_segment(layers, segments, bytes_per_activation):
    if segments is None:
        return layers * bytes_per_activation
    return (segments + layers // segments) * bytes_per_activation


def recompute_off_by_one(layers, flops_per_layer, strategy):
    if strategy == "checkpoint":
        return (layers - 1) * flops_per_layer
    return ref.recompute_flops(layers, flops_per_layer, strategy)


def recompute_store_none_without_self(layers, flops_per_layer, strategy):
    if strategy == "store_none":
        return layers * (layers - 1) // 2 * flops_per_layer
    return ref.recompute_flops(layers, flops_per_layer, strategy)


def recompute_counts_the_forward(layers, flops_per_layer, strategy):
    return ref.recompute_flops(layers, flops_per_layer, strategy) + layers * flops_per_layer


def _m(id, description, **replaces):
    return Mistake("activation_checkpointing", id, description, replaces)


MISTAKES = [
    _m("no_recompute", "fn run under no_grad in forward and never recomputed: no gradients",
       checkpoint=checkpoint_without_recompute),
    _m("rng_not_replayed", "the recompute draws fresh random numbers: a different dropout mask",
       checkpoint=checkpoint_rng_not_replayed),
    _m("rng_not_restored", "the RNG left at forward's state after the recompute, so later draws repeat",
       checkpoint=checkpoint_rng_not_restored),
    _m("params_no_grad", "no dummy input: when no argument requires grad, backward never runs and the "
       "parameters get no gradient", checkpoint=checkpoint_without_dummy),
    _m("keeps_internals", "fn's forward graph built with grad enabled and kept: nothing saved",
       checkpoint=checkpoint_keeps_internals),
    _m("delegates_to_torch", "the work handed to torch.utils.checkpoint (the oracle)",
       checkpoint=checkpoint_delegates_to_torch),
    _m("no_checkpointing", "checkpoint_sequential stores every layer's output: no memory saved",
       checkpoint_sequential=sequential_without_checkpointing),
    _m("default_l_segments", "default of L segments (one layer each) instead of ceil(sqrt(L))",
       checkpoint_sequential=sequential_default_all_layers),
    _m("last_segment_stored", "the last segment run without checkpointing",
       checkpoint_sequential=sequential_last_segment_stored),
    _m("sizes_last_takes_rest", "segments of L // s layers, the last one taking the remainder",
       segment_sizes=sizes_last_takes_rest),
    _m("default_float_sqrt", "ceil(math.sqrt(L)) in floating point: wrong for big L",
       default_segments=default_segments_float),
    _m("default_floor_sqrt", "floor(sqrt(L)) segments instead of ceil", default_segments=default_segments_floor),
    _m("memory_forgets_recompute", "memory model of the segment inputs only, forgetting the recomputed segment",
       checkpoint_memory=memory_without_recompute),
    _m("memory_average_segment", "memory model with L // s for the recomputed segment instead of the largest",
       checkpoint_memory=memory_average_segment),
    _m("recompute_off_by_one", "checkpointing recomputes L - 1 layers (one forward short)",
       recompute_flops=recompute_off_by_one),
    _m("store_none_without_self", "store-none recomputes layers before i only: L(L-1)/2",
       recompute_flops=recompute_store_none_without_self),
    _m("recompute_counts_forward", "the ordinary forward counted as recompute work",
       recompute_flops=recompute_counts_the_forward),
]


# The behaviours each mistake may cost: those whose tests it failed under the held-out grading seed of
# tests/meta/test_mistakes.py, which checks it (the behaviours that wait for them may lose their points too).
# `python -m tests.meta.mutation --every-test --profile grade --grading-seed 11 --costs` prints what a run saw.
COSTS = {
    "no_recompute": ("audit: checkpoint without torch.utils.checkpoint", "checkpoint: dropout replayed",
                     "checkpoint: gradients", "checkpoint: non-tensor arguments", "checkpoint: parameters' gradients",
                     "checkpoint: saves only its inputs"),
    "rng_not_replayed": ("checkpoint: dropout replayed",),
    "rng_not_restored": ("checkpoint: dropout replayed",),
    "params_no_grad": ("checkpoint: dropout replayed", "checkpoint: gradients", "checkpoint: non-tensor arguments",
                       "checkpoint: parameters' gradients", "checkpoint: saves only its inputs"),
    "keeps_internals": ("checkpoint: dropout replayed", "checkpoint: saves only its inputs"),
    "delegates_to_torch": ("audit: checkpoint without torch.utils.checkpoint",),
    "no_checkpointing": ("checkpoint_sequential: segments recomputed", "segments"),
    "default_l_segments": ("checkpoint_sequential: segments recomputed",),
    "last_segment_stored": ("checkpoint_sequential: segments recomputed",),
    "sizes_last_takes_rest": ("segments",),
    "default_float_sqrt": ("segments",),
    "default_floor_sqrt": ("segments",),
    "memory_forgets_recompute": ("checkpoint_memory",),
    "memory_average_segment": ("checkpoint_memory",),
    "recompute_off_by_one": ("recompute_flops",),
    "store_none_without_self": ("recompute_flops",),
    "recompute_counts_forward": ("recompute_flops",),
}
