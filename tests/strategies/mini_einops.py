"""Strategies of problems mini_einops and einops_practice (tests/test_mini_einops.py): einops patterns as
data, valid calls and near-misses.

A spec is a dict: {"kind": "rearrange" | "reduce" | "repeat" | "einsum", "pattern": str,
"shapes": [shape, ...] (one per input tensor), "axes_lengths": {name: int}, "reduction": str,
"dtype": "float32" | "float64" | "int64", "seed": int, "mutation": None | str (near-misses: what was
broken; the result may still be valid, e.g. an axis dropped on the right of a reduce)}.
"""

import copy
import math

from hypothesis import strategies as st

EINOPS_AXIS_NAMES = ("b", "c", "h", "w", "seq", "heads", "d_model", "x1", "kv", "t2")
EINOPS_REDUCTIONS = ("sum", "mean", "max", "min", "prod")
_DOTS = "..."


def _render_side(groups: list) -> str:
    """groups: each a list of tokens (a lone token unparenthesised) or the string "()"."""
    parts = []
    for group in groups:
        if group == "()":
            parts.append("()")
        elif len(group) == 1:
            parts.append(str(group[0]))
        else:
            parts.append("(" + " ".join(str(t) for t in group) + ")")
    return " ".join(parts)


def _split_into_groups(draw, axes: list) -> list[list]:
    groups: list[list] = []
    for axis in axes:
        if groups and draw(st.integers(0, 2)) == 0:
            groups[-1].append(axis)
        else:
            groups.append([axis])
    return groups


def _insert(draw, groups: list, item) -> None:
    groups.insert(draw(st.integers(0, len(groups))), item)


@st.composite
def _einops_structures(draw, kind: str | None = None, axes: str | None = None) -> dict:
    kind = kind or draw(st.sampled_from(["rearrange", "reduce", "repeat"]))
    if axes is not None and axes not in EINOPS_AXES_KINDS:
        raise ValueError(f"axes must be one of {EINOPS_AXES_KINDS}, not {axes!r}")
    n = draw(st.integers(1, 4))
    names = draw(st.permutations(EINOPS_AXIS_NAMES))[:n]  # permutations: distinct without rejection
    sizes = dict(zip(names, draw(st.permutations(range(2, 6)))[:n], strict=True))
    spare = [a for a in EINOPS_AXIS_NAMES if a not in names]
    left = _split_into_groups(draw, list(names))
    anonymous = []
    if kind == "reduce" and draw(st.booleans()):  # a numeric axis, reduced: "(h 2)"
        group = draw(st.sampled_from(left))
        value = draw(st.integers(2, 3))
        group.insert(draw(st.integers(0, len(group))), value)
        anonymous.append(value)
    random = axes != "named axes only"  # a kind forces its feature; the other one may come with it
    with_ellipsis = axes == "with an ellipsis" or (random and draw(st.booleans()))
    ellipsis = draw(st.lists(st.integers(1, 3), max_size=2)) if with_ellipsis else None
    if ellipsis is not None:
        _insert(draw, left, [_DOTS])
    # unit axes ("()" or "1"): now and then on each side, or (axes "with unit axes") on one side or both
    sides = draw(st.sampled_from([(True, False), (False, True), (True, True)])) if axes == "with unit axes" \
        else None
    if sides[0] if sides else random and draw(st.integers(0, 3)) == 0:
        _insert(draw, left, draw(st.sampled_from(["()", ["1"]])))

    kept = list(names)
    if kind == "reduce":
        kept = [a for a in names if draw(st.booleans())]
    kept = draw(st.permutations(kept))
    new = {}
    if kind == "repeat":
        for name in spare[: draw(st.integers(1, 2))]:
            new[name] = draw(st.integers(2, 3))
        kept = kept + list(new)
        if draw(st.booleans()):
            kept.append(draw(st.integers(2, 3)))  # a numeric new axis
        kept = draw(st.permutations(kept))
    right = _split_into_groups(draw, list(kept))
    if ellipsis is not None and (kind != "reduce" or draw(st.booleans())):
        if right and draw(st.booleans()):
            draw(st.sampled_from(right)).insert(0, _DOTS)  # "(... h)": merged on the right
        else:
            _insert(draw, right, [_DOTS])
    if sides[1] if sides else random and draw(st.integers(0, 3)) == 0:
        _insert(draw, right, draw(st.sampled_from(["()", ["1"]])))

    lengths = dict(new)
    for group in left:
        if group == "()":
            continue
        named = [a for a in group if a in sizes]
        if len(group) > 1 and named:
            inferred = draw(st.sampled_from(named))
            lengths.update({a: sizes[a] for a in named if a != inferred})
        elif named and draw(st.integers(0, 4)) == 0:
            lengths[named[0]] = sizes[named[0]]  # a length that can be read off: checked
    dtype = draw(st.sampled_from(["float32", "float32", "float64", "int64"]))
    reduction = draw(st.sampled_from(EINOPS_REDUCTIONS))
    if reduction == "mean" and dtype == "int64":
        dtype = "float32"
    return {"kind": kind, "left": left, "right": right, "sizes": sizes, "ellipsis": ellipsis, "lengths": lengths,
            "reduction": reduction, "dtype": dtype, "seed": draw(st.integers(0, 2**16)), "spare": spare}


def _spec_from_structure(s: dict, mutation: str | None = None) -> dict:
    shape = []
    for group in s["left"]:
        if group == "()":
            shape.append(1)
        elif group == [_DOTS]:
            shape.extend(s["ellipsis"])
        else:
            size = 1
            for token in group:
                size *= s["sizes"].get(token, token if isinstance(token, int) else 1)
            shape.append(size)
    pattern = f"{_render_side(s['left'])} -> {_render_side(s['right'])}"
    return {"kind": s["kind"], "pattern": pattern, "shapes": [shape], "axes_lengths": dict(s["lengths"]),
            "reduction": s["reduction"], "dtype": s["dtype"], "seed": s["seed"], "mutation": mutation}


EINOPS_AXES_KINDS = ("named axes only", "with an ellipsis", "with unit axes")


def einops_specs(kind: str | None = None, axes: str | None = None):
    """A valid rearrange / reduce / repeat call (see the spec format above): multi-letter names, groups on
    both sides, "...", "()" and "1", numeric axes where einops allows them, lengths to infer and to check.
    With `axes` (EINOPS_AXES_KINDS), only calls of that kind: no "..." and no unit axis; an ellipsis; or a
    unit axis ("()" or "1") on at least one side (the last two sometimes with the other feature too)."""
    return _einops_structures(kind, axes).map(_spec_from_structure)


_MUTATIONS = ("unknown_axis", "duplicate", "indivisible", "two_ellipses", "dropped_on_right", "extra_dim",
              "bad_name", "nested", "unused_length", "infer_two", "grouped_ellipsis", "numeric_axis",
              "no_arrow", "unbalanced", "wrong_length", "zero_axis", "integer_mean", "dropped_on_left")


def _named(groups: list) -> list:
    return [t for g in groups if g != "()" for t in g if isinstance(t, str) and t not in (_DOTS, "1")]


@st.composite
def einops_near_misses(draw, kind: str | None = None) -> dict:
    """A rearrange / reduce / repeat call one mistake away from a valid one: an unknown axis, a duplicate
    name, an indivisible split, two ellipses, an axis dropped on one side, a bad name, nested or
    unbalanced parentheses, a length that is unused, missing or wrong, ... (`mutation` says which; `origin`
    is the valid call it was made from)."""
    s = draw(_einops_structures(kind))
    origin = _spec_from_structure(copy.deepcopy(s))
    mutation = draw(st.sampled_from(_MUTATIONS))
    left, right, lengths = s["left"], s["right"], s["lengths"]
    spec = None
    if mutation == "unknown_axis":
        _insert(draw, right, [s["spare"][-1]])
    elif mutation == "duplicate":
        name = draw(st.sampled_from(_named(left)))
        _insert(draw, draw(st.sampled_from([left, right])), [name])
    elif mutation == "indivisible":
        spec = _spec_from_structure(s, mutation)
        spec["shapes"][0] = [d + 1 if d > 1 else d for d in spec["shapes"][0]]
    elif mutation == "two_ellipses":
        _insert(draw, draw(st.sampled_from([left, right])), [_DOTS])
        if s["ellipsis"] is None:
            s["ellipsis"] = []
            _insert(draw, left, [_DOTS])
    elif mutation == "dropped_on_right":
        names = [t for g in right if g != "()" for t in g if t != _DOTS]
        if names:
            drop = draw(st.sampled_from(names))
            s["right"] = [g if g == "()" else [t for t in g if t != drop] for g in right]
            s["right"] = [g for g in s["right"] if g]
    elif mutation == "dropped_on_left":
        names = _named(left)
        drop = draw(st.sampled_from(names))
        s["left"] = [g if g == "()" else [t for t in g if t != drop] for g in left]
        s["left"] = [g if g else "()" for g in s["left"]]
        s["sizes"] = {a: v for a, v in s["sizes"].items() if a != drop}
    elif mutation == "extra_dim":
        spec = _spec_from_structure(s, mutation)
        spec["shapes"][0].insert(draw(st.integers(0, len(spec["shapes"][0]))), 2)
    elif mutation == "bad_name":
        name = draw(st.sampled_from(_named(left)))
        bad = draw(st.sampled_from(["_" + name, name + "_", "2" + name, name + "-", name + ".x"]))
        s["left"] = [g if g == "()" else [bad if t == name else t for t in g] for g in left]
        s["right"] = [g if g == "()" else [bad if t == name else t for t in g] for g in right]
        s["sizes"] = {bad if a == name else a: v for a, v in s["sizes"].items()}
        s["lengths"] = {bad if a == name else a: v for a, v in lengths.items()}
    elif mutation == "nested":
        spec = _spec_from_structure(s, mutation)
        left_text, right_text = spec["pattern"].split(" -> ")
        wrapped = f"({left_text})" if " " in left_text else f"(({left_text}))"
        spec["pattern"] = f"{wrapped} -> {right_text}"
        spec["shapes"][0] = [math.prod(spec["shapes"][0])]
    elif mutation == "unused_length":
        lengths[s["spare"][-1]] = 2
    elif mutation == "infer_two":
        if lengths:
            lengths.pop(draw(st.sampled_from(sorted(lengths))))
    elif mutation == "grouped_ellipsis":
        s["ellipsis"] = s["ellipsis"] if s["ellipsis"] is not None else [2]
        s["left"] = [g for g in left if g != [_DOTS]]
        group = draw(st.sampled_from([g for g in s["left"] if g != "()"] or [[]]))
        group.insert(0, _DOTS)
        if group not in s["left"]:
            s["left"].append(group)
    elif mutation == "numeric_axis":
        side = draw(st.sampled_from([left, right]))
        _insert(draw, side, [draw(st.integers(2, 3))])
    elif mutation == "no_arrow":
        spec = _spec_from_structure(s, mutation)
        arrow = draw(st.sampled_from(["", "-> x ->", "=>", "-", ","]))
        spec["pattern"] = spec["pattern"].replace("->", arrow)
    elif mutation == "unbalanced":
        spec = _spec_from_structure(s, mutation)
        text = spec["pattern"]
        spec["pattern"] = draw(st.sampled_from([text + ")", "(" + text, text.replace(")", "", 1) or text + "("]))
    elif mutation == "wrong_length":
        names = _named(left)
        name = draw(st.sampled_from(names))
        lengths[name] = s["sizes"][name] + 1
    elif mutation == "zero_axis":
        _insert(draw, draw(st.sampled_from([left, right])), ["0"])
    elif mutation == "integer_mean":
        s["dtype"], s["reduction"] = "int64", "mean"
    spec = spec or _spec_from_structure(s, mutation)
    spec["mutation"], spec["origin"] = mutation, origin
    return spec


OUTPUT_ORDERS = ("kept", "reordered")


def output_order(pattern: str) -> str:
    """"kept" where an einsum pattern's output axes ("..." among them) come in the order they first appear in
    its inputs (or there are fewer than two), else "reordered"."""
    inputs_text, _, output_text = pattern.partition("->")
    seen = [a for axes in inputs_text.split(",") for a in axes.split()]
    order = [seen.index(a) if a in seen else len(seen) for a in output_text.split()]
    return "kept" if order == sorted(order) else "reordered"


@st.composite
def einsum_specs(draw, n_inputs: int | None = None, order: str | None = None) -> dict:
    """A valid einops.einsum call: 1-3 inputs (or `n_inputs`), multi-letter names, axes shared or not, kept or
    summed, "..." batch dimensions (summed when the output has none; broadcast, right-aligned, where inputs
    have fewer or length 1), length-1 axes that broadcast, now and then a diagonal ("i i ->"). With `order`
    (OUTPUT_ORDERS, `output_order`), the output axes in the order of their first appearance in the inputs, or
    two or more of them in another order."""
    n = draw(st.integers(2 if order == "reordered" else 1, 5))
    names = draw(st.permutations(EINOPS_AXIS_NAMES))[:n]
    sizes = dict(zip(names, draw(st.permutations(range(2, 7)))[:n], strict=True))
    n_inputs = draw(st.integers(1, 3)) if n_inputs is None else n_inputs
    batch = draw(st.lists(st.integers(1, 3), max_size=2)) if draw(st.booleans()) else None
    inputs, shapes = [], []
    for i in range(n_inputs):
        low = 2 if order == "reordered" and i == 0 else 1  # two axes to put in another order
        axes = draw(st.permutations(names))[: draw(st.integers(low, max(low, min(3, n))))]
        if n_inputs == 1 and draw(st.integers(0, 3)) == 0:
            axes.insert(draw(st.integers(0, len(axes))), axes[0])  # a diagonal
        # now and then a length 1 that broadcasts against the axis' length in another input
        shape = [1 if n_inputs > 1 and draw(st.integers(0, 7)) == 0 else sizes[a] for a in axes]
        if batch is not None and draw(st.booleans()):
            at = draw(st.integers(0, len(axes)))
            axes.insert(at, _DOTS)
            own = batch[draw(st.integers(0, len(batch))):]  # fewer ellipsis dimensions: right-aligned
            shape[at:at] = [1 if draw(st.integers(0, 3)) == 0 else d for d in own]
        inputs.append(axes)
        shapes.append(shape)
    seen = [a for axes in inputs for a in axes]
    used = sorted({a for a in seen if a != _DOTS}, key=names.index)
    output = draw(st.permutations([a for a in used if draw(st.booleans())]))
    if order == "reordered":
        if len(output) < 2:  # two axes kept at least, so that they can come in another order
            output = sorted(set(output) | set(sorted(used, key=seen.index)[:2]), key=seen.index)
        if output == sorted(output, key=seen.index):
            output.reverse()
    if _DOTS in seen and draw(st.booleans()):
        output.insert(draw(st.integers(0, len(output))), _DOTS)
    if order == "kept":
        output.sort(key=seen.index)
    pattern = ", ".join(" ".join(axes) for axes in inputs) + " -> " + " ".join(output)
    return {"kind": "einsum", "pattern": pattern, "shapes": shapes, "axes_lengths": {}, "reduction": "",
            "dtype": draw(st.sampled_from(["float32", "float64"])), "seed": draw(st.integers(0, 2**16)),
            "mutation": None}


_EINSUM_MUTATIONS = ("unknown_output", "duplicate_output", "wrong_ndim", "size_mismatch", "parentheses",
                     "unit_axis", "numeric_axis", "two_ellipses", "no_arrow", "missing_tensor", "bad_name")


@st.composite
def einsum_near_misses(draw) -> dict:
    """An einsum call one mistake away from a valid one (`mutation` says which; `origin` is the valid call it
    was made from)."""
    spec = draw(einsum_specs())
    origin = copy.deepcopy(spec)
    mutation = draw(st.sampled_from(_EINSUM_MUTATIONS))
    inputs_text, output_text = spec["pattern"].split(" -> ")
    inputs = [t.split() for t in inputs_text.split(", ")]
    output = output_text.split()
    shapes = spec["shapes"]
    first = next(a for a in inputs[0] if a != _DOTS) if any(a != _DOTS for a in inputs[0]) else "b"
    if mutation == "unknown_output":
        output.append("zz")
    elif mutation == "duplicate_output":
        output += [first, first]
    elif mutation == "wrong_ndim":
        shapes[-1] = shapes[-1] + [2]
    elif mutation == "size_mismatch":
        i = inputs[0].index(first) if _DOTS not in inputs[0] else None
        if i is not None:
            shapes[0][i] += 1  # now 3..6 against 2..5 elsewhere; a lone input still fits (it may pass)
    elif mutation == "parentheses":
        # A group of two or more: the spec refuses every group, and so does einops. A one-axis group is left
        # out: einops reads "(b)" as b (and "(...)" as a name), a quirk the spec does not ask for.
        group = inputs[0] if len(inputs[0]) >= 2 else [*inputs[0], "zq"]
        inputs[0] = ["(" + " ".join(group) + ")"]
        shapes[0] = [math.prod(shapes[0])]
    elif mutation == "unit_axis":
        inputs[0].append(draw(st.sampled_from(["()", "1"])))
        shapes[0] = shapes[0] + [1]
    elif mutation == "numeric_axis":
        inputs[0].append("2")
        shapes[0] = shapes[0] + [2]
    elif mutation == "two_ellipses":
        inputs[0] += [_DOTS, _DOTS]
    elif mutation == "no_arrow":
        spec["pattern"] = inputs_text
    elif mutation == "missing_tensor":
        shapes.pop()
        if not shapes:
            shapes.append([2])
    elif mutation == "bad_name":
        inputs[0] = ["_" + a if a == first else a for a in inputs[0]]
        output = ["_" + a if a == first else a for a in output]
    if mutation != "no_arrow":
        spec["pattern"] = ", ".join(" ".join(axes) for axes in inputs) + " -> " + " ".join(output)
    spec["shapes"], spec["mutation"], spec["origin"] = shapes, mutation, origin
    return spec


def any_einops_specs():
    """Valid calls and near-misses of all four operations, mixed: for "both raise, or both agree" tests."""
    return st.one_of(einops_specs(), einops_near_misses(), einsum_specs(), einsum_near_misses())
