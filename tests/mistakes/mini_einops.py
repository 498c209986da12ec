"""Classic mistakes in writing einops from scratch, each as the wrong function a student would write
(most are the reference with one rule bent: the pattern rewritten before the call, or the error changed)."""

import re

import torch

from reference import mini_einops as ref
from tests.mistakes import Mistake


def _side_groups(side: str, fn) -> str:
    """Rewrite every parenthesised group of one side with `fn(list of tokens) -> list of tokens`."""
    return re.sub(r"\(([^()]*)\)", lambda m: "(" + " ".join(fn(m.group(1).split())) + ")", side)


def rearrange_column_major(tensor, pattern, **axes_lengths):
    # "(h w)" read with w as the slower axis (Fortran order), on both sides
    left, arrow, right = pattern.partition("->")
    flipped = _side_groups(left, lambda t: t[::-1]) + arrow + _side_groups(right, lambda t: t[::-1])
    return ref.rearrange(tensor, flipped, **axes_lengths)


def repeat_tiles(tensor, pattern, **axes_lengths):
    # new axes put first in their group: "(h 2)" behaves as "(2 h)", the block tiled instead of each
    # element repeated next to itself
    left, arrow, right = pattern.partition("->")
    known = set(left.replace("(", " ").replace(")", " ").split())
    moved = _side_groups(right, lambda t: [a for a in t if a not in known] + [a for a in t if a in known])
    return ref.repeat(tensor, left + arrow + moved, **axes_lengths)


def reduce_mean_as_sum(tensor, pattern, reduction, **axes_lengths):
    return ref.reduce(tensor, pattern, "sum" if reduction == "mean" else reduction, **axes_lengths)


def reduce_max_as_mean(tensor, pattern, reduction, **axes_lengths):
    # "max" and "min" routed to the averaging branch
    if reduction not in ("max", "min"):
        return ref.reduce(tensor, pattern, reduction, **axes_lengths)
    return ref.reduce(tensor, pattern, "mean" if tensor.is_floating_point() else reduction, **axes_lengths)


def rearrange_torch_errors_escape(tensor, pattern, **axes_lengths):
    # validation left to torch: a bad split or shape raises torch's RuntimeError, not EinopsError
    try:
        return ref.rearrange(tensor, pattern, **axes_lengths)
    except ref.EinopsError as error:
        raise RuntimeError(f"shape '{list(tensor.shape)}' is invalid: {error}") from None


def rearrange_message_without_shape(tensor, pattern, **axes_lengths):
    try:
        return ref.rearrange(tensor, pattern, **axes_lengths)
    except ref.EinopsError:
        raise ref.EinopsError(f'bad rearrange pattern "{pattern}"') from None


def _shapes_as_torch_sizes(error: Exception, shapes: list) -> Exception:
    """The error's message with each input shape as torch prints it, torch.Size([2, 3]), not as the tuple (2, 3):
    `str(tensor.shape)` where `str(tuple(tensor.shape))` is meant."""
    message = str(error)
    for shape in shapes:
        message = message.replace(str(tuple(shape)), str(torch.Size(shape)))
    return ref.EinopsError(message)


def rearrange_size_in_message(tensor, pattern, **axes_lengths):
    try:
        return ref.rearrange(tensor, pattern, **axes_lengths)
    except ref.EinopsError as error:
        raise _shapes_as_torch_sizes(error, [tensor.shape] if isinstance(tensor, torch.Tensor) else []) from None


def reduce_size_in_message(tensor, pattern, reduction, **axes_lengths):
    try:
        return ref.reduce(tensor, pattern, reduction, **axes_lengths)
    except ref.EinopsError as error:
        raise _shapes_as_torch_sizes(error, [tensor.shape] if isinstance(tensor, torch.Tensor) else []) from None


def repeat_size_in_message(tensor, pattern, **axes_lengths):
    try:
        return ref.repeat(tensor, pattern, **axes_lengths)
    except ref.EinopsError as error:
        raise _shapes_as_torch_sizes(error, [tensor.shape] if isinstance(tensor, torch.Tensor) else []) from None


def einsum_size_in_message(*tensors_and_pattern):
    try:
        return ref.einsum(*tensors_and_pattern)
    except ref.EinopsError as error:
        raise _shapes_as_torch_sizes(error, [t.shape for t in tensors_and_pattern[:-1]]) from None


def _uncached(function):
    def parse_every_call(tensor, pattern, *args, **axes_lengths):
        try:
            ref._parse.__wrapped__(pattern, function.__name__)  # parsed again on every call
        except ref.EinopsError:
            pass  # the cached call below reports it
        return function(tensor, pattern, *args, **axes_lengths)
    return parse_every_call


def rearrange_accepts_duplicates(tensor, pattern, **axes_lengths):
    # no duplicate check: "b b -> b" is read as a diagonal-free reshape and returns something
    left, arrow, right = pattern.partition("->")
    if len(set(left.split())) < len(left.split()):
        return tensor.reshape(-1)[: tensor.shape[0]]
    return ref.rearrange(tensor, pattern, **axes_lengths)


def repeat_missing_length_is_one(tensor, pattern, **axes_lengths):
    try:
        return ref.repeat(tensor, pattern, **axes_lengths)
    except ref.EinopsError as error:
        missing = re.search(r"new axes without a length: (.*)$", str(error))
        if not missing:
            raise
        return ref.repeat(tensor, pattern, **axes_lengths, **{a.strip(): 1 for a in missing.group(1).split(",")})


def _einsum_parts(pattern):
    inputs, _, output = pattern.partition("->")
    return [i.split() for i in inputs.split(",")], output.split()


def einsum_sums_shared_axes(*tensors_and_pattern):
    # the "repeated index is summed" rule of textbook notation: an axis in two inputs is summed even when
    # the output keeps it (and broadcast back to its length)
    *tensors, pattern = tensors_and_pattern
    if "->" not in pattern:
        return ref.einsum(*tensors, pattern)
    inputs, output = _einsum_parts(pattern)
    full = ref.einsum(*tensors, pattern)
    if "..." in output:
        return full
    for position, axis in enumerate(output):
        if sum(axis in axes for axes in inputs) > 1:
            full = full.sum(dim=position, keepdim=True).expand(full.shape)
    return full


def einsum_output_in_input_order(*tensors_and_pattern):
    # the output axes come out in the order they first appear in the inputs, whatever the pattern says
    *tensors, pattern = tensors_and_pattern
    right = ref.einsum(*tensors, pattern)  # what the pattern rejects, it rejects as the reference does
    inputs, output = _einsum_parts(pattern)
    seen = [a for axes in inputs for a in axes]
    ordered = sorted(output, key=lambda a: seen.index(a) if a in seen else len(seen))
    try:
        return ref.einsum(*tensors, pattern.partition("->")[0] + "-> " + " ".join(ordered))
    except ref.EinopsError:
        return right


def reduce_keeps_ellipsis(tensor, pattern, reduction, **axes_lengths):
    # the ellipsis' dimensions kept even when the right side has no "..."
    left, arrow, right = pattern.partition("->")
    if "..." in left and "..." not in right:
        right = " ... " + right
    return ref.reduce(tensor, left + arrow + right, reduction, **axes_lengths)


def rearrange_delegates(tensor, pattern, **axes_lengths):
    # the oracle itself behind the student's name (the audit)
    import einops

    try:
        return einops.rearrange(tensor, pattern, **axes_lengths)
    except einops.EinopsError as error:
        raise ref.EinopsError(f'rearrange pattern "{pattern}" on input shape {tuple(tensor.shape)}: {error}') from None


def _list_unsupported(function):
    def tensor_only(tensor, pattern, *args, **axes_lengths):
        tuple(tensor.shape)  # a list has no shape: AttributeError, as before lists were handled
        return function(tensor, pattern, *args, **axes_lengths)
    return tensor_only


def _list_concatenated(function):
    def concatenated(tensor, pattern, *args, **axes_lengths):
        if isinstance(tensor, list) and tensor:  # joined along their existing first axis: no new axis
            tensor = torch.cat([t if t.dim() else t.reshape(1) for t in tensor])
        return function(tensor, pattern, *args, **axes_lengths)
    return concatenated


def _m(id, description, **replaces):
    return Mistake("mini_einops", id, description, replaces)


MISTAKES = [
    _m("column_major_groups", "(h w) read and written with w as the slower axis (Fortran order)",
       rearrange=rearrange_column_major),
    _m("repeat_tiles", "repeat tiles the block ((2 h)) where (h 2) repeats each element next to itself",
       repeat=repeat_tiles),
    _m("mean_as_sum", "reduce 'mean' divides by nothing (a sum)", reduce=reduce_mean_as_sum),
    _m("max_as_mean", "reduce 'max' and 'min' averaged instead", reduce=reduce_max_as_mean),
    _m("ellipsis_never_reduced", "reduce keeps the ellipsis' dimensions when the right side has no '...'",
       reduce=reduce_keeps_ellipsis),
    _m("torch_errors_escape", "bad shapes left to torch: RuntimeError instead of EinopsError",
       rearrange=rearrange_torch_errors_escape),
    _m("message_without_shape", "the EinopsError names the pattern but not the input shape",
       rearrange=rearrange_message_without_shape),
    _m("shapes_as_torch_size", "the EinopsError shows each input shape as torch.Size([2, 3]), not as (2, 3)",
       rearrange=rearrange_size_in_message, reduce=reduce_size_in_message, repeat=repeat_size_in_message,
       einsum=einsum_size_in_message),
    _m("parse_every_call", "the pattern is parsed on every call (no cache)", rearrange=_uncached(ref.rearrange),
       reduce=_uncached(ref.reduce), repeat=_uncached(ref.repeat)),
    _m("duplicates_accepted", "no check for a name twice on one side", rearrange=rearrange_accepts_duplicates),
    _m("missing_length_is_one", "repeat gives a new axis without a length the length 1 instead of raising",
       repeat=repeat_missing_length_is_one),
    _m("einsum_sums_shared_axes", "einsum sums every axis shared by two inputs, even one the output keeps",
       einsum=einsum_sums_shared_axes),
    _m("delegates_to_einops", "rearrange calls einops.rearrange", rearrange=rearrange_delegates),
    _m("einsum_output_order", "einsum returns the output axes in input order, not the pattern's",
       einsum=einsum_output_in_input_order),
    _m("list_unsupported", "a list of tensors is not accepted: AttributeError (a list has no .shape)",
       rearrange=_list_unsupported(ref.rearrange), reduce=_list_unsupported(ref.reduce),
       repeat=_list_unsupported(ref.repeat)),
    _m("list_concatenated", "a list of tensors is concatenated (torch.cat) instead of stacked on a new axis",
       rearrange=_list_concatenated(ref.rearrange), reduce=_list_concatenated(ref.reduce),
       repeat=_list_concatenated(ref.repeat)),
]


# The behaviours each mistake may cost: those whose tests it failed under the held-out grading seed of
# tests/meta/test_mistakes.py, which checks it (the behaviours that wait for them may lose their points too).
# `python -m tests.meta.mutation --every-test --profile grade --grading-seed 11 --costs` prints what a run saw.
COSTS = {
    "column_major_groups": ("a list of tensors", "any pattern: raise or match like einops", "classic calls",
                            "error messages", "rearrange"),
    "repeat_tiles": ("a list of tensors", "any pattern: raise or match like einops", "classic calls",
                     "error messages", "repeat"),
    "mean_as_sum": ("a list of tensors", "any pattern: raise or match like einops", "classic calls",
                    "error messages", "reduce"),
    "max_as_mean": ("a list of tensors", "any pattern: raise or match like einops", "classic calls", "reduce"),
    "ellipsis_never_reduced": ("a list of tensors", "classic calls", "error messages", "reduce"),
    "torch_errors_escape": ("a list of tensors", "any pattern: raise or match like einops", "error messages",
                            "near misses raise like einops"),
    "message_without_shape": ("error messages",),
    "shapes_as_torch_size": ("error messages",),
    "parse_every_call": ("each pattern is parsed once",),
    "duplicates_accepted": ("a list of tensors", "any pattern: raise or match like einops", "error messages",
                            "near misses raise like einops"),
    "missing_length_is_one": ("a list of tensors", "any pattern: raise or match like einops", "error messages",
                              "near misses raise like einops"),
    "einsum_sums_shared_axes": ("any pattern: raise or match like einops", "classic calls", "einsum"),
    "delegates_to_einops": ("a list of tensors", "audit: does not use einops", "each pattern is parsed once",
                            "error messages"),
    "einsum_output_order": ("any pattern: raise or match like einops", "classic calls", "einsum"),
    "list_unsupported": ("a list of tensors", "error messages"),
    "list_concatenated": ("a list of tensors", "error messages"),
}
