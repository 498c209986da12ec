"""tensors: the dtypes the tests draw, and what of a layout addresses memory (how answers are compared)."""

import math

import torch

DTYPES = [torch.float32, torch.bfloat16, torch.int8, torch.float64, torch.complex128, torch.bool]


def addressing(answer):
    """What of a layout addresses memory: its shape, the strides of dimensions of more than one element
    (None elsewhere) and its offset; only the shape for a tensor with no elements. Anything that is not a
    layout (COPY, RAISES, a malformed answer) as it is."""
    if not (isinstance(answer, tuple) and len(answer) == 3 and isinstance(answer[0], tuple)
            and isinstance(answer[1], tuple) and len(answer[0]) == len(answer[1])):
        return answer
    shape, strides, offset = answer
    if math.prod(shape) == 0:
        return shape, None, None
    return shape, tuple(None if size == 1 else s for size, s in zip(shape, strides, strict=True)), offset


def used_strides(shape, strides):
    """The strides of a fresh tensor of `shape` that address memory: None for each dimension of size 1 (its one
    index is 0: any stride is right for it, as the conventions say); the empty dimensions' strides are kept (the
    docstring's rule: an empty dimension counts as 1). Anything that is not strides of that shape as it is."""
    if not (isinstance(strides, tuple) and len(strides) == len(shape)):
        return strides
    return tuple(None if size == 1 else s for size, s in zip(shape, strides, strict=True))
