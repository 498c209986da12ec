"""Hypothesis strategies shared by every problem.

Sizes per named dimension are distinct, so an answer with two dimensions swapped cannot pass.
"""

import math

from hypothesis import strategies as st

from assignment.given import TransformerConfig


def distinct_sizes(n: int, min_value: int = 1, max_value: int = 16):
    """`n` distinct sizes (a list)."""
    return st.lists(st.integers(min_value, max_value), min_size=n, max_size=n, unique=True)


def big_sizes(n: int):
    """`n` distinct sizes up to a trillion: counting formulas must not overflow or round."""
    return st.lists(st.integers(1, 10**12), min_size=n, max_size=n, unique=True)


@st.composite
def transformer_configs(draw, max_layers: int = 3) -> TransformerConfig:
    n_heads = draw(st.integers(1, 4))
    d_head = draw(st.integers(1, 6))
    n_kv_heads = draw(st.sampled_from([None] + [h for h in range(1, n_heads + 1) if n_heads % h == 0]))
    return TransformerConfig(
        vocab_size=draw(st.integers(2, 40)),
        d_model=n_heads * d_head,
        n_layers=draw(st.integers(1, max_layers)),
        n_heads=n_heads,
        d_ff=draw(st.integers(1, 24)),
        n_kv_heads=n_kv_heads,
        gated_mlp=draw(st.booleans()),
    )


def matmul_programs():
    """Short programs of matmul-family ops on random shapes, as data: a list of (op, shape...) tuples."""
    d = st.integers(1, 9)
    op = st.one_of(
        st.tuples(st.just("mm"), d, d, d),
        st.tuples(st.just("addmm"), d, d, d),
        st.tuples(st.just("bmm"), d, d, d, d),
        st.tuples(st.just("baddbmm"), d, d, d, d),
        st.tuples(st.just("einsum"), d, d, d, d),
        st.tuples(st.just("matmul4d"), d, d, d, d, d),
    )
    return st.lists(op, min_size=1, max_size=4)


# -- problem memory (tests/test_memory.py) -------------------------------------------------------------

def precision_policies():
    """Named policies, and made-up ones whose parameter, gradient, state and master dtypes differ."""
    import torch

    from assignment.given import POLICIES, PrecisionPolicy

    floats = st.sampled_from([torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.float8_e4m3fn])
    made_up = st.builds(PrecisionPolicy, name=st.just("made_up"), param_dtype=floats, grad_dtype=floats,
                        state_dtype=floats, master_dtype=st.none() | floats)
    return st.sampled_from(sorted(POLICIES)) | made_up


@st.composite
def module_specs(draw) -> dict:
    """Specs of tests/scenarios/memory.py's `build_model`: tied, shared, frozen and mixed-dtype parameters."""
    d, hidden, vocab = draw(distinct_sizes(3, 1, 9))
    return {"d": d, "hidden": hidden, "vocab": vocab, "n_blocks": draw(st.integers(1, 3)),
            "bias": draw(st.booleans()), "norm": draw(st.sampled_from([None, "layernorm", "batchnorm"])),
            "tie": draw(st.booleans()), "share": draw(st.booleans()), "frozen": draw(st.booleans()),
            "dtype": draw(st.sampled_from(["float32", "bfloat16", "float64"]))}


@st.composite
def stack_specs(draw, extras: tuple = (None, "relu", "gelu", "tanh", "sigmoid", "layernorm", "slice")) -> dict:
    """Specs of tests/scenarios/memory.py's `build_stack`: Linear layers of distinct widths, each maybe
    followed by one of `extras` (an activation, a LayerNorm or a slicing view; None: nothing)."""
    widths = draw(distinct_sizes(draw(st.integers(2, 5)), 2, 12))
    layers = []
    for width in widths[1:]:
        layers.append(["linear", width, draw(st.booleans())])
        extra = draw(st.sampled_from(extras))
        if extra:
            layers.append([extra])
    return {"width": widths[0], "layers": layers, "batch": draw(st.integers(1, 5)),
            "seq": draw(st.sampled_from([0, 3])), "dtype": draw(st.sampled_from(["float32", "float64", "bfloat16"])),
            "input_grad": draw(st.booleans()), "seed": draw(st.integers(0, 2**16))}


# -- einops_practice and mini_einops (issue 4): einops patterns as data --------------------------------
# A spec is a dict: {"kind": "rearrange" | "reduce" | "repeat" | "einsum", "pattern": str,
# "shapes": [shape, ...] (one per input tensor), "axes_lengths": {name: int}, "reduction": str,
# "dtype": "float32" | "float64" | "int64", "seed": int, "mutation": None | str (near-misses: what was
# broken; the result may still be valid, e.g. an axis dropped on the right of a reduce)}.

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
    unbalanced parentheses, a length that is unused, missing or wrong, ... (`mutation` says which)."""
    s = draw(_einops_structures(kind))
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
    spec["mutation"] = mutation
    return spec


@st.composite
def einsum_specs(draw, n_inputs: int | None = None) -> dict:
    """A valid einops.einsum call: 1-3 inputs (or `n_inputs`), multi-letter names, axes shared or not, kept or
    summed, "..." batch dimensions (summed when the output has none; broadcast, right-aligned, where inputs
    have fewer or length 1), length-1 axes that broadcast, now and then a diagonal ("i i ->")."""
    n = draw(st.integers(1, 5))
    names = draw(st.permutations(EINOPS_AXIS_NAMES))[:n]
    sizes = dict(zip(names, draw(st.permutations(range(2, 7)))[:n], strict=True))
    n_inputs = draw(st.integers(1, 3)) if n_inputs is None else n_inputs
    batch = draw(st.lists(st.integers(1, 3), max_size=2)) if draw(st.booleans()) else None
    inputs, shapes = [], []
    for _ in range(n_inputs):
        axes = draw(st.permutations(names))[: draw(st.integers(1, min(3, n)))]
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
    used = sorted({a for axes in inputs for a in axes if a != _DOTS}, key=names.index)
    output = draw(st.permutations([a for a in used if draw(st.booleans())]))
    if any(_DOTS in axes for axes in inputs) and draw(st.booleans()):
        output.insert(draw(st.integers(0, len(output))), _DOTS)
    pattern = ", ".join(" ".join(axes) for axes in inputs) + " -> " + " ".join(output)
    return {"kind": "einsum", "pattern": pattern, "shapes": shapes, "axes_lengths": {}, "reduction": "",
            "dtype": draw(st.sampled_from(["float32", "float64"])), "seed": draw(st.integers(0, 2**16)),
            "mutation": None}


_EINSUM_MUTATIONS = ("unknown_output", "duplicate_output", "wrong_ndim", "size_mismatch", "parentheses",
                     "unit_axis", "numeric_axis", "two_ellipses", "no_arrow", "missing_tensor", "bad_name")


@st.composite
def einsum_near_misses(draw) -> dict:
    """An einsum call one mistake away from a valid one (`mutation` says which)."""
    spec = draw(einsum_specs())
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
    spec["shapes"], spec["mutation"] = shapes, mutation
    return spec


def any_einops_specs():
    """Valid calls and near-misses of all four operations, mixed: for "both raise, or both agree" tests."""
    return st.one_of(einops_specs(), einops_near_misses(), einsum_specs(), einsum_near_misses())


# -- problems precision and adamw (issue 5) --------------------------------------------------------------

# float32 bit patterns worth trying on every rounding function: zeros, subnormals, ties and near-ties of
# the 16 bits that bf16 drops (1 + 2^-8 rounds down to even, 1 + 3*2^-8 up), the largest finite values
# (0x7F7F8000 rounds to inf), infinities, and NaNs whose payload would carry into the exponent or the sign.
FP32_SPECIAL_BITS = (
    0x00000000, 0x80000000, 0x00000001, 0x00007FFF, 0x00008000, 0x00018000, 0x007FFFFF, 0x80008000,
    0x3F808000, 0x3F818000, 0x3F807FFF, 0x3F808001, 0x32ABCC77, 0x7F7FFFFF, 0x7F7F7FFF, 0x7F7F8000,
    0xFF7F8000, 0x7F800000, 0xFF800000, 0x7F800001, 0x7F807FFF, 0x7FBFFFFF, 0x7FC00000, 0x7FFFFFFF,
    0xFFFFFFFF, 0xFF800001,
)


# exponent fields; the last kind adds the largest normals that round up to inf (each kind has inputs that change)
FP32_BIT_KINDS = {"normal": (1, 254), "subnormal or zero": (0, 0), "inf, NaN or overflow": (255, 255)}


def fp32_bits(kind: str | None = None):
    """One float32 bit pattern, as an unsigned int: any, a special one, or one whose lower 16 bits are a
    tie or a near-tie; with `kind` (FP32_BIT_KINDS), only those whose exponent field is of that kind, except
    that "inf, NaN or overflow" also draws the largest finite floats, those that round to inf in bf16 (their
    exponent field is 254: "normal" draws them too)."""
    tails = st.sampled_from([0x8000, 0x7FFF, 0x8001, 0x0000, 0xFFFF])
    if kind is None:
        return st.one_of(st.integers(0, 2**32 - 1), st.sampled_from(FP32_SPECIAL_BITS),
                         st.builds(lambda upper, tail: (upper << 16) | tail, st.integers(0, 0xFFFF), tails))
    low, high = FP32_BIT_KINDS[kind]
    specials = [b for b in FP32_SPECIAL_BITS if low <= (b >> 23) & 0xFF <= high]
    exponents, signs = st.integers(low, high), st.integers(0, 1)
    kinds = [
        st.builds(lambda s, e, mantissa: s << 31 | e << 23 | mantissa, signs, exponents, st.integers(0, 2**23 - 1)),
        st.sampled_from(specials),
        st.builds(lambda s, e, upper, tail: s << 31 | e << 23 | upper << 16 | tail, signs, exponents,
                  st.integers(0, 0x7F), tails)]
    if kind == "inf, NaN or overflow":  # 0x7F7F8000 and up: finite in float32, inf in bf16
        kinds.append(st.builds(lambda s, tail: s << 31 | 0x7F7F0000 | tail, signs, st.integers(0x8000, 0xFFFF)))
    return st.one_of(kinds)


@st.composite
def fp32_near_grid(draw, exponent_bits: int, mantissa_bits: int, bias: int) -> float:
    """A float32 value on or near the grid of a format with these fields: a grid point, the midpoint of two
    neighbours (a tie), one float32 step either side of a midpoint, or a random point between; from
    below the subnormals to beyond the largest value; either sign."""
    import numpy as np

    e = draw(st.integers(-bias - mantissa_bits - 1, min(2**exponent_bits - bias, 126)))
    ulp = 2.0 ** (max(e, 1 - bias) - mantissa_bits)
    k = draw(st.integers(0, 2 ** (mantissa_bits + 1) - 1))
    kind = draw(st.sampled_from(["point", "tie", "below_tie", "above_tie", "between"]))
    value = k * ulp + {"point": 0.0, "between": draw(st.floats(0, 1)) * ulp}.get(kind, ulp / 2)
    value = np.float32(value)
    if kind in ("below_tie", "above_tie"):
        value = np.nextafter(value, np.float32(-np.inf if kind == "below_tie" else np.inf))
    return float(value) * draw(st.sampled_from([1.0, -1.0]))


@st.composite
def nvfp4_inputs(draw, max_dynamic_range: int = 4) -> list:
    """Nested lists of finite float32-representable values of shape (rows, 16 * blocks), each block at its
    own magnitude (2^-range .. 2^range times a common base, reached by one of its values), so per-block
    scales matter; with the default range every block scale is in e4m3's normal range."""
    rows, blocks = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    base = 2.0 ** draw(st.integers(-20, 20))
    data = []
    for _ in range(rows):
        row = []
        for _ in range(blocks):
            magnitude = base * 2.0 ** draw(st.integers(-max_dynamic_range, max_dynamic_range))
            block = draw(st.lists(st.floats(-1, 1, width=32), min_size=16, max_size=16))
            block[draw(st.integers(0, 15))] = draw(st.sampled_from([0.5, -0.75, 1.0, -1.0]))  # the block's amax
            row += [magnitude * v for v in block]
        data.append(row)
    return data


@st.composite
def mixed_precision_specs(draw, dtype: str = "bfloat16") -> dict:
    """Specs of tests/scenarios/precision.py's `mixed_steps`: a 2-layer MLP of distinct sizes, 2 steps."""
    return {"seed": draw(st.integers(0, 2**16)), "sizes": draw(distinct_sizes(3, 1, 12)),
            "batch": draw(st.integers(1, 8)), "steps": 2, "dtype": dtype,
            "init_scale": 2.0**10 if dtype == "float16" else None, "lr": 0.1}


@st.composite
def adamw_trajectories(draw, dtype: str = "float64", weight_decay: bool | None = None) -> dict:
    """Specs of tests/scenarios/adamw.py's trajectories: 1-3 parameters of distinct shapes (a scalar
    among them, maybe) in 1-2 param groups with their own hyperparameters, 1-4 steps, each parameter
    with or without a gradient at each step, gradients at their own scale. With `weight_decay` False, no
    group decays; True, every group does."""
    decays = {None: [0.0, 0.01, 0.3], False: [0.0], True: [0.01, 0.3]}[weight_decay]
    n_params = draw(st.integers(1, 3))
    sizes = draw(distinct_sizes(4, 1, 6))
    shapes = [draw(st.sampled_from([[], [sizes[0]], [sizes[1], sizes[2]], [sizes[3], sizes[0]]]))
              for _ in range(n_params)]
    owner = [draw(st.integers(0, 1)) for _ in range(n_params)]
    groups = []
    for g in sorted(set(owner)):
        groups.append({"params": [i for i in range(n_params) if owner[i] == g],
                       "lr": draw(st.sampled_from([1e-3, 0.01, 0.1, 0.5])),
                       "betas": (draw(st.sampled_from([0.0, 0.5, 0.9])), draw(st.sampled_from([0.5, 0.9, 0.999]))),
                       "eps": draw(st.sampled_from([1e-8, 1e-3, 0.1, 1.0])),
                       "weight_decay": draw(st.sampled_from(decays))})
    steps = draw(st.integers(1, 4))
    has_grad = [[draw(st.integers(0, 4)) > 0 for _ in range(n_params)] for _ in range(steps)]
    return {"seed": draw(st.integers(0, 2**16)), "shapes": shapes, "groups": groups, "steps": steps,
            "has_grad": has_grad, "grad_scale": [draw(st.sampled_from([1e-3, 1.0, 30.0])) for _ in range(n_params)],
            "dtype": dtype}


# -- problem gradient_accumulation (tests/test_gradient_accumulation.py) -----------------------------------

@st.composite
def grad_accum_specs(draw, dtype: str = "float64") -> dict:
    """Specs of tests/scenarios/gradient_accumulation.py: an MLP of distinct sizes, a batch of 1-12 examples
    (maybe with a sequence dimension), a micro-batch size from 1 to beyond the batch (uneven splits
    included), a mean-reduced loss, maybe stale gradients left in the parameters."""
    batch = draw(st.integers(1, 12))
    return {"seed": draw(st.integers(0, 2**16)), "sizes": draw(distinct_sizes(3, 2, 9)), "batch": batch,
            "micro_batch_size": draw(st.integers(1, batch + 2)), "seq": draw(st.sampled_from([0, 3])),
            "loss": draw(st.sampled_from(["mse", "cross_entropy"])), "dtype": dtype, "stale": draw(st.booleans())}


# -- problem activation_checkpointing (tests/test_activation_checkpointing.py) --------------------------

@st.composite
def checkpoint_specs(draw, max_layers: int = 6, dropout: bool | None = None) -> dict:
    """Specs of tests/scenarios/activation_checkpointing.py: 1-`max_layers` layers, batch != width, dropout
    (maybe), the input with or without requires_grad, an extra tensor argument (maybe), a float scale."""
    batch, width = draw(distinct_sizes(2, 1, 7))
    has_dropout = draw(st.booleans()) if dropout is None else dropout
    return {"seed": draw(st.integers(0, 2**16)), "layers": draw(st.integers(1, max_layers)), "batch": batch,
            "width": width, "dtype": draw(st.sampled_from(["float64", "float32"])),
            "dropout": draw(st.sampled_from([0.25, 0.5])) if has_dropout else 0.0,
            "x_requires_grad": draw(st.booleans()), "shift": draw(st.sampled_from([None, False, True])),
            "scale": draw(st.sampled_from([0.5, -2.0, 3.0])), "flag": draw(st.booleans())}


# -- problem benchmarking (tests/test_benchmarking.py) ----------------------------------------------------

@st.composite
def benchmark_specs(draw) -> dict:
    """Specs of tests/scenarios/benchmarking.py's fake device: 0-3 warm-up calls, 1-6 trials (even and odd
    counts), each call's work a distinct duration (warm-up calls among the longest, as first calls are), a
    launch overhead far below any duration, a clock that does not start at 0."""
    warmup, trials = draw(st.integers(0, 3)), draw(st.integers(1, 6))
    millis = draw(st.lists(st.integers(1, 500), min_size=warmup + trials, max_size=warmup + trials, unique=True))
    durations = [m * 1e-3 for m in millis]
    durations[:warmup] = [d + 1.0 for d in durations[:warmup]]  # compilation, autotuning: slow first calls
    return {"warmup": warmup, "trials": trials, "durations": durations,
            "launch": draw(st.sampled_from([1e-6, 5e-6])), "start": draw(st.sampled_from([0.0, 12.5, 1e4]))}


@st.composite
def tick_specs(draw) -> dict:
    """Fake clock readings for a measurement: 0-2 warm-up calls, 1-5 trials, 2 increasing readings per trial
    whose differences (the trial times) are distinct."""
    warmup, trials = draw(st.integers(0, 2)), draw(st.integers(1, 5))
    gaps = draw(st.lists(st.integers(1, 1000), min_size=2 * trials, max_size=2 * trials, unique=True))
    ticks, now = [], 3.0
    for gap in gaps:
        now += gap * 1e-4
        ticks.append(now)
    return {"warmup": warmup, "trials": trials, "ticks": ticks}


# -- problem tensors (tests/test_tensors.py): layouts and chains of ops as data ----------------------------
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


def _factors(n: int) -> list[int]:
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


@st.composite
def view_shapes(draw, shape: tuple, infer: bool = True, wrong: bool = False) -> tuple:
    """A new shape for a tensor of `shape`: its dimensions split into prime factors and regrouped (in
    order, or now and then shuffled), size-1 dimensions inserted, maybe one -1 (`infer`), maybe a shape
    with the wrong number of elements (`wrong`)."""
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
    if infer and new and draw(st.booleans()):
        new[draw(st.integers(0, len(new) - 1))] = -1
    return tuple(new)


def _draw_dim(draw, ndim: int, sizes: tuple | None = None) -> int:
    """A dimension of an `ndim`-d tensor, as torch accepts it (negative ones too); among those whose size
    is in `sizes`, if given. Raises LookupError where there is none."""
    dims = [d for d in range(ndim) if sizes is None or sizes[d] > 0]
    if not dims:
        raise LookupError("no such dimension")
    d = draw(st.sampled_from(dims))
    return d - ndim if draw(st.integers(0, 3)) == 0 else d


def _draw_bounds(draw, size: int) -> tuple:
    """start and stop of a slice of a dimension of `size`: mostly start <= stop, each written as Python
    allows (None, negative, past the end), now and then reversed or out of range (an empty slice)."""
    start, stop = sorted(draw(st.lists(st.integers(0, size), min_size=2, max_size=2)))
    if draw(st.integers(0, 5)) == 0:
        start, stop = stop, start + draw(st.sampled_from([-size - 3, 0, size + 3]))

    def written(i, default):
        return draw(st.sampled_from([i, i - size if 0 < i < size else i, None if i == default else i]))

    return written(start, 0), written(stop, size)


def _draw_op(draw, shape: tuple, name: str) -> tuple:
    """One op called `name` that torch accepts on a tensor of `shape` (view may still fail on its
    strides). Raises LookupError where `name` does not apply to that shape."""
    ndim = len(shape)
    if ndim == 0 and name in ("slice", "narrow", "select", "diagonal", "unfold", "transpose", "permute", "index"):
        raise LookupError(name)
    if name == "slice":
        d = _draw_dim(draw, ndim)
        return ("slice", d, *_draw_bounds(draw, shape[d]), draw(st.integers(1, 3)))
    if name == "narrow":
        d = _draw_dim(draw, ndim)
        start = draw(st.integers(-shape[d], shape[d]))
        room = shape[d] - (start % shape[d] if start < 0 else start)
        return ("narrow", d, start, draw(st.integers(min(1, room) if draw(st.integers(0, 5)) else 0, room)))
    if name == "select":
        d = _draw_dim(draw, ndim, shape)
        return ("select", d, draw(st.integers(-shape[d], shape[d] - 1)))
    if name == "diagonal":
        if ndim < 2:
            raise LookupError(name)
        d1, d2 = draw(st.permutations(range(ndim)))[:2]
        return ("diagonal", draw(st.integers(-2, 2)), d1 - ndim if draw(st.booleans()) else d1, d2)
    if name == "unfold":
        d = _draw_dim(draw, ndim, shape)
        return ("unfold", d, draw(st.integers(1, shape[d])), draw(st.integers(1, 3)))
    if name == "transpose":
        return ("transpose", _draw_dim(draw, ndim), _draw_dim(draw, ndim))
    if name == "t":
        if ndim > 2:
            raise LookupError(name)
        return ("t",)
    if name == "permute":
        return ("permute", tuple(d - ndim if draw(st.integers(0, 3)) == 0 else d
                                 for d in draw(st.permutations(range(ndim)))))
    if name == "unsqueeze":
        return ("unsqueeze", draw(st.integers(-ndim - 1, ndim)))
    if name == "squeeze":
        return ("squeeze", _draw_dim(draw, ndim)) if ndim and draw(st.booleans()) else ("squeeze",)
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
        return ("flatten", start, end - ndim if draw(st.booleans()) else end)
    if name == "contiguous":
        return (name,)
    if name == "index":
        d = _draw_dim(draw, ndim)
        least = 1 if draw(st.integers(0, 5)) else 0
        indices = draw(st.lists(st.integers(0, shape[d] - 1), min_size=least, max_size=3)) if shape[d] else []
        return ("index", d, tuple(indices))
    raise ValueError(f"unknown op {name!r}")


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
