"""Classic mistakes about how a tensor lives in memory, each written as the wrong function a student would write.

The op-level mistakes of `view_result` are the reference with one op done wrong (`_one_op_wrong`): every
other op, and the chain around it, is right, so each entry is caught for its own op.
"""

import math

from reference import tensors as ref
from tests.mistakes import Mistake

# -- contiguous_strides, element_offset ---------------------------------------------------------------------


def strides_zeroed_by_empty_dims(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


def strides_column_major(shape):
    strides, step = [], 1
    for size in shape:
        strides.append(step)
        step *= max(size, 1)
    return tuple(strides)


def strides_next_size_only(shape):
    return tuple(max(size, 1) for size in shape[1:]) + ((1,) if shape else ())


def offset_without_storage_offset(index, strides, storage_offset):
    return ref.element_offset(index, strides, 0)


def offset_strides_reversed(index, strides, storage_offset):
    return ref.element_offset(index, tuple(reversed(strides)), storage_offset)


# -- is_contiguous ----------------------------------------------------------------------------------------------


def contiguous_size_one_strides_matter(shape, strides):
    return math.prod(shape) == 0 or tuple(strides) == ref.contiguous_strides(shape)


def contiguous_empty_checked(shape, strides):
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides), strict=True):
        if size != 1:
            if stride != expected:
                return False
            expected *= size
    return True


def contiguous_if_strides_decrease(shape, strides):
    kept = [s for n, s in zip(shape, strides, strict=True) if n != 1]
    decreasing = all(a > b for a, b in zip(kept, kept[1:], strict=False))
    return math.prod(shape) == 0 or (decreasing and kept[-1:] in ([], [1]))


def contiguous_innermost_any(shape, strides):
    kept = [(n, s) for n, s in zip(shape, strides, strict=True) if n != 1]
    if math.prod(shape) == 0 or not kept:
        return True
    expected = kept[-1][1]
    for size, stride in reversed(kept):
        if stride != expected:
            return False
        expected *= size
    return True


# -- can_view ---------------------------------------------------------------------------------------------------


def view_only_if_contiguous(shape, strides, new_shape):
    return ref._infer_shape(new_shape, math.prod(shape)) is not None and ref.is_contiguous(shape, strides)


def view_whenever_sizes_match(shape, strides, new_shape):
    return ref._infer_shape(new_shape, math.prod(shape)) is not None


def _chunks_with_size_one(shape, strides):
    chunks = []
    for size, stride in zip(shape, strides, strict=True):
        if chunks and chunks[-1][1] == stride * size:
            chunks[-1] = (chunks[-1][0] * size, stride)
        else:
            chunks.append((size, stride))
    return chunks


def view_size_one_dims_break_runs(shape, strides, new_shape):
    original = ref._chunks
    ref._chunks = _chunks_with_size_one
    try:
        return ref.can_view(shape, strides, new_shape)
    finally:
        ref._chunks = original


def view_minus_one_not_inferred(shape, strides, new_shape):
    return math.prod(new_shape) == math.prod(shape) and ref.can_view(shape, strides, new_shape)


def view_empty_only_as_itself(shape, strides, new_shape):
    if math.prod(shape) == 0:  # no special case: the runs of an empty tensor regroup into nothing but themselves
        return ref._infer_shape(new_shape, 0) == tuple(shape)
    return ref.can_view(shape, strides, new_shape)


# -- view_result, one op wrong ---------------------------------------------------------------------------------


def _one_op_wrong(name, wrong):
    """`view_result` with op `name` done by `wrong(shape, strides, offset, *args)` -> (shape, strides, offset), or
    (layout, copied) where it decides copying itself."""

    def view_result(shape, strides, storage_offset, ops):
        layout, copied = (tuple(shape), tuple(strides), storage_offset), False
        for op in ops:
            if op[0] == name:
                result = wrong(list(layout[0]), list(layout[1]), layout[2], *op[1:])
                new, op_copied = result if len(result) == 2 else (result, False)
                layout = (tuple(new[0]), tuple(new[1]), new[2])
            else:
                layout, op_copied = ref._apply(layout, op)
            copied = copied or op_copied
        return ref.COPY if copied else layout

    return view_result


def _right(shape, strides, offset, *op):
    return ref._apply((tuple(shape), tuple(strides), offset), op)


def slice_offset_unmoved(shape, strides, offset, dim, start, stop, step):
    (s, st, _), _ = _right(shape, strides, offset, "slice", dim, start, stop, step)
    return s, st, offset


def slice_floor(shape, strides, offset, dim, start, stop, step):
    (s, st, o), _ = _right(shape, strides, offset, "slice", dim, start, stop, step)
    d = dim % len(shape)
    first, last, _ = slice(start, stop).indices(shape[d])
    s = list(s)
    s[d] = max(0, (last - first) // step)
    return s, st, o


def slice_stride_unstepped(shape, strides, offset, dim, start, stop, step):
    (s, st, o), _ = _right(shape, strides, offset, "slice", dim, start, stop, step)
    return s, strides, o


def slice_python_rules_ignored(shape, strides, offset, dim, start, stop, step):
    d = dim % len(shape)
    start = 0 if start is None else start
    stop = shape[d] if stop is None else stop  # negative bounds not counted from the end, nothing clamped
    shape[d] = max(0, -(-(stop - start) // step))
    offset += start * strides[d]
    strides[d] *= step
    return shape, strides, offset


def select_offset_unmoved(shape, strides, offset, dim, index):
    (s, st, _), _ = _right(shape, strides, offset, "select", dim, index)
    return s, st, offset


def narrow_negative_start_unwrapped(shape, strides, offset, dim, start, length):
    d = dim % len(shape)
    shape[d] = length
    return shape, strides, offset + start * strides[d]


def diagonal_negative_offset_along_dim2(shape, strides, offset, k, dim1, dim2):
    (s, st, _), _ = _right(shape, strides, offset, "diagonal", k, dim1, dim2)
    return s, st, offset + abs(k) * strides[dim2 % len(shape)] if s[-1] else offset


def diagonal_stride_of_dim1(shape, strides, offset, k, dim1, dim2):
    (s, st, o), _ = _right(shape, strides, offset, "diagonal", k, dim1, dim2)
    return s, st[:-1] + (strides[dim1 % len(shape)],), o


def unfold_window_stride_stepped(shape, strides, offset, dim, size, step):
    (s, st, o), _ = _right(shape, strides, offset, "unfold", dim, size, step)
    return s, st[:-1] + (strides[dim % len(shape)] * step,), o


def transpose_sizes_only(shape, strides, offset, dim0, dim1):
    (s, _, o), _ = _right(shape, strides, offset, "transpose", dim0, dim1)
    return s, strides, o


def permute_inverse(shape, strides, offset, dims):
    dims = [d % len(shape) for d in dims]
    inverse = [dims.index(i) for i in range(len(dims))]
    return [shape[d] for d in inverse], [strides[d] for d in inverse], offset


def unsqueeze_negative_before(shape, strides, offset, dim):
    d = dim % len(shape) if shape and dim < 0 else dim  # -1 wrapped with ndim, not ndim + 1
    shape.insert(d, 1)
    strides.insert(d, 1)
    return shape, strides, offset


def squeeze_any_size(shape, strides, offset, *dim):
    if not dim:
        return _right(shape, strides, offset, "squeeze")
    d = dim[0] % len(shape)
    return shape[:d] + shape[d + 1:], strides[:d] + strides[d + 1:], offset


def expand_keeps_strides(shape, strides, offset, sizes):
    (s, st, o), _ = _right(shape, strides, offset, "expand", sizes)
    lead = len(sizes) - len(shape)
    return s, [0] * lead + list(strides), o


def view_as_if_contiguous(shape, strides, offset, new_shape):
    target = ref._infer_shape(new_shape, math.prod(shape))
    return target, ref.contiguous_strides(target), offset


def view_copies_instead(shape, strides, offset, new_shape):
    return _right(shape, strides, offset, "reshape", new_shape)


def reshape_always_copies(shape, strides, offset, new_shape):
    target = ref._infer_shape(new_shape, math.prod(shape))
    return (target, ref.contiguous_strides(target), 0), True


def reshape_never_copies(shape, strides, offset, new_shape):
    return view_as_if_contiguous(shape, strides, offset, new_shape)


def flatten_copies_unless_contiguous(shape, strides, offset, start, end):
    if shape and not ref.is_contiguous(shape, strides):
        (s, _, _), _ = _right(shape, strides, offset, "flatten", start, end)
        return (s, ref.contiguous_strides(s), 0), True
    return _right(shape, strides, offset, "flatten", start, end)


def contiguous_always_copies(shape, strides, offset):
    return (shape, ref.contiguous_strides(shape), 0), True


def contiguous_never_copies(shape, strides, offset):
    return shape, strides, offset


def index_consecutive_is_a_view(shape, strides, offset, dim, indices):
    if indices and list(indices) == list(range(indices[0], indices[0] + len(indices))):
        return _right(shape, strides, offset, "narrow", dim, indices[0], len(indices))
    return _right(shape, strides, offset, "index", dim, indices)


def view_result_asks_torch(shape, strides, storage_offset, ops):
    """Builds the tensor and asks torch: right, and exactly what the audit forbids."""
    from tests.strategies.tensors import layout_tensor, torch_op

    x = y = layout_tensor((tuple(shape), tuple(strides), storage_offset))
    try:
        for op in ops:
            y = torch_op(y, op)
    except RuntimeError as exc:
        raise ValueError(str(exc)) from None
    if y.untyped_storage().data_ptr() != x.untyped_storage().data_ptr():
        return ref.COPY
    return tuple(y.shape), y.stride(), y.storage_offset()


# -- nbytes, storage_nbytes -------------------------------------------------------------------------------------


def nbytes_is_storage(shape, dtype, ops):
    return ref.storage_nbytes(shape, dtype, ops)


def nbytes_expanded_once(shape, dtype, ops):
    (result_shape, result_strides, _), _ = ref._run(ref._fresh(shape), ops)
    addressed = [n for n, s in zip(result_shape, result_strides, strict=True) if s != 0 or n == 0]
    return math.prod(addressed) * dtype.itemsize


def nbytes_ops_ignored(shape, dtype, ops):
    return math.prod(shape) * dtype.itemsize


def storage_is_the_view(shape, dtype, ops):
    return ref.nbytes(shape, dtype, ops)


def storage_never_replaced(shape, dtype, ops):
    return math.prod(shape) * dtype.itemsize


def storage_in_elements(shape, dtype, ops):
    return ref.storage_nbytes(shape, dtype, ops) // dtype.itemsize


def storage_of_the_reachable_span(shape, dtype, ops):
    """The bytes the view can reach (from its offset to its last element), not the storage it keeps alive."""
    (result_shape, strides, _), _ = ref._run(ref._fresh(shape), ops)
    if math.prod(result_shape) == 0:
        return 0
    span = 1 + sum((n - 1) * s for n, s in zip(result_shape, strides, strict=True))
    return span * dtype.itemsize


def _m(id, description, **replaces):
    return Mistake("tensors", id, description, replaces)


MISTAKES = [
    _m("strides_zeroed_by_empty_dims", "contiguous strides multiply by a size of 0 (torch counts it as 1)",
       contiguous_strides=strides_zeroed_by_empty_dims),
    _m("strides_column_major", "contiguous strides in column-major (Fortran) order",
       contiguous_strides=strides_column_major),
    _m("strides_next_size_only", "each stride is the next dimension's size, not the product of all after it",
       contiguous_strides=strides_next_size_only),
    _m("offset_without_storage_offset", "element_offset forgets the storage offset",
       element_offset=offset_without_storage_offset),
    _m("offset_strides_reversed", "element_offset pairs the index with the strides in reverse order",
       element_offset=offset_strides_reversed),
    _m("contiguous_size_one_strides_matter", "is_contiguous demands torch's contiguous strides on size-1 dims too",
       is_contiguous=contiguous_size_one_strides_matter),
    _m("contiguous_empty_checked", "an empty tensor judged by its strides (torch: always contiguous)",
       is_contiguous=contiguous_empty_checked),
    _m("contiguous_if_strides_decrease", "contiguous when the strides decrease to 1 (gaps between rows missed)",
       is_contiguous=contiguous_if_strides_decrease),
    _m("contiguous_innermost_any", "the innermost stride need not be 1 (every other element counts as contiguous)",
       is_contiguous=contiguous_innermost_any),
    _m("view_only_if_contiguous", "view allowed only on contiguous tensors (a slice of rows can view too)",
       can_view=view_only_if_contiguous),
    _m("view_whenever_sizes_match", "view allowed whenever the numbers of elements match (strides ignored)",
       can_view=view_whenever_sizes_match),
    _m("view_size_one_dims_break_runs", "size-1 dimensions' strides break runs (they address nothing)",
       can_view=view_size_one_dims_break_runs),
    _m("view_minus_one_not_inferred", "a -1 in the new shape taken as a size", can_view=view_minus_one_not_inferred),
    _m("view_empty_only_as_itself", "an empty tensor views only as its own shape (torch: any shape with no "
       "elements)", can_view=view_empty_only_as_itself),
    _m("slice_offset_unmoved", "slicing does not move the offset to start",
       view_result=_one_op_wrong("slice", slice_offset_unmoved)),
    _m("slice_floor", "a slice's size rounded down ((stop - start) // step)",
       view_result=_one_op_wrong("slice", slice_floor)),
    _m("slice_stride_unstepped", "a slice with a step keeps the stride", view_result=_one_op_wrong(
        "slice", slice_stride_unstepped)),
    _m("slice_python_rules_ignored", "negative and out-of-range slice bounds used as they are",
       view_result=_one_op_wrong("slice", slice_python_rules_ignored)),
    _m("select_offset_unmoved", "select drops the dimension but does not move the offset",
       view_result=_one_op_wrong("select", select_offset_unmoved)),
    _m("narrow_negative_start", "narrow's negative start not counted from the end",
       view_result=_one_op_wrong("narrow", narrow_negative_start_unwrapped)),
    _m("diagonal_negative_offset", "a diagonal below the main one started along dim2 instead of dim1",
       view_result=_one_op_wrong("diagonal", diagonal_negative_offset_along_dim2)),
    _m("diagonal_stride_of_dim1", "the diagonal steps along dim1 only (stride dim1, not dim1 + dim2)",
       view_result=_one_op_wrong("diagonal", diagonal_stride_of_dim1)),
    _m("unfold_window_stride_stepped", "unfold's window dimension given the windows' stride (stride * step)",
       view_result=_one_op_wrong("unfold", unfold_window_stride_stepped)),
    _m("transpose_sizes_only", "transpose swaps the sizes but not the strides",
       view_result=_one_op_wrong("transpose", transpose_sizes_only)),
    _m("permute_inverse", "permute applies the inverse permutation",
       view_result=_one_op_wrong("permute", permute_inverse)),
    _m("unsqueeze_negative_before", "unsqueeze(-1) wraps with ndim (inserted before the last dimension)",
       view_result=_one_op_wrong("unsqueeze", unsqueeze_negative_before)),
    _m("squeeze_any_size", "squeeze(dim) removes the dimension whatever its size",
       view_result=_one_op_wrong("squeeze", squeeze_any_size)),
    _m("expand_keeps_strides", "expanded dimensions keep their stride instead of 0",
       view_result=_one_op_wrong("expand", expand_keeps_strides)),
    _m("view_as_if_contiguous", "view gives the new shape contiguous strides whatever the old ones",
       view_result=_one_op_wrong("view", view_as_if_contiguous)),
    _m("view_copies_instead", "an impossible view copies (as reshape does) instead of raising",
       view_result=_one_op_wrong("view", view_copies_instead)),
    _m("reshape_always_copies", "reshape always copies", view_result=_one_op_wrong("reshape", reshape_always_copies)),
    _m("reshape_never_copies", "reshape never copies (contiguous strides whatever the input)",
       view_result=_one_op_wrong("reshape", reshape_never_copies)),
    _m("flatten_copies_unless_contiguous", "flatten copies every non-contiguous tensor (it views where it can)",
       view_result=_one_op_wrong("flatten", flatten_copies_unless_contiguous)),
    _m("contiguous_always_copies", "contiguous() copies even a contiguous tensor",
       view_result=_one_op_wrong("contiguous", contiguous_always_copies)),
    _m("contiguous_never_copies", "contiguous() never copies", view_result=_one_op_wrong(
        "contiguous", contiguous_never_copies)),
    _m("index_consecutive_is_a_view", "advanced indexing with consecutive indices taken for a slice (a view)",
       view_result=_one_op_wrong("index", index_consecutive_is_a_view)),
    _m("asks_torch", "builds the tensor with as_strided and asks torch (the oracle)",
       view_result=view_result_asks_torch),
    _m("nbytes_is_storage", "the tensor's bytes taken for its storage's", nbytes=nbytes_is_storage),
    _m("nbytes_expanded_once", "an expanded dimension's elements counted once", nbytes=nbytes_expanded_once),
    _m("nbytes_ops_ignored", "the original tensor's bytes, whatever the ops", nbytes=nbytes_ops_ignored),
    _m("storage_is_the_view", "a view keeps only its own bytes alive (the big storage forgotten)",
       storage_nbytes=storage_is_the_view),
    _m("storage_never_replaced", "a copy still counted as keeping the original storage",
       storage_nbytes=storage_never_replaced),
    _m("storage_in_elements", "storage counted in elements, not bytes", storage_nbytes=storage_in_elements),
    _m("storage_reachable_span", "the storage a view can reach taken for the storage it keeps alive",
       storage_nbytes=storage_of_the_reachable_span),
]


# The behaviours each mistake may cost: those whose tests it failed under the held-out grading seed of
# tests/meta/test_mistakes.py, which checks it (the behaviours that wait for them may lose their points too).
# `python -m tests.meta.mutation --every-test --profile grade --grading-seed 11 --costs` prints what a run saw.
COSTS = {
    "strides_zeroed_by_empty_dims": ("strides, offsets, contiguity", "the docstrings' examples"),
    "strides_column_major": ("strides, offsets, contiguity", "the docstrings' examples"),
    "strides_next_size_only": ("strides, offsets, contiguity", "the docstrings' examples"),
    "offset_without_storage_offset": ("audit: layouts without tensors", "strides, offsets, contiguity",
                                      "the docstrings' examples", "view_result: writes land where the layout says"),
    "offset_strides_reversed": ("strides, offsets, contiguity", "the docstrings' examples",
                                "view_result: writes land where the layout says"),
    "contiguous_size_one_strides_matter": ("strides, offsets, contiguity", "the docstrings' examples"),
    "contiguous_empty_checked": ("strides, offsets, contiguity",),
    "contiguous_if_strides_decrease": ("strides, offsets, contiguity", "the docstrings' examples"),
    "contiguous_innermost_any": ("strides, offsets, contiguity",),
    "view_only_if_contiguous": ("can_view", "the docstrings' examples"),
    "view_whenever_sizes_match": ("can_view", "the docstrings' examples"),
    "view_size_one_dims_break_runs": ("the docstrings' examples",),
    "view_minus_one_not_inferred": ("can_view",),
    "view_empty_only_as_itself": ("can_view", "the docstrings' examples"),
    "slice_offset_unmoved": ("the docstrings' examples", "view_result: chains of ops", "view_result: edge cases",
                             "view_result: single ops"),
    "slice_floor": ("the docstrings' examples", "view_result: edge cases", "view_result: single ops",
                    "view_result: writes land where the layout says"),
    "slice_stride_unstepped": ("the docstrings' examples", "view_result: edge cases", "view_result: single ops"),
    "slice_python_rules_ignored": ("view_result: chains of ops", "view_result: edge cases",
                                   "view_result: single ops", "view_result: writes land where the layout says"),
    "select_offset_unmoved": ("view_result: chains of ops", "view_result: edge cases", "view_result: single ops",
                              "view_result: writes land where the layout says"),
    "narrow_negative_start": ("view_result: chains of ops", "view_result: edge cases", "view_result: single ops",
                              "view_result: writes land where the layout says"),
    "diagonal_negative_offset": ("view_result: chains of ops", "view_result: edge cases", "view_result: single ops",
                                 "view_result: writes land where the layout says"),
    "diagonal_stride_of_dim1": ("view_result: chains of ops", "view_result: edge cases", "view_result: single ops",
                                "view_result: writes land where the layout says"),
    "unfold_window_stride_stepped": ("view_result: chains of ops", "view_result: edge cases",
                                     "view_result: single ops"),
    "transpose_sizes_only": ("view_result: chains of ops", "view_result: edge cases", "view_result: single ops",
                             "view_result: writes land where the layout says"),
    "permute_inverse": ("view_result: edge cases", "view_result: single ops"),
    "unsqueeze_negative_before": ("view_result: chains of ops", "view_result: edge cases", "view_result: single ops",
                                  "view_result: writes land where the layout says"),
    "squeeze_any_size": ("view_result: chains of ops", "view_result: edge cases", "view_result: single ops",
                         "view_result: writes land where the layout says"),
    "expand_keeps_strides": ("the docstrings' examples", "view_result: chains of ops", "view_result: edge cases",
                             "view_result: single ops", "view_result: writes land where the layout says"),
    "view_as_if_contiguous": ("the docstrings' examples", "view_result: edge cases", "view_result: single ops",
                              "view_result: writes land where the layout says"),
    "view_copies_instead": ("the docstrings' examples", "view_result: edge cases", "view_result: single ops"),
    "reshape_always_copies": ("view_result: chains of ops", "view_result: edge cases", "view_result: single ops",
                              "view_result: writes land where the layout says"),
    "reshape_never_copies": ("the docstrings' examples", "view_result: chains of ops", "view_result: edge cases",
                             "view_result: single ops", "view_result: writes land where the layout says"),
    "flatten_copies_unless_contiguous": ("view_result: chains of ops", "view_result: single ops",
                                         "view_result: writes land where the layout says"),
    "contiguous_always_copies": ("view_result: chains of ops", "view_result: edge cases", "view_result: single ops",
                                 "view_result: writes land where the layout says"),
    "contiguous_never_copies": ("view_result: chains of ops", "view_result: edge cases", "view_result: single ops",
                                "view_result: writes land where the layout says"),
    "index_consecutive_is_a_view": ("view_result: chains of ops", "view_result: single ops",
                                    "view_result: writes land where the layout says"),
    "asks_torch": ("audit: layouts without tensors",),
    "nbytes_is_storage": ("nbytes and storage_nbytes", "the docstrings' examples"),
    "nbytes_expanded_once": ("nbytes and storage_nbytes", "the docstrings' examples"),
    "nbytes_ops_ignored": ("nbytes and storage_nbytes", "the docstrings' examples"),
    "storage_is_the_view": ("nbytes and storage_nbytes", "the docstrings' examples"),
    "storage_never_replaced": ("the docstrings' examples",),
    "storage_in_elements": ("audit: layouts without tensors", "nbytes and storage_nbytes", "the docstrings' examples"),
    "storage_reachable_span": ("nbytes and storage_nbytes", "the docstrings' examples"),
}
