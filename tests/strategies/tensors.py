"""Strategies of problem tensors (tests/test_tensors.py): layouts and chains of ops as data."""

import math

from hypothesis import reject
from hypothesis import strategies as st

from tests.strategies import distinct_sizes

# A layout is (shape, strides, storage_offset): a tuple of sizes, a tuple of strides (in elements), an int.
# An op is a tuple (name, *args), read as the tensor method call `t.name(*args)`, except two:
# ("slice", dim, start, stop, step) is `t[:, ..., start:stop:step]` on `dim`, and ("index", dim, indices) is
# advanced indexing, `t.index_select(dim, torch.tensor(indices))`. `torch_op` is that reading.

TENSOR_OP_FAMILIES = {
    "indexing": ("slice", "narrow", "select", "diagonal", "unfold"),
    "dimensions": ("transpose", "t", "permute", "unsqueeze", "squeeze", "expand"),
    "shape": ("view", "reshape", "flatten", "contiguous", "index"),
}
TENSOR_OPS = tuple(name for names in TENSOR_OP_FAMILIES.values() for name in names)


def torch_op(t, op: tuple):
    """Apply one op (as data) to the tensor `t` with torch: the oracle's reading of the op format."""
    import torch

    name, *args = op
    if name == "slice":
        dim, start, stop, step = args
        return t[(slice(None),) * (dim % t.dim()) + (slice(start, stop, step),)]
    if name == "index":
        return t.index_select(args[0], torch.tensor(args[1], dtype=torch.long))
    return getattr(t, name)(*args)


def storage_elements(layout: tuple) -> int:
    """Elements a storage needs for `layout` to fit in it (at least one, so that it has an address)."""
    shape, strides, offset = layout
    if 0 in shape:
        return offset + 1
    return offset + 1 + sum((size - 1) * stride for size, stride in zip(shape, strides, strict=True))


def layout_tensor(layout: tuple, dtype=None):
    """A tensor with `layout` over a fresh storage whose element i holds the number i (the base's storage
    is `t.untyped_storage()`): the value of each element says where in the storage it lives."""
    import torch

    base = torch.arange(storage_elements(layout), dtype=dtype or torch.int64)
    return base.as_strided(*layout)


@st.composite
def tensor_layouts(draw, max_dims: int = 4, min_numel: int = 0) -> tuple:
    """A layout: 0-4 dimensions of distinct sizes (now and then 1, or 0 unless `min_numel`), strides that
    are contiguous, made of runs with gaps between them (a slice of a bigger tensor), runs in permuted
    order (a transpose of one), or anything (overlaps and zeros included); size-1 dimensions often with
    a stride that matches nothing; a storage offset."""
    ndim = draw(st.integers(0, max_dims))
    shape = draw(distinct_sizes(ndim, 2, 6))
    for i in range(ndim):
        roll = draw(st.integers(0, 11))
        shape[i] = 1 if roll < 2 else 0 if roll == 2 and not min_numel and draw(st.booleans()) else shape[i]
    kind = draw(st.sampled_from(["contiguous", "runs", "runs", "permuted", "any"]))
    strides = [0] * ndim
    if kind == "any":
        strides = draw(st.lists(st.integers(0, 40), min_size=ndim, max_size=ndim))
    else:
        step = 1 if kind == "contiguous" else draw(st.sampled_from([1, 1, 2, 3]))
        for d in reversed(range(ndim)):
            strides[d] = step
            gap = 0 if kind == "contiguous" else draw(st.sampled_from([0, 0, 1, 2]))
            step *= max(shape[d], 1) + gap
        if kind == "permuted":
            order = draw(st.permutations(range(ndim)))
            shape, strides = [shape[d] for d in order], [strides[d] for d in order]
    for d in range(ndim):
        if shape[d] == 1 and draw(st.booleans()):
            strides[d] = draw(st.integers(0, 50))  # a size-1 dimension's stride addresses nothing
    return tuple(shape), tuple(strides), draw(st.integers(0, 7))


# The regions of is_contiguous's inputs, each a part of its test: layouts with an empty dimension; the others
# where some dimension of size > 1 has stride 1 (or none has size > 1), the docstring's examples among them; and
# where none has stride 1 (spaced evenly by more than 1, or anything).
CONTIGUITY_REGIONS = ("unit-stride", "no-unit-stride", "empty")


def contiguity_region(layout: tuple) -> str:
    """The region of CONTIGUITY_REGIONS that `layout` lies in."""
    shape, strides, _ = layout
    if 0 in shape:
        return "empty"
    moving = [stride for size, stride in zip(shape, strides, strict=True) if size > 1]
    return "unit-stride" if not moving or 1 in moving else "no-unit-stride"


@st.composite
def layouts_in(draw, region: str) -> tuple:
    """A layout of tensor_layouts in `region` (CONTIGUITY_REGIONS): for "empty", one of its dimensions set to 0."""
    if region != "empty":
        return draw(tensor_layouts(min_numel=1).filter(lambda layout: contiguity_region(layout) == region))
    shape, strides, offset = draw(tensor_layouts(min_numel=1).filter(lambda layout: layout[0]))
    d = draw(st.integers(0, len(shape) - 1))
    return (*shape[:d], 0, *shape[d + 1:]), strides, offset


def _factors(n: int) -> list[int]:
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


@st.composite
def view_shapes(draw, shape: tuple, infer: bool | None = None, wrong: bool = False) -> tuple:
    """A new shape for a tensor of `shape`: its dimensions split into prime factors and regrouped (in
    order, or now and then shuffled), size-1 dimensions inserted, one -1 now and then (`infer` None), always
    (True: a tensor with elements) or never (False), maybe a shape with the wrong number of elements (`wrong`)."""
    numel = math.prod(shape)
    if numel == 0:
        new = draw(st.lists(st.integers(0, 4), min_size=1, max_size=4))
        new[draw(st.integers(0, len(new) - 1))] = 0
        return tuple(new)
    factors = [f for size in shape for f in _factors(size)]
    if draw(st.integers(0, 3)) == 0:
        factors = draw(st.permutations(factors))
    for _ in range(draw(st.integers(0, 2))):
        factors.insert(draw(st.integers(0, len(factors))), 1)
    new: list[int] = []
    for f in factors:
        if new and draw(st.booleans()):
            new[-1] *= f
        else:
            new.append(f)
    if wrong and draw(st.integers(0, 7)) == 0:
        new.insert(draw(st.integers(0, len(new))), 2)
    if infer and not new:
        new = [1]
    if new and (infer or infer is None and draw(st.booleans())):
        new[draw(st.integers(0, len(new) - 1))] = -1
    return tuple(new)


def _negative(draw, negative: bool | None, half: bool = False) -> bool:
    """Whether to write a dimension from the end: now and then (`negative` None: a quarter of the time, or half
    with `half`), always (True), never (False)."""
    if negative is not None:
        return negative
    return draw(st.booleans()) if half else draw(st.integers(0, 3)) == 0


def _draw_dim(draw, ndim: int, sizes: tuple | None = None, negative: bool | None = None) -> int:
    """A dimension of an `ndim`-d tensor, as torch accepts it (negative ones too: `_negative`); among those whose
    size is in `sizes`, if given. Raises LookupError where there is none."""
    dims = [d for d in range(ndim) if sizes is None or sizes[d] > 0]
    if not dims:
        raise LookupError("no such dimension")
    d = draw(st.sampled_from(dims))
    return d - ndim if _negative(draw, negative) else d


def _draw_bounds(draw, size: int) -> tuple:
    """start and stop of a slice of a dimension of `size`: mostly start <= stop, each written as Python
    allows (None, negative, past the end), now and then reversed or out of range (an empty slice)."""
    start, stop = sorted(draw(st.lists(st.integers(0, size), min_size=2, max_size=2)))
    if draw(st.integers(0, 5)) == 0:
        start, stop = stop, start + draw(st.sampled_from([-size - 3, 0, size + 3]))

    def written(i, default):
        return draw(st.sampled_from([i, i - size if 0 < i < size else i, None if i == default else i]))

    return written(start, 0), written(stop, size)


def _draw_op(draw, shape: tuple, name: str, negative: bool | None = None) -> tuple:
    """One op called `name` that torch accepts on a tensor of `shape` (view may still fail on its
    strides), its dimension arguments written from the end now and then (`negative` None), always (True: for the
    ops that take one, DIM_OPS) or never (False). Raises LookupError where `name` does not apply to that shape."""
    ndim = len(shape)
    if ndim == 0 and name in ("slice", "narrow", "select", "diagonal", "unfold", "transpose", "permute", "index"):
        raise LookupError(name)
    if name == "slice":
        d = _draw_dim(draw, ndim, negative=negative)
        return ("slice", d, *_draw_bounds(draw, shape[d]), draw(st.integers(1, 3)))
    if name == "narrow":
        d = _draw_dim(draw, ndim, negative=negative)
        start = draw(st.integers(-shape[d], shape[d]))
        room = shape[d] - (start % shape[d] if start < 0 else start)
        return ("narrow", d, start, draw(st.integers(min(1, room) if draw(st.integers(0, 5)) else 0, room)))
    if name == "select":
        d = _draw_dim(draw, ndim, shape, negative)
        return ("select", d, draw(st.integers(-shape[d], shape[d] - 1)))
    if name == "diagonal":
        if ndim < 2:
            raise LookupError(name)
        d1, d2 = draw(st.permutations(range(ndim)))[:2]
        return ("diagonal", draw(st.integers(-2, 2)), d1 - ndim if _negative(draw, negative, half=True) else d1, d2)
    if name == "unfold":
        d = _draw_dim(draw, ndim, shape, negative)
        return ("unfold", d, draw(st.integers(1, shape[d])), draw(st.integers(1, 3)))
    if name == "transpose":
        return ("transpose", _draw_dim(draw, ndim, negative=negative), _draw_dim(draw, ndim, negative=negative))
    if name == "t":
        if ndim > 2:
            raise LookupError(name)
        return ("t",)
    if name == "permute":
        return ("permute", tuple(d - ndim if _negative(draw, negative) else d
                                 for d in draw(st.permutations(range(ndim)))))
    if name == "unsqueeze":
        low, high = {None: (-ndim - 1, ndim), True: (-ndim - 1, -1), False: (0, ndim)}[negative]
        return ("unsqueeze", draw(st.integers(low, high)))
    if name == "squeeze":
        if negative:
            return ("squeeze", _draw_dim(draw, ndim, negative=True))
        if ndim and draw(st.booleans()):
            return ("squeeze", _draw_dim(draw, ndim, negative=negative))
        return ("squeeze",)
    if name == "expand":
        sizes = [draw(st.sampled_from([1, -1, 2, 3, 4])) if s == 1 else draw(st.sampled_from([s, -1])) for s in shape]
        return ("expand", tuple(draw(st.lists(st.integers(1, 3), max_size=2)) + sizes))
    if name in ("view", "reshape"):
        return (name, draw(view_shapes(shape)))
    if name == "flatten":
        if ndim == 0:
            return ("flatten", 0, -1)
        start = draw(st.integers(0, ndim - 1))
        end = draw(st.integers(start, ndim - 1))
        return ("flatten", start, end - ndim if _negative(draw, negative, half=True) else end)
    if name == "contiguous":
        return (name,)
    if name == "index":
        d = _draw_dim(draw, ndim, negative=negative)
        least = 1 if draw(st.integers(0, 5)) else 0
        indices = draw(st.lists(st.integers(0, shape[d] - 1), min_size=least, max_size=3)) if shape[d] else []
        return ("index", d, tuple(indices))
    raise ValueError(f"unknown op {name!r}")


# The ops that take a dimension, which may be written from the end (-1: the last)
DIM_OPS = ("slice", "narrow", "select", "diagonal", "unfold", "transpose", "permute", "unsqueeze", "squeeze",
           "flatten", "index")


@st.composite
def single_op(draw, name: str | None) -> tuple:
    """(layout, [op]): a layout, and one op called `name` (TENSOR_OPS) that applies to it, its dimensions
    counted from the start; with `name` None, an op of DIM_OPS with its dimensions written from the end."""
    layout = draw(tensor_layouts())
    negative = name is None
    name = name or draw(st.sampled_from(DIM_OPS))
    if negative and not layout[0] and name != "unsqueeze":
        reject()  # a 0-d tensor: no dimension to count from the end but unsqueeze's
    try:
        return layout, [_draw_op(draw, layout[0], name, negative=negative)]
    except LookupError:
        reject()


@st.composite
def single_ops(draw, family: str) -> tuple:
    """(layout, ops): a layout, and one op of each kind in `family` (TENSOR_OP_FAMILIES) that applies to
    it, each to be applied alone."""
    layout = draw(tensor_layouts())
    ops = []
    for name in TENSOR_OP_FAMILIES[family]:
        try:
            ops.append(_draw_op(draw, layout[0], name))
        except LookupError:
            pass
    return layout, ops


@st.composite
def op_chains(draw, fresh: bool = False, must_succeed: bool = False, min_numel: int = 0,
              family: str | None = None) -> tuple:
    """(layout, ops): a layout (a fresh contiguous tensor's if `fresh`) and a chain of 1-5 ops, each valid
    for the tensor the ones before it made, drawn from one family of TENSOR_OP_FAMILIES (any op where
    `family` is None). A view that torch refuses ends the chain (it is left out with `must_succeed`)."""
    names = TENSOR_OP_FAMILIES[family] if family else TENSOR_OPS
    layout = draw(tensor_layouts(min_numel=min_numel))
    if fresh:
        shape = layout[0]
        layout = (shape, tuple(torch_contiguous_strides(shape)), 0)
    t = layout_tensor(layout)
    ops = []
    for _ in range(draw(st.integers(1, 5))):
        try:
            op = _draw_op(draw, tuple(t.shape), draw(st.sampled_from(names)))
        except LookupError:
            op = ("contiguous",)  # applies to any tensor
        try:
            t = torch_op(t, op)
        except RuntimeError:  # view refused: the chain ends here
            if not must_succeed:
                ops.append(op)
            break
        ops.append(op)
    return layout, ops


def torch_contiguous_strides(shape: tuple) -> tuple:
    import torch

    return torch.empty(shape, device="meta").stride()
