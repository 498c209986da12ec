"""Problem (mini_einops): rearrange, reduce, repeat and einsum from scratch. Reference solution; the spec is
in assignment/mini_einops.py.

Two stages, each cached:
- `_parse(pattern, kind)`: the pattern's text -> its structure, checked against the operation's rules
  (counted by `parse_count`);
- `_plan(...)`: that structure and one input shape (and the given axis lengths) -> the concrete
  reshape / permute / reduce / expand / reshape steps.
Applying a plan is a handful of tensor-method calls.
"""

import functools
from dataclasses import dataclass

import torch
from jaxtyping import Shaped
from torch import Tensor

ELLIPSIS = "…"  # the ellipsis, once parsed: one character, so it cannot clash with an axis name
KINDS = ("rearrange", "repeat", "reduce", "einsum")
REDUCTIONS = ("sum", "mean", "max", "min", "prod", "any", "all")
_FLOAT_TYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_LETTERS = 52  # einsum axes (einops maps them to single letters)


class EinopsError(ValueError):
    """A pattern, shape or axis length that einops rejects."""


_parses = 0


def parse_count() -> int:
    return _parses


# -- parsing --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Anonymous:
    """A numeric axis such as the 2 in "(h 2)"; each occurrence is its own axis."""

    length: int
    id: int


@dataclass(frozen=True)
class Side:
    """One side of a pattern: its groups, each a tuple of axes (a name, an `Anonymous`, or `ELLIPSIS`).
    A lone axis is a group of one; "()" and "1" are empty groups."""

    groups: tuple[tuple, ...]
    has_ellipsis: bool
    ellipsis_grouped: bool  # the ellipsis is inside parentheses

    @property
    def axes(self) -> list:
        return [axis for group in self.groups for axis in group]

    @property
    def names(self) -> set:
        return set(self.axes)


def _check_name(name: str, allow_underscore: bool = False) -> None:
    if not name.isidentifier():
        raise EinopsError(f"invalid axis name {name!r}: not a Python identifier")
    if (name[0] == "_" or name[-1] == "_") and not (allow_underscore and name == "_"):
        raise EinopsError(f"invalid axis name {name!r}: it may not start or end with an underscore")


def _tokens(text: str) -> list[str]:
    """One side split into "(", ")" and axis tokens (names, numbers, the ellipsis)."""
    tokens, token = [], ""
    for char in text:
        if char in "() ":
            if token:
                tokens.append(token)
            token = ""
            if char != " ":
                tokens.append(char)
        elif char.isalnum() or char in ("_", ELLIPSIS):
            token += char
        else:
            raise EinopsError(f"unexpected character {char!r} in {text.strip()!r}")
    if token:
        tokens.append(token)
    return tokens


def _parse_side(text: str, counter: list, *, einsum: bool = False, duplicates: bool = False) -> Side:
    if "." in text:
        if text.count("...") != 1 or text.count(".") != 3:
            raise EinopsError(f"{text.strip()!r}: dots only in one ellipsis '...' per side")
        text = text.replace("...", ELLIPSIS)
    groups: list[tuple] = []
    group: list | None = None  # the open parenthesis' axes
    seen: set = set()
    ellipsis_grouped = False
    for token in _tokens(text):
        if token == "(":
            if group is not None:
                raise EinopsError(f"nested parentheses in {text.strip()!r}")
            group = []
            continue
        if token == ")":
            if group is None:
                raise EinopsError(f"unbalanced parentheses in {text.strip()!r}")
            groups.append(tuple(group))
            group = None
            continue
        if token.isdecimal():
            if int(token) == 0:
                raise EinopsError(f"an axis of length 0 in {text.strip()!r}")
            if int(token) == 1:  # a unit axis: an empty group alone, nothing inside parentheses
                if group is None:
                    groups.append(())
                continue
            axis = Anonymous(int(token), counter[0])  # numbers are never duplicates: each is its own axis
            counter[0] += 1
        else:
            if token in seen and not duplicates and not (einsum and token == "_"):
                raise EinopsError(f"axis {token!r} appears twice in {text.strip()!r}")
            seen.add(token)
            if token == ELLIPSIS:
                ellipsis_grouped = group is not None
            else:
                _check_name(token, allow_underscore=einsum)
            axis = token
        if group is None:
            groups.append((axis,))
        else:
            group.append(axis)
    if group is not None:
        raise EinopsError(f"unbalanced parentheses in {text.strip()!r}")
    return Side(tuple(groups), ELLIPSIS in seen, ellipsis_grouped)


def _names(side: Side) -> set:
    return {a for a in side.axes if not isinstance(a, Anonymous)}


@dataclass(frozen=True)
class Pattern:
    left: Side
    right: Side


@dataclass(frozen=True)
class EinsumPattern:
    inputs: tuple[tuple[str, ...], ...]  # per operand: its axis names in order, ELLIPSIS where it has one
    output: tuple[str, ...]


@functools.lru_cache(maxsize=512)
def _parse(pattern: str, kind: str) -> Pattern | EinsumPattern:
    """The structure of `pattern` for one kind of operation ("rearrange", "repeat", "reduce", "einsum")."""
    global _parses
    _parses += 1
    if pattern.count("->") != 1:
        raise EinopsError("a pattern needs exactly one '->'")
    left_text, right_text = pattern.split("->")
    if kind == "einsum":
        return _parse_einsum(left_text, right_text)
    counter = [0]
    left, right = _parse_side(left_text, counter), _parse_side(right_text, counter)
    if right.has_ellipsis and not left.has_ellipsis:
        raise EinopsError("an ellipsis on the right side but not on the left")
    if left.ellipsis_grouped:
        raise EinopsError("an ellipsis inside parentheses on the left side")
    only_left, only_right = left.names - right.names, right.names - left.names
    if kind == "rearrange":
        if any(isinstance(a, Anonymous) for a in left.axes + right.axes):
            raise EinopsError("numeric axes (other than 1) are not allowed in rearrange")
        if only_left or only_right:
            raise EinopsError(f"axes on one side only: {_show(only_left | only_right)}")
    elif kind == "repeat":
        if only_left:
            raise EinopsError(f"axes on the left side of repeat but not on the right: {_show(only_left)}")
    elif only_right:
        raise EinopsError(f"axes on the right side of reduce but not on the left: {_show(only_right)}")
    return Pattern(left, right)


def _show(axes) -> str:
    return ", ".join(sorted(str(a.length) if isinstance(a, Anonymous) else "..." if a == ELLIPSIS else a
                            for a in axes))


def _einsum_axes(side: Side) -> tuple[str, ...]:
    axes = []
    for group in side.groups:
        if group == (ELLIPSIS,) and not side.ellipsis_grouped:
            axes.append(ELLIPSIS)
            continue
        if len(group) != 1:
            raise EinopsError("einsum takes single axes: no '()', '1' or parenthesised groups")
        if isinstance(group[0], Anonymous):
            raise EinopsError("einsum takes no numeric axes")
        axes.append("(...)" if group[0] == ELLIPSIS else group[0])  # einops' quirk: "(...)" is a name
    return tuple(axes)


def _parse_einsum(left_text: str, right_text: str) -> EinsumPattern:
    sides = [_parse_side(text, [0], einsum=True, duplicates=True) for text in left_text.split(",")]
    inputs = tuple(_einsum_axes(side) for side in sides)
    output = _einsum_axes(_parse_side(right_text, [0], einsum=True))
    known = {a for axes in inputs for a in axes if a != ELLIPSIS}
    if len(known) > _LETTERS:
        raise EinopsError(f"more than {_LETTERS} axes in einsum")
    unknown = {a for a in output if a != ELLIPSIS} - known
    if unknown:
        raise EinopsError(f"axes in the output but in no input: {_show(unknown)}")
    if len(set(output)) != len(output):
        raise EinopsError("an axis appears twice in the output")
    return EinsumPattern(inputs, output)


# -- rearrange, reduce, repeat ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Plan:
    """The steps for one input shape; None where a step is not needed."""

    init_shape: tuple[int, ...] | None  # reshape: each elementary axis its own dimension
    permutation: tuple[int, ...] | None  # kept axes in the output's order, then the reduced ones
    reduced: tuple[int, ...]  # the dimensions to reduce (the trailing ones after the permutation)
    added: tuple[tuple[int, int], ...]  # (position, length) of new axes (repeat), ascending positions
    final_shape: tuple[int, ...] | None  # reshape into the output's groups


def _product(values) -> int:
    result = 1
    for v in values:
        result *= v
    return result


def _expand(side: Side, dots: tuple[str, ...]) -> list[tuple]:
    """The side's groups with the ellipsis replaced by the names of the dimensions it covers."""
    groups = []
    for group in side.groups:
        if group == (ELLIPSIS,) and not side.ellipsis_grouped:
            groups.extend((d,) for d in dots)
        else:
            groups.append(tuple(a for g in group for a in (dots if g == ELLIPSIS else (g,))))
    return groups


@functools.lru_cache(maxsize=4096)
def _plan(pattern: str, kind: str, shape: tuple[int, ...], axes_lengths: tuple[tuple[str, int], ...]) -> Plan:
    parsed = _parse(pattern, kind)
    left, right = parsed.left, parsed.right
    # Expand the ellipsis into as many axes as the input has dimensions to spare.
    n_fixed = len(left.groups) - left.has_ellipsis
    if left.has_ellipsis:
        if len(shape) < n_fixed:
            raise EinopsError(f"expected at least {n_fixed} dimensions, got {len(shape)}")
        dots = tuple(f"{ELLIPSIS}{i}" for i in range(len(shape) - n_fixed))
    elif len(shape) != n_fixed:
        raise EinopsError(f"expected {n_fixed} dimensions, got {len(shape)}")
    else:
        dots = ()

    left_groups, right_groups = _expand(left, dots), _expand(right, dots)
    left_axes = [a for g in left_groups for a in g]
    right_axes = [a for g in right_groups for a in g]
    all_axes = set(left_axes) | set(right_axes)

    lengths: dict = {a: a.length for a in all_axes if isinstance(a, Anonymous)}
    for name, length in axes_lengths:
        _check_name(name)
        if name not in all_axes:
            raise EinopsError(f"axis {name!r} was given a length but is not in the pattern")
        lengths[name] = length
    for group, dim in zip(left_groups, shape, strict=True):
        unknown = [a for a in group if a not in lengths]
        known = _product(lengths[a] for a in group if a in lengths)
        if len(unknown) > 1:
            raise EinopsError(f"cannot infer the lengths of {_show(unknown)}: give all but one")
        if not unknown and dim != known:
            raise EinopsError(f"dimension of length {dim} does not match {known}")
        if unknown:
            if known == 0 or dim % known:
                raise EinopsError(f"dimension of length {dim} does not split into chunks of {known}")
            lengths[unknown[0]] = dim // known
    missing = [a for a in right_axes if a not in lengths]
    if missing:
        raise EinopsError(f"new axes without a length: {_show(missing)}")

    kept = [a for a in right_axes if a in set(left_axes)]
    reduced = [a for a in left_axes if a not in set(right_axes)]
    permutation = tuple(left_axes.index(a) for a in kept + reduced)
    added = tuple((i, lengths[a]) for i, a in enumerate(right_axes) if a not in set(left_axes))
    init_shape = tuple(lengths[a] for a in left_axes)
    final_shape = tuple(_product(lengths[a] for a in g) for g in right_groups)
    return Plan(
        init_shape=None if all(len(g) == 1 for g in left_groups) else init_shape,
        permutation=None if permutation == tuple(range(len(permutation))) else permutation,
        reduced=tuple(range(len(kept), len(left_axes))),
        added=added,
        final_shape=None if all(len(g) == 1 for g in right_groups) else final_shape,
    )


def _reduce(x: Tensor, reduction: str, dims: tuple[int, ...]) -> Tensor:
    if reduction == "sum":
        return x.sum(dim=dims)
    if reduction == "mean":
        if x.dtype not in _FLOAT_TYPES:
            raise EinopsError(f"mean of a {x.dtype} tensor (mean needs a floating-point dtype)")
        return x.mean(dim=dims)
    if reduction == "max":
        return x.amax(dim=dims)
    if reduction == "min":
        return x.amin(dim=dims)
    for dim in sorted(dims, reverse=True):  # prod, any, all: one dimension at a time
        x = getattr(x, reduction)(dim=dim)
    return x


def _apply(tensor: Tensor, plan: Plan, reduction: str) -> Tensor:
    x = tensor
    if plan.init_shape is not None:
        x = x.reshape(plan.init_shape)
    if plan.permutation is not None:
        x = x.permute(plan.permutation)
    if plan.reduced:
        x = _reduce(x, reduction, plan.reduced)
    if plan.added:
        sizes = list(x.shape)
        for position, length in plan.added:
            x = x.unsqueeze(position)
            sizes.insert(position, length)
        x = x.expand(sizes)
    if plan.final_shape is not None:
        x = x.reshape(plan.final_shape)
    return x


def _context(what: str, pattern: str, shapes: list) -> str:
    return f'{what} pattern "{pattern}" on input shape{"s" if len(shapes) > 1 else ""} ' + ", ".join(
        str(tuple(s)) for s in shapes)


def _stacked(tensors: list, pattern: str, what: str) -> Tensor:
    """A list of tensors as one tensor, stacked along a new first axis (as einops does)."""
    if not tensors:
        raise EinopsError(f'{what} pattern "{pattern}" on an empty list: there is nothing to stack')
    if not all(isinstance(t, Tensor) for t in tensors):
        raise EinopsError(f'{what} pattern "{pattern}" on a list of {", ".join(type(t).__name__ for t in tensors)}: '
                          "a list input must hold torch tensors")
    if len({tuple(t.shape) for t in tensors}) > 1:
        raise EinopsError(f"{_context(what, pattern, [t.shape for t in tensors])} (a list): "
                          "tensors of different shapes do not stack")
    return torch.stack(tensors)


def _transform(tensor: Tensor | list, pattern: str, kind: str, reduction: str, axes_lengths: dict) -> Tensor:
    what = f"{reduction}-reduce" if kind == "reduce" else kind
    if not isinstance(tensor, Tensor):
        if not isinstance(tensor, list):
            raise EinopsError(f'{what} pattern "{pattern}" on a {type(tensor).__name__}: expected a torch tensor '
                              "or a list of them")
        tensor = _stacked(tensor, pattern, what)
    try:
        if kind == "reduce" and reduction not in REDUCTIONS:
            raise EinopsError(f"unknown reduction {reduction!r}; expected one of {', '.join(REDUCTIONS)}")
        plan = _plan(pattern, kind, tuple(tensor.shape), tuple(axes_lengths.items()))
        return _apply(tensor, plan, reduction)
    except EinopsError as error:
        lengths = f" with axis lengths {axes_lengths}" if axes_lengths else ""
        raise EinopsError(f"{_context(what, pattern, [tensor.shape])}{lengths}: {error}") from None


def rearrange(
    tensor: Shaped[Tensor, "..."] | list[Shaped[Tensor, "..."]], pattern: str, **axes_lengths: int
) -> Shaped[Tensor, "..."]:
    return _transform(tensor, pattern, "rearrange", "", axes_lengths)


def reduce(
    tensor: Shaped[Tensor, "..."] | list[Shaped[Tensor, "..."]], pattern: str, reduction: str, **axes_lengths: int
) -> Shaped[Tensor, "..."]:
    return _transform(tensor, pattern, "reduce", reduction, axes_lengths)


def repeat(
    tensor: Shaped[Tensor, "..."] | list[Shaped[Tensor, "..."]], pattern: str, **axes_lengths: int
) -> Shaped[Tensor, "..."]:
    return _transform(tensor, pattern, "repeat", "", axes_lengths)


# -- einsum -------------------------------------------------------------------------------------------
# Not a broadcast product then a sum (that materialises every axis of every input at once: a b i j d
# tensor for "b i d, b j d -> b i j"), but contractions, as tensordot does: each input's own diagonals
# taken and its private axes summed, then the inputs multiplied in pairs, left to right, each pair one
# batched matrix product (batch, free, contracted) @ (batch, contracted, free).

@dataclass(frozen=True)
class EinsumOperand:
    """How one input enters the contraction: the diagonals to take (pairs of dimensions, in turn; each
    drops both and appends their diagonal), then the dimensions to sum away, leaving dimensions `axes`.

    Summed: the axes in no other input and not in the output, and the length-1 dimensions that broadcast
    against a longer axis elsewhere (summing a length-1 dimension only drops it: the input is constant
    along that axis, the other input's length prevails)."""

    diagonals: tuple[tuple[int, int], ...]
    summed: tuple[int, ...]
    axes: tuple[str, ...]


@dataclass(frozen=True)
class Contraction:
    """One batched matrix product of the running result (left) and the next input (right). Their axes
    are sorted into batch axes (in both, needed later), contracted ones (in both, not needed later) and
    free ones (in one only): left is permuted to (batch, free, contracted) and reshaped to three
    dimensions, right to (batch, contracted, free); their product is reshaped to the batch, left free
    and right free axes, which are `axes`. None where a step would change nothing (a warm call on small
    tensors is mostly the cost of these calls)."""

    left_permutation: tuple[int, ...] | None
    left_shape: tuple[int, int, int] | None
    right_permutation: tuple[int, ...] | None
    right_shape: tuple[int, int, int] | None
    result_shape: tuple[int, ...] | None
    axes: tuple[str, ...]


@dataclass(frozen=True)
class EinsumPlan:
    operands: tuple[EinsumOperand, ...]
    contractions: tuple[Contraction, ...]  # one per input after the first
    output_permutation: tuple[int, ...] | None  # the last result's dimensions into the output's order


def _broadcast(sizes: list[int], what: str) -> int:
    wide = {s for s in sizes if s != 1}
    if len(wide) > 1:
        raise EinopsError(f"{what} has lengths {sorted(wide)} that do not broadcast")
    return wide.pop() if wide else 1


def _named_dimensions(parsed: EinsumPattern, shapes) -> tuple[list[list[str]], list[str]]:
    """Each input's dimensions by name (the ellipsis expanded into right-aligned names "…k", as many as
    the input has dimensions to spare), and the output's names likewise."""
    if len(parsed.inputs) != len(shapes):
        raise EinopsError(f"the pattern has {len(parsed.inputs)} inputs, got {len(shapes)} tensors")
    spare = []
    for axes, shape in zip(parsed.inputs, shapes, strict=True):
        n_fixed = len(axes) - (ELLIPSIS in axes)
        if len(shape) < n_fixed or (ELLIPSIS not in axes and len(shape) != n_fixed):
            raise EinopsError(f"input {' '.join(axes).replace(ELLIPSIS, '...')!r} does not fit shape {shape}")
        spare.append(len(shape) - n_fixed)
    dots = [f"{ELLIPSIS}{i}" for i in range(max(spare))]
    inputs = [[name for axis in axes for name in (dots[len(dots) - k:] if axis == ELLIPSIS else [axis])]
              for axes, k in zip(parsed.inputs, spare, strict=True)]
    output = [name for axis in parsed.output for name in (dots if axis == ELLIPSIS else [axis])]
    return inputs, output


def _axis_lengths(inputs: list[list[str]], shapes) -> dict[str, int]:
    """Every axis' length, broadcast across the inputs; a repeated axis (a diagonal) has one length in
    its input."""
    lengths: dict[str, list[int]] = {}
    for names, shape in zip(inputs, shapes, strict=True):
        own: dict[str, set[int]] = {}
        for name, size in zip(names, shape, strict=True):
            own.setdefault(name, set()).add(size)
        for name, sizes in own.items():
            if len(sizes) > 1:
                raise EinopsError(f"axis {name!r} repeats in one input with different lengths {sorted(sizes)}")
            lengths.setdefault(name, []).append(min(sizes))
    return {name: _broadcast(sizes, f"axis {name!r}".replace(ELLIPSIS, "..."))
            for name, sizes in lengths.items()}


def _diagonals(names: list[str]) -> tuple[tuple[tuple[int, int], ...], list[str]]:
    """The (i, j) pairs for `x.diagonal(dim1=i, dim2=j)`, in turn, that leave each name once; and the
    names of the dimensions left."""
    names, pairs = list(names), []
    while len(set(names)) != len(names):
        i = next(i for i, n in enumerate(names) if names.count(n) > 1)
        j = names.index(names[i], i + 1)
        pairs.append((i, j))
        name = names.pop(j)
        names.pop(i)
        names.append(name)
    return tuple(pairs), names


def _arrangement(axes: list[str], order: list[str], lengths: dict, groups: list[list[str]]):
    """The permutation that puts dimensions `axes` in `order`, and the shape that merges `order` into
    `groups`; each None if it changes nothing."""
    permutation = tuple(axes.index(a) for a in order)
    shape = tuple(_product(lengths[a] for a in group) for group in groups)
    unchanged = tuple(lengths[a] for a in order)
    return (None if permutation == tuple(range(len(axes))) else permutation,
            None if shape == unchanged else shape)


def _contraction(left: list[str], right: list[str], needed: set, lengths: dict) -> Contraction:
    """The batched matrix product of dimensions named `left` and `right`, keeping the axes in `needed`
    (the output's and the later inputs')."""
    batch = [a for a in left if a in right and a in needed]
    contracted = [a for a in left if a in right and a not in needed]
    left_free = [a for a in left if a not in right]
    right_free = [a for a in right if a not in left]
    left_permutation, left_shape = _arrangement(left, batch + left_free + contracted, lengths,
                                                [batch, left_free, contracted])
    right_permutation, right_shape = _arrangement(right, batch + contracted + right_free, lengths,
                                                  [batch, contracted, right_free])
    result = batch + left_free + right_free
    result_shape = tuple(lengths[a] for a in result)
    product_shape = tuple(_product(lengths[a] for a in group) for group in (batch, left_free, right_free))
    return Contraction(left_permutation, left_shape, right_permutation, right_shape,
                       None if result_shape == product_shape else result_shape, tuple(result))


def _operands(inputs: list[list[str]], shapes, output: list[str], lengths: dict) -> list[EinsumOperand]:
    """Each input's diagonals and the dimensions it sums on its own (see `EinsumOperand`)."""
    taken = [_diagonals(names) for names in inputs]
    present = []  # the axes each input brings to the products: not a length 1 broadcast against a longer one
    for names, shape in zip(inputs, shapes, strict=True):
        own = dict(zip(names, shape, strict=True))
        present.append([a for a in own if own[a] != 1 or lengths[a] == 1])
    operands = []
    for i, (pairs, names) in enumerate(taken):
        elsewhere = set(output).union(*(axes for j, axes in enumerate(present) if j != i))
        kept = [a for a in names if a in present[i] and a in elsewhere]  # in the order of x's dimensions
        summed = tuple(d for d, a in enumerate(names) if a not in kept)
        operands.append(EinsumOperand(pairs, summed, tuple(kept)))
    return operands


@functools.lru_cache(maxsize=4096)
def _einsum_plan(pattern: str, shapes: tuple[tuple[int, ...], ...]) -> EinsumPlan:
    inputs, output = _named_dimensions(_parse(pattern, "einsum"), shapes)
    lengths = _axis_lengths(inputs, shapes)
    operands = _operands(inputs, shapes, output, lengths)
    contractions, axes = [], list(operands[0].axes)
    for i, operand in enumerate(operands[1:], start=1):
        needed = set(output).union(*(later.axes for later in operands[i + 1:]))
        contractions.append(_contraction(axes, list(operand.axes), needed, lengths))
        axes = list(contractions[-1].axes)
    output_permutation, _ = _arrangement(axes, output, lengths, [[a] for a in output])
    return EinsumPlan(tuple(operands), tuple(contractions), output_permutation)


def _prepare(tensor: Tensor, operand: EinsumOperand, dtype: torch.dtype) -> Tensor:
    """One input in the common dtype, its diagonals taken and its own axes summed (in that dtype)."""
    x = tensor if tensor.dtype == dtype else tensor.to(dtype)
    for i, j in operand.diagonals:
        x = x.diagonal(dim1=i, dim2=j)
    if operand.summed:
        x = x.sum(dim=operand.summed, dtype=dtype)
    return x


def _arrange(x: Tensor, permutation: tuple[int, ...] | None, shape: tuple[int, ...] | None) -> Tensor:
    """x permuted, then reshaped; a step that is None is skipped."""
    if permutation is not None:
        x = x.permute(permutation)
    return x if shape is None else x.reshape(shape)


def _matmul(left: Tensor, right: Tensor) -> Tensor:
    """The batched matrix product of (batch, m, k) and (batch, k, n) tensors. With k = 1 it is the
    broadcast product, which `*` computes faster (an outer product); bool tensors, which `bmm` does not
    take, get the "or" of the "and"s (through int64 counts)."""
    if left.shape[2] == 1:
        return left * right
    if left.dtype == torch.bool:
        return left.long().bmm(right.long()) != 0
    return left.bmm(right)


def _contract(left: Tensor, right: Tensor, step: Contraction) -> Tensor:
    left = _arrange(left, step.left_permutation, step.left_shape)
    right = _arrange(right, step.right_permutation, step.right_shape)
    return _arrange(_matmul(left, right), None, step.result_shape)


def einsum(*tensors_and_pattern: Shaped[Tensor, "..."] | str) -> Shaped[Tensor, "..."]:
    if len(tensors_and_pattern) < 2 or not isinstance(tensors_and_pattern[-1], str):
        raise EinopsError("einsum takes one or more tensors, then the pattern")
    *tensors, pattern = tensors_and_pattern
    if not all(isinstance(t, Tensor) for t in tensors):
        raise EinopsError("einsum takes one or more tensors, then the pattern")
    try:
        plan = _einsum_plan(pattern, tuple(tuple(t.shape) for t in tensors))
    except EinopsError as error:
        raise EinopsError(f"{_context('einsum', pattern, [t.shape for t in tensors])}: {error}") from None
    dtype = tensors[0].dtype
    if any(t.dtype != dtype for t in tensors):  # promoted as "*" would promote them
        dtype = functools.reduce(torch.promote_types, [t.dtype for t in tensors])
    result = _prepare(tensors[0], plan.operands[0], dtype)
    for tensor, operand, step in zip(tensors[1:], plan.operands[1:], plan.contractions, strict=True):
        result = _contract(result, _prepare(tensor, operand, dtype), step)
    return _arrange(result, plan.output_permutation, None)


__all__ = ["EinopsError", "rearrange", "reduce", "repeat", "einsum", "parse_count"]
