"""Layouts in the style of shape trackers (tinygrad's `View`, ATen's `computeStride`): a frozen `View` dataclass
with one method per movement op returning a new View, `strides_for_shape` that writes 0 for every dimension of
size 1 (a "canonical" stride: a size-1 dimension never moves), `prod` and `itertools.accumulate` for the products,
dimensions normalised by one helper, and the view rule as runs of mergeable dimensions matched from the right.
Such code forgets that an empty dimension counts as 1 in the strides outside it, or reads a negative diagonal
offset as starting in the column: SLIPS.

Graded by tests/meta/test_honest.py."""

import itertools
import math
from dataclasses import dataclass, replace

COPY = "copy"

CASE = {"problem": "tensors", "score": 10}
SLIPS = {
    "empty_dims_zero_the_strides": ("(max(s, 1) for s in reversed(shape[1:]))", "reversed(shape[1:])",
                                    ("strides, offsets, contiguity", "the docstrings' examples",
                                     "differential: all functions")),
    "negative_diagonal_in_the_column": ("offset -= diag * strides[d1]", "offset -= diag * strides[d2]",
                                        ("view_result: single ops", "view_result: edge cases",
                                         "view_result: chains of ops",
                                         "view_result: writes land where the layout says",
                                         "differential: all functions")),
}


def prod(xs):
    return math.prod(xs)


def strides_for_shape(shape):
    """Row-major strides; a dimension of size 1 gets stride 0 (any stride addresses its one index)."""
    if not shape:
        return ()
    strides = tuple(itertools.accumulate((max(s, 1) for s in reversed(shape[1:])), lambda a, b: a * b, initial=1))
    return tuple(0 if size == 1 else stride for size, stride in zip(shape, reversed(strides), strict=True))


def _dim(d, ndim):
    return d + ndim if d < 0 else d


def _runs(shape, strides):
    """The dimensions of size other than 1, cut into runs that step through memory as one dimension: (elements,
    stride of the innermost dimension), from the innermost run out."""
    runs = []
    outer = None  # (size, stride) of the outermost dimension of the current run
    for size, stride in reversed([(n, s) for n, s in zip(shape, strides, strict=True) if n != 1]):
        if runs and outer is not None and stride == outer[0] * outer[1]:
            runs[-1] = (runs[-1][0] * size, runs[-1][1])
        else:
            runs.append((size, stride))
        outer = (size, stride)
    return runs


def _view_strides(shape, strides, new_shape):
    """The strides of `new_shape` over this layout, or None where it cannot be a view."""
    if prod(new_shape) != prod(shape):
        return None
    if prod(shape) == 0:
        return strides_for_shape(new_shape)
    new_strides = [0] * len(new_shape)
    i = len(new_shape) - 1
    for elements, stride in _runs(shape, strides):
        filled = 1
        while filled < elements:
            if i < 0:
                return None
            new_strides[i] = stride * filled
            filled *= new_shape[i]
            i -= 1
        if filled != elements:
            return None
    if any(new_shape[j] != 1 for j in range(i + 1)):
        return None
    return tuple(new_strides)


def _infer(shape, new_shape):
    new_shape = tuple(new_shape)
    if -1 not in new_shape:
        return new_shape
    known = prod(s for s in new_shape if s != -1)
    if known == 0 or prod(shape) % known:
        return None
    return tuple(prod(shape) // known if s == -1 else s for s in new_shape)


@dataclass(frozen=True)
class View:
    shape: tuple
    strides: tuple
    offset: int = 0
    copied: bool = False
    storage: int = 0  # elements of the storage it keeps alive

    @staticmethod
    def create(shape, strides=None, offset=0, storage=None):
        shape = tuple(shape)
        strides = strides_for_shape(shape) if strides is None else tuple(strides)
        return View(shape, strides, offset, False, prod(shape) if storage is None else storage)

    @property
    def ndim(self):
        return len(self.shape)

    def copy(self, shape=None):
        shape = self.shape if shape is None else tuple(shape)
        return View(shape, strides_for_shape(shape), 0, True, prod(shape))

    def contiguous_now(self):
        if prod(self.shape) == 0:
            return True
        expected = 1
        for size, stride in reversed(list(zip(self.shape, self.strides, strict=True))):
            if size != 1:
                if stride != expected:
                    return False
                expected *= size
        return True

    def _with(self, dim, size, stride, offset=None):
        shape, strides = list(self.shape), list(self.strides)
        shape[dim], strides[dim] = size, stride
        return replace(self, shape=tuple(shape), strides=tuple(strides),
                       offset=self.offset if offset is None else offset)

    def slice(self, dim, start, stop, step):
        dim = _dim(dim, self.ndim)
        start, stop, step = slice(start, stop, step).indices(self.shape[dim])
        size = len(range(start, stop, step))
        return self._with(dim, size, self.strides[dim] * step, self.offset + start * self.strides[dim])

    def select(self, dim, index):
        dim = _dim(dim, self.ndim)
        index = _dim(index, self.shape[dim])
        return View(self.shape[:dim] + self.shape[dim + 1:], self.strides[:dim] + self.strides[dim + 1:],
                    self.offset + index * self.strides[dim], self.copied, self.storage)

    def narrow(self, dim, start, length):
        dim = _dim(dim, self.ndim)
        start = _dim(start, self.shape[dim])
        return self.slice(dim, start, start + length, 1)

    def diagonal(self, diag=0, dim1=0, dim2=1):
        d1, d2 = _dim(dim1, self.ndim), _dim(dim2, self.ndim)
        strides, offset = self.strides, self.offset
        if diag >= 0:
            size = min(self.shape[d1], self.shape[d2] - diag)
            offset += diag * strides[d2]
        else:
            size = min(self.shape[d1] + diag, self.shape[d2])
            offset -= diag * strides[d1]
        keep = [d for d in range(self.ndim) if d not in (d1, d2)]
        return View(tuple(self.shape[d] for d in keep) + (max(size, 0),),
                    tuple(strides[d] for d in keep) + (strides[d1] + strides[d2],), offset, self.copied, self.storage)

    def unfold(self, dim, size, step):
        dim = _dim(dim, self.ndim) if self.ndim else 0
        if not self.ndim:
            return replace(self, shape=(size,), strides=(self.strides[0] if self.strides else 1,))
        stride = self.strides[dim]
        shape = list(self.shape)
        shape[dim] = (shape[dim] - size) // step + 1
        strides = list(self.strides)
        strides[dim] = stride * step
        return replace(self, shape=tuple(shape) + (size,), strides=tuple(strides) + (stride,))

    def permute(self, dims):
        dims = [_dim(d, self.ndim) for d in dims]
        return replace(self, shape=tuple(self.shape[d] for d in dims), strides=tuple(self.strides[d] for d in dims))

    def transpose(self, dim0, dim1):
        order = list(range(self.ndim))
        a, b = _dim(dim0, self.ndim), _dim(dim1, self.ndim)
        order[a], order[b] = order[b], order[a]
        return self.permute(order)

    def t(self):
        return self if self.ndim < 2 else self.transpose(0, 1)

    def unsqueeze(self, dim):
        dim = dim + self.ndim + 1 if dim < 0 else dim
        return replace(self, shape=self.shape[:dim] + (1,) + self.shape[dim:],
                       strides=self.strides[:dim] + (0,) + self.strides[dim:])

    def squeeze(self, dim=None):
        if dim is None:
            keep = [d for d in range(self.ndim) if self.shape[d] != 1]
        elif self.ndim == 0:
            return self
        else:
            dim = _dim(dim, self.ndim)
            keep = [d for d in range(self.ndim) if d != dim or self.shape[d] != 1]
        return replace(self, shape=tuple(self.shape[d] for d in keep), strides=tuple(self.strides[d] for d in keep))

    def expand(self, sizes):
        sizes = tuple(sizes)
        new = len(sizes) - self.ndim
        shape, strides = [], []
        for i, size in enumerate(sizes):
            if i < new:
                shape.append(size)
                strides.append(0)
                continue
            old, stride = self.shape[i - new], self.strides[i - new]
            if size == -1 or size == old:
                shape.append(old)
                strides.append(stride)
            else:  # a size-1 dimension grown
                shape.append(size)
                strides.append(0)
        return replace(self, shape=tuple(shape), strides=tuple(strides))

    def view(self, new_shape):
        shape = _infer(self.shape, new_shape)
        strides = None if shape is None else _view_strides(self.shape, self.strides, shape)
        if strides is None:
            raise ValueError(f"shape {self.shape}, strides {self.strides} cannot view as {tuple(new_shape)}")
        return replace(self, shape=shape, strides=strides)

    def reshape(self, new_shape):
        try:
            return self.view(new_shape)
        except ValueError:
            return self.copy(_infer(self.shape, new_shape))

    def flatten(self, start_dim=0, end_dim=-1):
        if self.ndim == 0:
            return self.reshape((1,))
        start, end = _dim(start_dim, self.ndim), _dim(end_dim, self.ndim)
        if start == end:
            return self
        return self.reshape(self.shape[:start] + (prod(self.shape[start:end + 1]),) + self.shape[end + 1:])

    def contiguous(self):
        return self if self.contiguous_now() else self.copy()

    def index(self, dim, indices):
        dim = _dim(dim, self.ndim)
        return self.copy(self.shape[:dim] + (len(indices),) + self.shape[dim + 1:])

    def apply(self, ops):
        view = self
        for name, *args in ops:
            view = getattr(view, name)(*args)
        return view


def contiguous_strides(shape):
    return strides_for_shape(tuple(shape))


def element_offset(index, strides, storage_offset):
    return storage_offset + sum(i * s for i, s in zip(index, strides, strict=True))


def is_contiguous(shape, strides):
    return View.create(shape, strides).contiguous_now()


def can_view(shape, strides, new_shape):
    shape = tuple(shape)
    inferred = _infer(shape, new_shape)
    return inferred is not None and _view_strides(shape, tuple(strides), inferred) is not None


def view_result(shape, strides, storage_offset, ops):
    view = View.create(shape, strides, storage_offset).apply(ops)
    return COPY if view.copied else (view.shape, view.strides, view.offset)


def nbytes(shape, dtype, ops):
    return prod(View.create(shape).apply(ops).shape) * dtype.itemsize


def storage_nbytes(shape, dtype, ops):
    return View.create(shape).apply(ops).storage * dtype.itemsize


__all__ = ["COPY", "contiguous_strides", "element_offset", "is_contiguous", "can_view", "view_result", "nbytes",
           "storage_nbytes"]
