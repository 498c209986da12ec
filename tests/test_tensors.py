"""Problem (tensors): how a tensor lives in memory.

Oracles: torch itself, on tensors built with `as_strided` over a storage whose element i holds the number
i: `Tensor.stride()`, `storage_offset()`, `is_contiguous()`, `data_ptr()`, whether `view` raises, whether
the result of a chain of ops still looks into the original storage (`untyped_storage().data_ptr()`),
where a write through that result lands in the original storage, `Tensor.nbytes` and
`untyped_storage().nbytes()` — on generated layouts (contiguous, sliced from a bigger tensor, permuted,
overlapping, with size-1 and empty dimensions) and generated chains of ops (tests/strategies/tensors.py). The
audit runs the code under test with every torch tensor op made unusable: layouts are computed, not asked.

Tolerances: everything here is an integer (a size, a stride, an offset, a number of bytes) or a bool,
compared exactly. A layout is compared on what addresses memory (`addressing`): the stride of a size-1
dimension is never used, and a tensor with no elements addresses nothing, so only its shape is compared.
"""

import functools

import pytest
import torch
from hypothesis import assume, example, given
from hypothesis import strategies as st

from grader.registry import SPLIT_OP_PARTS
from tests import audit, audit_run
from tests.checks import call_text, expect_equal, expect_int
from tests.common.tensors import DTYPES, addressing, used_strides
from tests.documented import cases, expect_documented_error
from tests.scenarios import tensors as scenarios
from tests.scenarios.tensors import RAISES
from tests.strategies import PINNED, every, pinned_or_drawn
from tests.strategies.tensors import (
    CONTIGUITY_REGIONS,
    TENSOR_OPS,
    layout_tensor,
    layouts_in,
    op_chains,
    single_op,
    storage_elements,
    tensor_layouts,
    torch_op,
    view_shapes,
)

pytestmark = pytest.mark.tensors

COPY = "copy"
SOURCE = "torch: shape, stride(), storage_offset() of the result (None: addresses nothing, not compared)"
HINTS = {
    "slice": "offset += start * stride, size ceil((stop - start) / step) after Python's clamping, stride *= step",
    "select": "offset += index * stride (negative index from the end), the dimension removed",
    "narrow": "offset += start * stride (negative start from the end), size = length",
    "diagonal": "stride dim1 + dim2, appended last; offset > 0 moves along dim2, offset < 0 along dim1",
    "unfold": "windows: size (n - size) // step + 1 at stride * step, then a new last dimension at the old stride",
    "transpose": "swap sizes and strides", "t": "0-d and 1-d tensors are unchanged",
    "permute": "result dimension i is input dimension dims[i]", "unsqueeze": "a size-1 dimension at dim",
    "squeeze": "only size-1 dimensions go; squeeze(dim) of a bigger one changes nothing",
    "expand": "grown and new dimensions get stride 0; -1 keeps the size",
    "view": "the strides of can_view's runs; ValueError where can_view is False",
    "reshape": "a view where can_view allows it, else a copy", "flatten": "reshape with the dims merged",
    "contiguous": "a copy only when not is_contiguous", "index": "advanced indexing always copies",
}


# -- oracles: torch on real tensors ----------------------------------------------------------------------

def layout_of(t: torch.Tensor) -> tuple:
    return tuple(t.shape), t.stride(), t.storage_offset()


def torch_chain(layout: tuple, ops: list):
    """torch's answer for `ops` applied to a tensor `x` of `layout`: the result's layout, COPY when it no
    longer looks into x's storage, or RAISES when a view fails; and x and the result (None if it raised)."""
    x = layout_tensor(layout)
    try:
        y = functools.reduce(torch_op, ops, x)
    except RuntimeError:
        return RAISES, x, None
    if y.untyped_storage().data_ptr() != x.untyped_storage().data_ptr():
        return COPY, x, y
    return layout_of(y), x, y


def torch_can_view(layout: tuple, new_shape: tuple) -> bool:
    try:
        layout_tensor(layout).view(new_shape)
    except RuntimeError:
        return False
    return True


def torch_bytes(shape: tuple, dtype: torch.dtype, ops: list) -> tuple[int, int]:
    """(Tensor.nbytes, untyped_storage().nbytes()) of `ops` applied to a fresh tensor of `shape`."""
    y = functools.reduce(torch_op, ops, torch.zeros(shape, dtype=dtype))
    return y.nbytes, y.untyped_storage().nbytes()


def outcome(fn, *args):
    """`fn(*args)`, or RAISES where it raises ValueError (anything else propagates: a failure)."""
    try:
        return fn(*args)
    except ValueError:
        return RAISES


def expect_view_result(impl, layout: tuple, ops: list, hint: str | None = None) -> None:
    expected, _, _ = torch_chain(layout, ops)
    got = outcome(impl.tensors.view_result, *layout, ops)
    if isinstance(expected, tuple):
        hint = hint or "a view: only the shape, strides and offset change"
    elif expected == COPY:
        hint = hint or "an op here must copy (contiguous on a non-contiguous tensor, reshape that cannot view, index)"
    else:
        hint = hint or "view cannot make this shape from these strides: raise ValueError"
    expect_equal(addressing(got), addressing(expected), what=call_text("view_result", *layout, ops), source=SOURCE,
                 hint=hint)


# -- layouts ---------------------------------------------------------------------------------------------

@given(shape=st.lists(st.integers(0, 6), max_size=5))
def test_contiguous_strides_match_torch(impl, shape):
    shape = tuple(shape)
    expect_equal(used_strides(shape, impl.tensors.contiguous_strides(shape)),
                 used_strides(shape, tuple(torch.empty(shape, device="meta").stride())),
                 what=call_text("contiguous_strides", shape) + " (None: a size-1 dimension's stride, not compared)",
                 source="torch.empty(shape).stride()",
                 hint="row-major: the last stride is 1, each other the next stride times max(next size, 1)")


@given(layout=tensor_layouts(min_numel=1), data=st.data())
def test_element_offset_matches_data_ptr(impl, layout, data):
    shape, strides, offset = layout
    index = tuple(data.draw(st.integers(0, size - 1)) for size in shape)
    x = layout_tensor(layout)
    expected = (x[index].data_ptr() - x.untyped_storage().data_ptr()) // x.element_size()
    # the storage holds its own positions: the two answers of torch agree
    assert x[index].item() == expected, "torch's two answers disagree: a test premise, not your code"
    expect_int(impl.tensors.element_offset(index, strides, offset), expected,
               what=call_text("element_offset", index, strides, offset),
               source="(x[index].data_ptr() - storage.data_ptr()) / element_size()",
               hint="storage_offset + sum of index * stride, in elements")


PINNED_LAYOUTS = {  # rare among generated layouts, pinned in their region's part
    "empty": [((3, 0, 2), (1, 7, 5), 0)],  # strides that fit nothing
    "no-unit-stride": [((2, 3), (6, 2), 0)],  # evenly spaced, innermost stride 2: not contiguous
    "unit-stride": [((2, 3), (4, 1), 0)],  # rows with a gap between them: strides fall to 1, still not contiguous
}


# One item per region of layouts (CONTIGUITY_REGIONS): a slip in one region costs that share, and the docstring's
# examples wait for the item of theirs alone (grader/registry.py).
@pytest.mark.parametrize("region", CONTIGUITY_REGIONS)
@given(case=st.data())
@example(case=PINNED)
def test_is_contiguous_matches_torch(impl, region, case):
    for layout in pinned_or_drawn(case, PINNED_LAYOUTS[region], layouts_in(region), "layout"):
        expect_is_contiguous(impl, layout)


def expect_is_contiguous(impl, layout: tuple) -> None:
    shape, strides, _ = layout
    expect_equal(impl.tensors.is_contiguous(shape, strides), layout_tensor(layout).is_contiguous(),
                 what=call_text("is_contiguous", shape, strides), source="Tensor.is_contiguous()",
                 hint="from the last dimension: each of size != 1 has stride = product of the sizes after it; "
                      "size-1 dimensions skipped; no elements: contiguous")


# Two items: new shapes with a -1 to infer (of tensors with elements) and new shapes without; the docstring's
# examples, none with a -1, wait for the second alone.
@pytest.mark.parametrize("new_shape_kind", ["with-minus-one", "without-minus-one"])
@given(data=st.data())
def test_can_view_matches_torch(impl, new_shape_kind, data):
    infer = new_shape_kind == "with-minus-one"
    layout = data.draw(tensor_layouts(min_numel=1 if infer else 0), label="layout")
    shape, strides, _ = layout
    new_shape = data.draw(view_shapes(shape, infer=infer, wrong=True), label="new_shape")
    expect_equal(impl.tensors.can_view(shape, strides, new_shape), torch_can_view(layout, new_shape),
                 what=call_text("can_view", shape, strides, new_shape), source="whether Tensor.view raises",
                 hint="size-1 dims aside, cut into runs where stride[d] == stride[d+1] * size[d+1]; the new "
                      "shape must regroup each run on its own; -1 inferred; no elements: always")


# -- ops, one at a time, then chains ------------------------------------------------------------------------

# Rare inputs, pinned (tests/strategies/__init__.py PINNED): (layout, [op]), each op what an item caught a
# catalogued mistake with only at example 19-48 under some grading seed.
M, T = ((3, 4), (4, 1), 0), ((4, 3), (1, 4), 2)  # contiguous; transposed, at an offset
Z, ONES, SCALAR = ((2, 0, 3), (3, 3, 1), 0), ((1, 3, 1), (3, 1, 1), 1), ((), (), 5)  # zero-size; size-1; 0-d
PINNED_SINGLE_OPS = {
    "slice": [(M, [("slice", 1, 0, 4, 2)])],  # a step: the stride grows (slice_stride_unstepped)
    "slice-beyond-the-ends": [(M, [("slice", 1, -3, 9, 1)])],  # from the end, clamped (slice_python_rules_ignored)
    "reshape-copies": [(T, [("reshape", (12,))])],  # transposed: no view, a copy (reshape_never_copies)
    "narrow": [(M, [("narrow", 1, -3, 2)]),  # a negative start, from the end (narrow_negative_start)
               (Z, [("narrow", 1, 0, 0)])],  # an empty dimension, narrowed from 0: nothing to count from the end
    "diagonal": [(M, [("diagonal", -1, 0, 1)])],  # below the main diagonal: along dim1 (diagonal_negative_offset)
    "unfold": [(M, [("unfold", 1, 2, 2)])],  # windows a step apart: the window's stride stays (unfold_window_...)
    "unsqueeze": [(((3, 4), (0, 1), 0), [("unsqueeze", 0)])],  # before a broadcast dimension: torch's own stride
    "negative-dims": [(((2, 3, 4), (12, 4, 1), 0), [("unsqueeze", -1)])],  # after the last (unsqueeze_negative_before)
    "permute-cycles": [(((2, 3, 4), (12, 4, 1), 0), [("permute", (1, 2, 0))])],  # a cycle, not its own inverse
    "expand": [(ONES, [("expand", (2, 3, 4))])],  # size-1 dimensions expanded: stride 0 (expand_keeps_strides)
    "t": [(M, [("t",)])],  # 2-D: sizes and strides both reversed
    "view": [(T, [("view", (12,))])],  # transposed: view must raise where reshape copies (view_copies_instead)
}


# Ops whose inputs fall into two regions, each an item of its own (grader/registry.py SPLIT_OP_PARTS): the op's
# name, and the other part. A fixed call (an edge case, a docstring's example) waits for its own region's item.
SPLIT_OPS = {part: op for op, part in SPLIT_OP_PARTS.items()}


def single_op_part(layout: tuple, ops: list) -> str:
    """The item of test_single_ops_match_torch that one op, its dimensions counted from the start, belongs to."""
    (name, *args), = ops
    shape, strides, _ = layout
    inside = {
        "slice": lambda: all(b is None or 0 <= b <= shape[args[0]] for b in args[1:3]),
        "reshape": lambda: torch_chain(layout, ops)[0] != COPY,
        "transpose": lambda: 0 not in shape,
        "permute": lambda: all(args[0][d % len(shape)] % len(shape) == i for i, d in enumerate(args[0])),
        "flatten": lambda: layout_tensor(layout).is_contiguous(),
        "index": lambda: bool(args[1]),
    }.get(name)
    return name if inside is None or inside() else SPLIT_OP_PARTS[name]


# One item per op (two for SPLIT_OPS), its dimensions counted from the start, one of no ops, and one of ops whose
# dimensions are written from the end (-1: the last): a slip in one op, or in negative dimensions, costs that share,
# and the fixed tests that use the op wait for its item alone.
@pytest.mark.parametrize("op", [*TENSOR_OPS, *SPLIT_OPS, "negative-dims", "no-ops"])
@given(case=st.data())
@example(case=PINNED)
def test_single_ops_match_torch(impl, op, case):
    if op == "negative-dims":
        drawn = single_op(None)
    elif op == "no-ops":  # the layout itself: the evidence of the edge cases without ops
        drawn = tensor_layouts().map(lambda layout: (layout, []))
    elif op == "index-nothing":  # an empty index is rare among generated ones: drawn as such, not filtered
        drawn = tensor_layouts().filter(lambda layout: layout[0]).flatmap(lambda layout: st.tuples(
            st.just(layout), st.integers(0, len(layout[0]) - 1).map(lambda dim: [("index", dim, ())])))
    elif op == "transpose-empty":  # empty layouts are rare among generated ones: drawn as such, not filtered
        drawn = layouts_in("empty").flatmap(lambda layout: st.tuples(st.just(layout), st.tuples(
            st.just("transpose"), *[st.integers(0, len(layout[0]) - 1)] * 2).map(lambda op: [op])))
    else:
        drawn = single_op(SPLIT_OPS.get(op, op)).filter(lambda drawn: single_op_part(*drawn) == op)
    for layout, ops in pinned_or_drawn(case, PINNED_SINGLE_OPS.get(op, []), drawn, "layout and op"):
        hint = (HINTS[ops[0][0]] if ops else "no ops: the layout itself") + (
            "; a negative dimension counts from the end (-1: the last; for unsqueeze, after the last)"
            if op == "negative-dims" else "")
        expect_view_result(impl, layout, ops, hint=hint)


# Fixed edge cases of every op, run by every profile (the local grade's fixed inputs included): what each
# op's definition makes obvious and generated inputs reach only now and then.
EDGE_CASES = [
    # diagonal: offset < 0 moves along dim1, > 0 along dim2, past the edge empty; dims in any order
    (M, [("diagonal", -1, 0, 1)]), (M, [("diagonal", -2, 0, 1)]), (M, [("diagonal", 2, 0, 1)]),
    (M, [("diagonal", -1, 1, 0)]), (M, [("diagonal", -5, 0, 1)]), (T, [("diagonal", -1, -1, 0)]),
    (Z, [("diagonal", -1, 0, 2)]), (ONES, [("diagonal", 1, 2, 0)]),
    # slice, narrow, select, unfold: negative starts and indices, empty and clamped ranges, size-1 windows
    (M, [("slice", 1, -3, None, 2)]), (M, [("slice", 0, 5, 10, 1)]), (Z, [("slice", 1, 0, None, 1)]),
    (M, [("narrow", 1, -2, 2)]), (M, [("narrow", 0, 1, 0)]), (M, [("select", 0, -1)]), (T, [("select", 1, -3)]),
    (M, [("unfold", 1, 4, 1)]), (M, [("unfold", 0, 1, 2)]), (ONES, [("unfold", 1, 3, 3)]),
    # dimensions: size-1 dimensions squeezed or expanded, 0-d tensors, negative dims
    (ONES, [("squeeze",)]), (ONES, [("squeeze", 0)]), (ONES, [("squeeze", 1)]), (Z, [("squeeze",)]),
    (ONES, [("expand", (2, 3, 4))]), (ONES, [("expand", (5, -1, -1, 2))]), (Z, [("expand", (4, 2, 0, 3))]),
    (SCALAR, [("t",)]), (SCALAR, [("unsqueeze", 0)]), (M, [("unsqueeze", -1)]), (T, [("permute", (-1, 0))]),
    (Z, [("transpose", 0, 2)]), (SCALAR, [("expand", (3, 2))]), (T, [("transpose", 0, -1)]),
    (((2, 3, 4), (12, 4, 1), 0), [("permute", (-1, 0, 1))]),
    # shape: zero-size and size-1 views, views that must fail, reshapes that must copy, an empty index
    (Z, [("view", (6, 0))]), (Z, [("reshape", (0,))]), (ONES, [("view", (3,))]), (ONES, [("view", (1, 1, 3, 1))]),
    (T, [("view", (-1,))]), (T, [("reshape", (12,))]), (ONES, [("flatten", 0, -1)]), (SCALAR, [("flatten", 0, -1)]),
    (((2, 3, 4), (24, 4, 1), 0), [("flatten", 1, 2)]),  # not contiguous, yet these two dimensions merge: a view
    (M, [("index", 1, ())]), (M, [("index", -2, (1, 2))]),  # consecutive indices: a copy all the same
    (M, [("contiguous",)]), (T, [("contiguous",)]),
    # no ops at all: the layout itself
    (M, []), (T, []), (Z, []), (SCALAR, []),
]


# each item's id names the part of test_single_ops_match_torch of its op and region, which it waits for
@pytest.mark.parametrize(("layout", "ops"), EDGE_CASES, ids=[
    f"{single_op_part(layout, ops) if ops else 'no-ops'} {i}" for i, (layout, ops) in enumerate(EDGE_CASES)])
def test_edge_cases_match_torch(impl, layout, ops):
    expect_view_result(impl, layout, ops, hint=HINTS[ops[0][0]] if ops else "no ops: the layout itself")


# Chains of one family of ops each, and of any ops: one slip in one op costs the chains that use it.
CHAIN_FAMILIES = ["indexing", "dimensions", "shape", "any"]


@pytest.mark.parametrize("family", CHAIN_FAMILIES)
@given(data=st.data())
def test_op_chains_match_torch(impl, family, data):
    expect_view_result(impl, *data.draw(op_chains(family=None if family == "any" else family), label="chain"))


@pytest.mark.parametrize("family", CHAIN_FAMILIES)
@given(data=st.data())
def test_a_write_through_the_result_lands_where_its_layout_says(impl, family, data):
    # The oracle is the memory itself: write -1 through one element of torch's result and see which
    # element of the original storage (whose element i held i) changed; none when the result is a copy.
    layout, ops = data.draw(op_chains(min_numel=1, family=None if family == "any" else family), label="chain")
    expected, x, y = torch_chain(layout, ops)
    assume(expected != RAISES and y.numel() > 0)
    index = tuple(data.draw(st.integers(0, size - 1)) for size in y.shape)
    y[index] = -1
    changed = (x.as_strided((storage_elements(layout),), (1,), 0) == -1).nonzero().flatten().tolist()

    got = impl.tensors.view_result(*layout, ops)
    predicted = [] if got == COPY else [impl.tensors.element_offset(index, got[1], got[2])]
    expect_equal(predicted, changed, what=f"storage elements changed by writing result{list(index)} = -1 after "
                 f"{call_text('view_result', *layout, ops)} -> {got!r}",
                 source="the original storage after the write (a copy changes nothing in it)",
                 hint="a view writes into the original storage at element_offset(index, strides, offset); a "
                      "copy does not")


# -- bytes: the tensor's own, and the storage it keeps alive ----------------------------------------------

@given(chain=op_chains(fresh=True, must_succeed=True), dtype=st.sampled_from(DTYPES))
@every({"chain": (((2, 3), (3, 1), 0), [("expand", (4, 2, 3))])}, dtype=DTYPES)  # every dtype in every grading
def test_nbytes_matches_torch(impl, chain, dtype):
    (shape, _, _), ops = chain
    expect_int(impl.tensors.nbytes(shape, dtype, ops), torch_bytes(shape, dtype, ops)[0],
               what=call_text("nbytes", shape, dtype, ops), source="Tensor.nbytes of the result",
               hint="the result's number of elements times dtype.itemsize (an expanded view counts every element)")


@given(chain=op_chains(fresh=True, must_succeed=True), dtype=st.sampled_from(DTYPES))
@every({"chain": (((2, 3), (3, 1), 0), [("expand", (4, 2, 3))])}, dtype=DTYPES)  # every dtype in every grading
def test_storage_nbytes_matches_torch(impl, chain, dtype):
    (shape, _, _), ops = chain
    expect_int(impl.tensors.storage_nbytes(shape, dtype, ops), torch_bytes(shape, dtype, ops)[1],
               what=call_text("storage_nbytes", shape, dtype, ops), source="untyped_storage().nbytes() of the result",
               hint="a view keeps the whole original storage alive; after a copy, the last copy's storage")


# -- the docstrings' worked examples ---------------------------------------------------------------------------

BIG = (1024, 1024)
ROW = [("select", 0, 0), ("slice", 0, None, 10, 1)]  # big[0, :10]
COLUMN = [("select", 1, 0), ("slice", 0, None, 10, 1)]  # big[:10, 0]


CONTIGUOUS = ((4, 6), (6, 1), 0)
# The docstrings' worked examples, each an item whose id names its function (and, for view_result, the ops it
# applies): its points wait for the generated tests of that function (of those ops), grader/registry.py.
DOCSTRING_EXAMPLES = [
    ("contiguous_strides", ((2, 3, 4),), (12, 4, 1)),
    ("contiguous_strides", ((2, 0, 3),), (3, 3, 1)),
    ("element_offset", ((1, 2), (1, 3), 2), 9),
    ("is_contiguous", ((2, 1, 3), (3, 7, 1)), True),
    ("is_contiguous", ((3, 2), (1, 3)), False),
    ("is_contiguous", ((4, 2), (6, 1)), False),  # x[:, :2]: two runs, a gap between the rows
    ("can_view", ((3, 2), (1, 3), (6,)), False),
    ("can_view", ((3, 2), (1, 3), (3, 2, 1)), True),
    ("can_view", ((2, 1, 3), (3, 7, 1), (6,)), True),
    ("can_view", ((0, 3), (1, 5), (3, 0, 2)), True),
    ("view_result", (*CONTIGUOUS, [("slice", 1, 1, None, 2)]), ((4, 3), (6, 2), 1)),
    ("view_result", (*CONTIGUOUS, [("t",), ("reshape", (-1,))]), COPY),
    ("view_result", (*CONTIGUOUS, [("t",), ("view", (-1,))]), RAISES),
    ("view_result", (*CONTIGUOUS, [("unsqueeze", 0), ("expand", (5, 4, 6))]), ((5, 4, 6), (0, 6, 1), 0)),
    ("nbytes", ((1, 3), torch.float32, [("expand", (4, 3))]), 48),
    ("storage_nbytes", ((1, 3), torch.float32, [("expand", (4, 3))]), 12),
    ("nbytes", (BIG, torch.float32, ROW), 40),
    ("storage_nbytes", (BIG, torch.float32, ROW), 4_194_304),
    ("storage_nbytes", (BIG, torch.float32, [*ROW, ("contiguous",)]), 4_194_304),
    ("storage_nbytes", (BIG, torch.float32, [*COLUMN, ("contiguous",)]), 40),
]


def _example_id(i: int, name: str, args: tuple) -> str:
    ops = " ".join(dict.fromkeys(op[0] for op in args[-1])) if name == "view_result" else ""
    return f"{name}{' ' + ops if ops else ''} {i}"


@pytest.mark.parametrize(("name", "args", "expected"), DOCSTRING_EXAMPLES,
                         ids=[_example_id(i, name, args) for i, (name, args, _) in enumerate(DOCSTRING_EXAMPLES)])
def test_docstring_examples(impl, name, args, expected):
    expect_equal(addressing(outcome(getattr(impl.tensors, name), *args)), addressing(expected),
                 what=call_text(name, *args), source="the docstrings' worked example")
    if name == "view_result":  # the same example, against torch
        expect_view_result(impl, args[:3], args[3])
    elif name in ("nbytes", "storage_nbytes"):
        assert torch_bytes(*args)[name == "storage_nbytes"] == expected, "torch disagrees: a test premise"


# -- audit: layouts are computed, not asked of torch ---------------------------------------------------------

FORBIDDEN_ATTRIBUTES = {"as_strided", "empty_strided", "stride", "storage_offset", "untyped_storage", "data_ptr",
                        "is_contiguous", "nbytes", "view", "reshape", "contiguous", "expand", "stride_tricks"}


def tensor_mentions(package: str) -> list[str]:
    """Static part of the audit: torch's (or numpy's) tensor layout machinery reached as an attribute or
    imported by name, and numpy imported at all (its stride tricks and reshape rules are torch's oracle's)."""
    return audit.reaching(package, "tensors", ("numpy",), tuple(FORBIDDEN_ATTRIBUTES))


def plain_outcome(fn, *args):
    """`fn(*args)`'s answer (as `outcome`), or the name of the exception it raises: what the audit compares."""
    try:
        return outcome(fn, *args)
    except NotImplementedError:  # nothing to audit yet
        raise
    except Exception as error:  # a bug: a wrong answer, not the audit's business
        if type(error).__module__.startswith("grader.harness"):  # the worker died or timed out: not an answer
            raise
        return f"raises {type(error).__name__}"


AUDITED = ["contiguous_strides", "element_offset", "is_contiguous", "can_view", "view_result", "nbytes",
           "storage_nbytes"]


def audited_calls(chain, data) -> list[tuple[str, tuple, object]]:
    """The audit's calls on a drawn chain, each with torch's answer (the oracle of the function's own test)."""
    layout, ops = chain
    shape, strides, offset = layout
    new_shape = data.draw(view_shapes(shape, wrong=True), label="new_shape")  # as can_view's test: both answers
    calls = [("contiguous_strides", (shape,), torch.empty(shape, device="meta").stride()),
             ("is_contiguous", (shape, strides), layout_tensor(layout).is_contiguous()),
             ("can_view", (shape, strides, new_shape), torch_can_view(layout, new_shape)),
             ("view_result", (*layout, ops), torch_chain(layout, ops)[0]),
             ("nbytes", (shape, torch.float32, []), torch_bytes(shape, torch.float32, [])[0]),
             ("storage_nbytes", (shape, torch.float32, []), torch_bytes(shape, torch.float32, [])[1])]
    if 0 not in shape:
        last = tuple(size - 1 for size in shape)
        calls.append(("element_offset", (last, strides, offset), layout_tensor(layout)[last].item()))
    return calls


# one item per function, which carries its own evidence (tests/audit_run.py): it checks the calls it saw answered
# right, and pays only beside three distinct right answers (both answers of a bool)
@pytest.mark.parametrize("function", AUDITED)
@audit_run.evidenced(lambda kwargs: kwargs["function"], without="torch's tensor ops")
@given(chain=op_chains(), data=st.data())
def test_audit_layouts_are_computed_without_tensors(impl, function, chain, data):
    """Fails only where a function answers right with torch's tensor ops usable and otherwise with them made
    unusable (or raises): it asked torch. A wrong answer is the other tests' business: not checked here."""
    hint = "compute the answer from the shape and strides as plain Python numbers; create no tensor"
    for name, args, expected in [call for call in audited_calls(chain, data) if call[0] == function]:
        what = call_text(name, *args)
        right = addressing(expected)
        if addressing(plain_outcome(getattr(impl.tensors, name), *args)) != right:
            continue  # a wrong answer: its own tests' failure, not evidence for the audit
        try:
            got = impl.run(scenarios.without_tensor_ops, [(name, args)])
        except Exception as error:
            if type(error).__module__.startswith("grader.harness"):  # the worker died or timed out: not an answer
                raise
            raise AssertionError(f"{what} ran a torch tensor op: with tensor ops made unusable it raised\n"
                                 f"  {type(error).__name__}: {str(error).splitlines()[0]}\n  hint: {hint}") from None
        assert not got["outside"], (f"{what} ran torch ops with the audit's dispatch mode stepped around "
                                    f"({', '.join(sorted(set(got['outside'])))})\n  hint: {hint}")
        assert addressing(got["results"][0]) == right, (
            f"{what} answers {expected!r} with torch's tensor ops usable and {got['results'][0]!r} with them "
            f"unusable: it asks torch\n  hint: {hint}")
        audit_run.evidence().saw_right(repr(right), kinds=2 if isinstance(expected, bool) else None)
    mentions = tensor_mentions(impl.name)
    assert not mentions, (f"{impl.name}/tensors.py asks torch (or numpy) for layouts, the oracle:\n"
                          + "\n".join(mentions))


# -- differential: the same inputs through the reference ----------------------------------------------------

@given(chain=op_chains(), fresh=op_chains(fresh=True, must_succeed=True), dtype=st.sampled_from(DTYPES),
       data=st.data())
def test_differential_tensors(impl, ref, chain, fresh, dtype, data):
    layout, ops = chain
    shape, strides, offset = layout
    new_shape = data.draw(view_shapes(shape, wrong=True))
    index = tuple(data.draw(st.integers(0, max(size - 1, 0))) for size in shape)
    (fresh_shape, _, _), fresh_ops = fresh
    cases = [("contiguous_strides", (shape,)), ("element_offset", (index, strides, offset)),
             ("is_contiguous", (shape, strides)), ("can_view", (shape, strides, new_shape)),
             ("view_result", (*layout, ops)), ("nbytes", (fresh_shape, dtype, fresh_ops)),
             ("storage_nbytes", (fresh_shape, dtype, fresh_ops))]
    for name, args in cases:
        compared = functools.partial(used_strides, shape) if name == "contiguous_strides" else addressing
        expect_equal(compared(outcome(getattr(impl.tensors, name), *args)),
                     compared(outcome(getattr(ref.tensors, name), *args)), what=call_text(name, *args),
                     source="reference")


# -- every error the docstrings promise, on a fixed call (tests/documented.py) -------------------------------

@pytest.mark.parametrize("case", cases("tensors"))
def test_documented_errors_are_raised(impl, case):
    expect_documented_error(impl, "tensors", case)
