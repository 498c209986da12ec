"""Problem (tensors): how a tensor lives in memory. See handout.md, "Problem (tensors)".

A tensor is a view onto a storage: a flat run of elements, plus a *layout* that says which of them the
tensor shows and in what order. The layout is three plain values, and every function here works on them
alone, without creating a tensor:

- `shape`: a tuple of sizes, one per dimension (`()` is a scalar, one element);
- `strides`: a tuple of ints, one per dimension: how many storage elements (not bytes) one step along
  that dimension moves;
- `storage_offset`: the storage position of element `[0, 0, ..., 0]`.

Element `[i0, i1, ...]` lives at storage position `storage_offset + i0*strides[0] + i1*strides[1] + ...`.
A *view* (slicing, `transpose`, `view`, `expand`, ...) only makes a new layout over the same storage; a
*copy* allocates a new storage.

Conventions (this course uses these):
- Strides and offsets count elements, as `Tensor.stride()` and `Tensor.storage_offset()` do; bytes are
  elements times `dtype.itemsize`.
- Only what addresses memory is compared: the stride of a dimension of size 1 is never used (its only
  index is 0), so any value is right for it; a tensor with no elements addresses nothing, so only its
  shape matters.
- An op is a tuple `(name, *args)`, read as the tensor method call `t.name(*args)`, except "slice" and
  "index" (see `view_result`). Dimensions may be negative, counted from the end, as torch allows.
"""

from collections.abc import Sequence

import torch

COPY = "copy"


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """The strides of a fresh (contiguous, row-major) tensor of `shape`, as `torch.empty(shape).stride()`.

    The last dimension has stride 1 and each dimension's stride is the next one's stride times the next
    one's size, where a size of 0 counts as 1 (torch's rule: an empty dimension does not zero the strides
    outside it). (2, 3, 4) -> (12, 4, 1); (2, 0, 3) -> (3, 3, 1); () -> ()."""
    raise NotImplementedError("contiguous_strides")


def element_offset(index: Sequence[int], strides: Sequence[int], storage_offset: int) -> int:
    """The storage position of the element at `index` (one non-negative int per dimension, within the
    shape) of a tensor with these `strides` and `storage_offset`.

    A (3, 4) tensor with strides (1, 3) (the transpose of a contiguous (4, 3) one) and offset 2 keeps
    element [1, 2] at 2 + 1*1 + 2*3 = 9."""
    raise NotImplementedError("element_offset")


def is_contiguous(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether a tensor of this layout is contiguous, by torch's rule (`Tensor.is_contiguous()`): its
    elements, in row-major order, are consecutive storage elements.

    That is: walking the dimensions from the last to the first, each dimension of size other than 1 has
    stride equal to the product of the sizes of the dimensions after it. Dimensions of size 1 are
    skipped, whatever their stride; a tensor with no elements is contiguous. (2, 3) with strides (3, 1):
    True; its transpose (3, 2) with strides (1, 3): False; (2, 1, 3) with strides (3, 7, 1): True."""
    raise NotImplementedError("is_contiguous")


def can_view(shape: Sequence[int], strides: Sequence[int], new_shape: Sequence[int]) -> bool:
    """Whether `t.view(new_shape)` succeeds for a tensor `t` of this layout (torch raises otherwise).

    `new_shape` may hold one -1, a size inferred from the number of elements. The view fails where the
    numbers of elements differ or no size fits the -1 (for a tensor with no elements, -1 fits only if
    the other sizes' product is not 0). Otherwise, torch's rule (`computeStride`):
    - a tensor with no elements can take any shape with no elements;
    - else, leave out the dimensions of size 1 and cut the rest into runs of neighbours that step through
      memory as one dimension would: dimensions d and d+1 are in one run when
      `strides[d] == strides[d + 1] * shape[d + 1]`. The view succeeds when `new_shape`, read from the
      right, splits into consecutive groups of sizes whose products are the runs' numbers of elements,
      in order (size-1 dimensions of `new_shape` fit anywhere). A run can be split and regrouped at
      will; two runs can never be merged.

    A contiguous tensor is one run: it can take any shape with its number of elements, and so can (2, 1, 3)
    with strides (3, 7, 1). The transpose of a contiguous (2, 3) tensor, (3, 2) with strides (1, 3), is
    two runs of 3 and 2 elements: `view(6)` fails, `view(3, 2, 1)` succeeds. A (0, 3) tensor with strides
    (1, 5) can view (3, 0, 2)."""
    raise NotImplementedError("can_view")


def view_result(shape: Sequence[int], strides: Sequence[int], storage_offset: int,
                ops: Sequence[tuple]) -> tuple[tuple[int, ...], tuple[int, ...], int] | str:
    """The layout `(shape, strides, storage_offset)` of the tensor that the chain of `ops` makes from a
    tensor of the given layout, or `COPY` ("copy") when some op copies, so that the result no longer looks
    into the original storage.

    Each op is a tuple (torch's method of that name, applied with these arguments; `dim` may be negative):
    - ("slice", dim, start, stop, step): `t[:, ..., start:stop:step]` on `dim`; `start` and `stop` are
      ints or None, read as Python reads them (`slice(start, stop).indices(size)`: negative from the
      end, clamped to 0..size); `step` >= 1. Then the offset moves by `start * stride`, the size is
      `ceil((stop - start) / step)` (0 when stop <= start) and the stride is multiplied by `step`.
    - ("select", dim, index): `t.select(dim, index)` (`t[..., index]` on `dim`; negative from the end):
      the dimension is gone, the offset moves to that index.
    - ("narrow", dim, start, length): `t.narrow(dim, start, length)`, `t[..., start:start+length]` on
      `dim` (`start` may be negative, counted from the end).
    - ("diagonal", offset, dim1, dim2): `t.diagonal(offset, dim1, dim2)`: both dimensions are removed and
      one is appended, stepping along both at once (stride `strides[dim1] + strides[dim2]`); offset > 0
      starts at `[0, offset]` (above the main diagonal), offset < 0 at `[-offset, 0]`; its size is
      `min(shape[dim1], shape[dim2] - offset)` for offset >= 0, `min(shape[dim1] + offset, shape[dim2])`
      for offset < 0, and 0 if that is negative.
    - ("unfold", dim, size, step): `t.unfold(dim, size, step)`: windows of `size` elements, `step` apart,
      along `dim`: that dimension becomes the `(shape[dim] - size) // step + 1` windows (stride `* step`)
      and a new last dimension of `size` steps through a window (the old stride). Windows overlap when
      `step < size`: two indices, one storage element.
    - ("transpose", dim0, dim1): swap two dimensions' sizes and strides. ("t",): `transpose(0, 1)` of a
      2-d tensor; a 0-d or 1-d tensor is unchanged.
    - ("permute", dims): `t.permute(dims)`: dimension i of the result is dimension `dims[i]` of `t`.
    - ("unsqueeze", dim): a new dimension of size 1 at `dim` (in -ndim-1 .. ndim).
    - ("squeeze",): every dimension of size 1 removed; ("squeeze", dim): that dimension removed if its
      size is 1, else nothing changes.
    - ("expand", sizes): `t.expand(sizes)`: `sizes` has at least `t`'s dimensions; extra leading ones are
      new; -1 keeps a dimension's size; a dimension of size 1 may grow to any size. A grown or new
      dimension has stride 0: every index along it reads the same elements.
    - ("view", new_shape): the same elements in row-major order, in `new_shape` (one -1 allowed), without
      copying: the strides `can_view`'s rule gives (each new dimension's stride is the stride of the
      innermost dimension of its run times the sizes to its right within that run). Raise ValueError
      where `can_view` says no.
    - ("reshape", new_shape): a view where `can_view` says yes, else a copy.
    - ("flatten", start_dim, end_dim): dimensions `start_dim..end_dim` (inclusive) merged into one, as
      reshape does (a view where it can be one); a 0-d tensor becomes shape (1,).
    - ("contiguous",): the tensor itself (no copy) when `is_contiguous`, else a contiguous copy.
    - ("index", dim, indices): advanced indexing with a tuple of non-negative ints along `dim`
      (`t.index_select(dim, torch.tensor(indices))`, `t[..., [i, j]]`): always a copy, even when the
      indices are a contiguous range.

    A copy is a fresh contiguous tensor (offset 0, `contiguous_strides`) of the op's result shape; ops
    after it work on that copy, and the answer is then `COPY` whatever they are. Every op is valid for the
    tensor it meets (the tests generate only such chains), except that a view may be impossible.
    Strides of size-1 dimensions, and everything but the shape of a tensor with no elements, are not
    compared (see the module's conventions).

    A contiguous (4, 6) tensor, offset 0: [("slice", 1, 1, None, 2)] -> ((4, 3), (6, 2), 1);
    [("t",), ("view", (-1,))] raises ValueError; [("t",), ("reshape", (-1,))] -> "copy";
    [("unsqueeze", 0), ("expand", (5, 4, 6))] -> ((5, 4, 6), (0, 6, 1), 0)."""
    raise NotImplementedError("view_result")


def nbytes(shape: Sequence[int], dtype: torch.dtype, ops: Sequence[tuple]) -> int:
    """The tensor's own bytes (`Tensor.nbytes`: its number of elements times `dtype.itemsize`) after
    `ops` (as in `view_result`) applied to a fresh contiguous tensor of `shape` and `dtype`.

    This counts elements, not memory: an expanded view shows more bytes than its storage holds. A (1, 3)
    float32 tensor expanded to (4, 3) has 48 bytes, over a storage of 12."""
    raise NotImplementedError("nbytes")


def storage_nbytes(shape: Sequence[int], dtype: torch.dtype, ops: Sequence[tuple]) -> int:
    """The bytes of the storage that the result of `ops` (as in `view_result`) applied to a fresh
    contiguous tensor of `shape` and `dtype` keeps alive (`t.untyped_storage().nbytes()`).

    While every op is a view, that is the original tensor's whole storage, however small the view; after
    a copy, it is the last copy's storage (its number of elements times `dtype.itemsize`), which later
    views keep alive in turn. Row 0's first 10 elements of a (1024, 1024) float32 tensor are 40 bytes of
    tensor keeping 4_194_304 bytes of storage alive, and `contiguous()` does not change that (the row is
    already contiguous); 10 elements of column 0 made `contiguous()` are a copy of 40 bytes."""
    raise NotImplementedError("storage_nbytes")


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
