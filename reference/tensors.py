"""Problem (tensors): how a tensor lives in memory. Reference solution; the spec is in assignment/tensors.py.

No tensor is created here: a layout is three plain values (shape, strides, storage offset), and every op
is arithmetic on them. (No jaxtyping annotations: no tensor crosses this module's API.)
"""

import math
from collections.abc import Sequence

import torch

COPY = "copy"
Layout = tuple[tuple[int, ...], tuple[int, ...], int]


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)  # torch's rule: an empty dimension does not zero the strides outside it
    return tuple(reversed(strides))


def element_offset(index: Sequence[int], strides: Sequence[int], storage_offset: int) -> int:
    return storage_offset + sum(i * s for i, s in zip(index, strides, strict=True))


def is_contiguous(shape: Sequence[int], strides: Sequence[int]) -> bool:
    if math.prod(shape) == 0:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides), strict=True):
        if size == 1:
            continue  # a size-1 dimension is never stepped along: its stride addresses nothing
        if stride != expected:
            return False
        expected *= size
    return True


def _infer_shape(new_shape: Sequence[int], numel: int) -> tuple[int, ...] | None:
    """`new_shape` with its -1 (if any) filled in; None where no size fits."""
    known = math.prod(s for s in new_shape if s != -1)
    if -1 in new_shape:
        if known == 0 or numel % known:
            return None
        new_shape = [numel // known if s == -1 else s for s in new_shape]
    return tuple(new_shape) if math.prod(new_shape) == numel else None


def _chunks(shape: Sequence[int], strides: Sequence[int]) -> list[tuple[int, int]]:
    """The dimensions of more than one element, grouped into runs that step through memory as one:
    (elements, innermost stride) per run, outermost first. Dimensions d and d+1 are one run when
    stride[d] == stride[d+1] * size[d+1]."""
    chunks: list[tuple[int, int]] = []
    for size, stride in zip(shape, strides, strict=True):
        if size == 1:
            continue
        if chunks and chunks[-1][1] == stride * size:
            chunks[-1] = (chunks[-1][0] * size, stride)
        else:
            chunks.append((size, stride))
    return chunks


def _view_strides(shape: Sequence[int], strides: Sequence[int], new_shape: Sequence[int]) -> tuple[int, ...] | None:
    """The strides of `view(new_shape)` (new_shape already inferred), or None where view must fail."""
    if math.prod(shape) == 0:
        return contiguous_strides(new_shape)  # nothing to address: any strides do
    new_strides = list(contiguous_strides(new_shape))  # kept for leftover size-1 dimensions
    d = len(new_shape)
    for numel, stride in reversed(_chunks(shape, strides)):
        covered = 1
        while covered < numel:  # new dimensions from the right fill this run exactly, or view fails
            d -= 1
            new_strides[d] = stride * covered
            covered *= new_shape[d]
        if covered != numel:
            return None
    return tuple(new_strides)


def can_view(shape: Sequence[int], strides: Sequence[int], new_shape: Sequence[int]) -> bool:
    target = _infer_shape(new_shape, math.prod(shape))
    return target is not None and _view_strides(shape, strides, target) is not None


def _dim(dim: int, ndim: int) -> int:
    """torch's wrapping of a negative dimension (a 0-d tensor takes -1 and 0)."""
    return dim % max(ndim, 1)


def _diagonal(shape, strides, offset, k=0, dim1=0, dim2=1):
    d1, d2 = _dim(dim1, len(shape)), _dim(dim2, len(shape))
    if k >= 0:
        size, offset = max(min(shape[d1], shape[d2] - k), 0), offset + k * strides[d2]
    else:
        size, offset = max(min(shape[d1] + k, shape[d2]), 0), offset - k * strides[d1]
    keep = [d for d in range(len(shape)) if d not in (d1, d2)]
    return ([shape[d] for d in keep] + [size], [strides[d] for d in keep] + [strides[d1] + strides[d2]], offset)


def _expand(shape, strides, sizes):
    new_shape, new_strides = list(sizes), [0] * len(sizes)
    lead = len(sizes) - len(shape)
    for i, target in enumerate(sizes):
        if i < lead:
            new_strides[i] = 0  # a new leading dimension repeats everything
            continue
        size, stride = shape[i - lead], strides[i - lead]
        if target == -1 or target == size:
            new_shape[i], new_strides[i] = size, stride
        else:  # a size-1 dimension repeated: every index reads the same element
            new_strides[i] = 0
    return new_shape, new_strides


def _apply(layout: Layout, op: tuple) -> tuple[Layout, bool]:
    """One op: the layout of its result, and whether the op copied (then the layout is a fresh contiguous
    tensor's)."""
    shape, strides, offset = list(layout[0]), list(layout[1]), layout[2]
    name, *args = op
    numel = math.prod(shape)

    def copy(new_shape):
        new_shape = tuple(new_shape)
        return (new_shape, contiguous_strides(new_shape), 0), True

    if name == "slice":
        dim, start, stop, step = args
        d = _dim(dim, len(shape))
        start, stop, _ = slice(start, stop).indices(shape[d])
        offset += start * strides[d]
        shape[d], strides[d] = max(0, -(-(stop - start) // step)), strides[d] * step
    elif name == "select":
        d = _dim(args[0], len(shape))
        offset += (args[1] % shape[d]) * strides[d]
        del shape[d], strides[d]
    elif name == "narrow":
        d = _dim(args[0], len(shape))
        offset += (args[1] % shape[d] if args[1] < 0 else args[1]) * strides[d]
        shape[d] = args[2]
    elif name == "diagonal":
        shape, strides, offset = _diagonal(shape, strides, offset, *args)
    elif name == "unfold":  # windows of `size` elements, `step` apart: they overlap when step < size
        dim, size, step = args
        d = _dim(dim, len(shape))
        stride = strides[d]
        shape[d], strides[d] = (shape[d] - size) // step + 1, stride * step
        shape.append(size)
        strides.append(stride)
    elif name == "transpose":
        d0, d1 = (_dim(a, len(shape)) for a in args)
        shape[d0], shape[d1] = shape[d1], shape[d0]
        strides[d0], strides[d1] = strides[d1], strides[d0]
    elif name == "t":
        shape, strides = shape[::-1], strides[::-1]  # 2-D: the transpose; 0-d and 1-d: unchanged
    elif name == "permute":
        dims = [_dim(a, len(shape)) for a in args[0]]
        shape, strides = [shape[d] for d in dims], [strides[d] for d in dims]
    elif name == "unsqueeze":
        d = args[0] % (len(shape) + 1)
        shape.insert(d, 1)
        strides.insert(d, shape[d + 1] * strides[d] if d < len(strides) else 1)  # torch's choice; unused
    elif name == "squeeze":
        dims = {_dim(args[0], len(shape))} if args else set(range(len(shape)))
        keep = [d for d in range(len(shape)) if d not in dims or shape[d] != 1]
        shape, strides = [shape[d] for d in keep], [strides[d] for d in keep]
    elif name == "expand":
        shape, strides = _expand(shape, strides, args[0])
    elif name in ("view", "reshape"):
        target = _infer_shape(args[0], numel)
        new_strides = None if target is None else _view_strides(shape, strides, target)
        if new_strides is None:
            if name == "view" or target is None:
                raise ValueError(f"view{tuple(args[0])} of shape {tuple(shape)} with strides {tuple(strides)} "
                                 "is impossible")
            return copy(target)
        shape, strides = list(target), list(new_strides)
    elif name == "flatten":
        if not shape:
            shape, strides = [1], [1]
        else:
            start, end = _dim(args[0], len(shape)), _dim(args[1], len(shape))
            merged = shape[:start] + [math.prod(shape[start:end + 1])] + shape[end + 1:]
            return _apply((tuple(shape), tuple(strides), offset), ("reshape", merged))
    elif name == "contiguous":
        if not is_contiguous(shape, strides):
            return copy(shape)
    elif name == "index":
        d = _dim(args[0], len(shape))
        return copy(shape[:d] + [len(args[1])] + shape[d + 1:])
    else:
        raise ValueError(f"unknown op {op!r}")
    return (tuple(shape), tuple(strides), offset), False


def _run(layout: Layout, ops: Sequence[tuple]) -> tuple[Layout, int | None]:
    """The layout after `ops`, and the elements of the storage it looks into: the last copy's, or None
    while it still looks into the original storage."""
    storage = None
    for op in ops:
        layout, copied = _apply(layout, op)
        if copied:
            storage = math.prod(layout[0])
    return layout, storage


def view_result(shape: Sequence[int], strides: Sequence[int], storage_offset: int,
                ops: Sequence[tuple]) -> tuple[tuple[int, ...], tuple[int, ...], int] | str:
    layout, storage = _run((tuple(shape), tuple(strides), storage_offset), ops)
    return layout if storage is None else COPY


def _fresh(shape: Sequence[int]) -> Layout:
    return tuple(shape), contiguous_strides(shape), 0


def nbytes(shape: Sequence[int], dtype: torch.dtype, ops: Sequence[tuple]) -> int:
    (result_shape, _, _), _ = _run(_fresh(shape), ops)
    return math.prod(result_shape) * dtype.itemsize


def storage_nbytes(shape: Sequence[int], dtype: torch.dtype, ops: Sequence[tuple]) -> int:
    _, storage = _run(_fresh(shape), ops)
    return (math.prod(shape) if storage is None else storage) * dtype.itemsize


__all__ = [
    "COPY",
    "contiguous_strides",
    "element_offset",
    "is_contiguous",
    "can_view",
    "view_result",
    "nbytes",
    "storage_nbytes",
]
