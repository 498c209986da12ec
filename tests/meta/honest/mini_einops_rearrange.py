"""rearrange in the style of einops' own parser (a `ParsedExpression` per side: its `composition`, a list of
groups of axis names, the ellipsis as a marker, `identifiers`; `AnonymousAxis` for numbers), written afresh
for torch, as a student who has done rearrange and not yet reduce, repeat and einsum would hand in (those raise
NotImplementedError). Its rows must stand though the other operations' rows fall: its classic calls, its near
misses and its messages wait for rearrange's tests, not for einsum's. A parser of this kind may report the
shape as `tensor.shape` prints it, or forget that a "1" inside parentheses changes nothing: SLIPS.

Graded by tests/meta/test_honest.py."""

import functools
import keyword

import torch

UNFINISHED = ("reduce", "repeat", "einsum", "near misses raise like einops", "error messages",
              "any pattern: raise or match like einops", "a list of tensors", "each pattern is parsed once",
              "audit: does not use einops", "classic calls", "differential: generated patterns")
CASE = {"problem": "mini_einops", "score": 3.5 + 1.25 * 8 / 24 + 0.25 + 0.75 / 3 * (1 / 4 + 9 / 23) + 0.5 / 3
        + 0.5 / 4 + 0.5 / 4, "may_lose": UNFINISHED}
SAYS = ("UNFINISHED",)
SLIPS = {
    "shape_as_torch_size": ("{tuple(tensor.shape)}", "{tensor.shape}", ("error messages",)),
}

_ellipsis = "\u2026"  # "..." once read


class EinopsError(ValueError):
    pass


class AnonymousAxis:
    """A number in a pattern: an axis of its own with no name (rearrange takes only 1, which is no axis)."""

    def __init__(self, value: str) -> None:
        self.value = int(value)
        if self.value < 1:
            raise EinopsError(f"an axis of length {self.value} is not allowed")

    def __repr__(self) -> str:
        return f"{self.value}-axis"


class ParsedExpression:
    """One side of a pattern: `composition` lists its dimensions, each a list of axes (names, AnonymousAxis, or
    the ellipsis marker: "(... h)"), or the marker itself for a lone "..."; `identifiers` the names (and the
    marker) it uses."""

    def __init__(self, expression: str) -> None:
        self.has_ellipsis = False
        self.ellipsis_in_parenthesis = False
        self.identifiers: set = set()
        self.composition: list[list] = []
        if "." in expression.replace("...", ""):
            raise EinopsError("dots are allowed only as an ellipsis, '...'")
        if expression.count("...") > 1:
            raise EinopsError("an ellipsis may appear once on each side")
        expression = expression.replace("...", f" {_ellipsis} ")
        bracket_group = None

        def add_axis(token: str) -> None:
            nonlocal bracket_group
            if token == _ellipsis:
                self.has_ellipsis = True
                self.identifiers.add(_ellipsis)
                if bracket_group is None:
                    self.composition.append(_ellipsis)
                else:
                    bracket_group.append(_ellipsis)
                    self.ellipsis_in_parenthesis = True
                return
            if token.isdecimal():
                axis = AnonymousAxis(token)
                if axis.value == 1:  # a unit dimension: alone it is "()", in a group it changes nothing
                    if bracket_group is None:
                        self.composition.append([])
                    return
            else:
                if not token.isidentifier() or keyword.iskeyword(token) or token[0] == "_" or token[-1] == "_":
                    raise EinopsError(f"invalid axis name {token!r}")
                if token in self.identifiers:
                    raise EinopsError(f"axis {token!r} appears twice on one side")
                axis = token
            self.identifiers.add(axis)
            if bracket_group is None:
                self.composition.append([axis])
            else:
                bracket_group.append(axis)

        token = ""
        for char in expression:
            if char in "() ":
                if token:
                    add_axis(token)
                    token = ""
                if char == "(":
                    if bracket_group is not None:
                        raise EinopsError("nested parentheses are not allowed")
                    bracket_group = []
                elif char == ")":
                    if bracket_group is None:
                        raise EinopsError("a closing parenthesis without an opening one")
                    self.composition.append(bracket_group)
                    bracket_group = None
            elif char.isalnum() or char in ("_", _ellipsis):
                token += char
            else:
                raise EinopsError(f"unexpected character {char!r}")
        if bracket_group is not None:
            raise EinopsError("an opening parenthesis without a closing one")
        if token:
            add_axis(token)


_parses = 0


@functools.lru_cache(maxsize=256)
def _parse(pattern: str, operation: str) -> tuple[ParsedExpression, ParsedExpression]:
    global _parses
    _parses += 1
    if pattern.count("->") != 1:
        raise EinopsError("the pattern needs one '->'")
    left, right = (ParsedExpression(side) for side in pattern.split("->"))
    if left.ellipsis_in_parenthesis:
        raise EinopsError("an ellipsis inside parentheses on the left")
    if right.has_ellipsis and not left.has_ellipsis:
        raise EinopsError("an ellipsis on the right but not on the left")
    if any(isinstance(a, AnonymousAxis) for side in (left, right) for a in side.identifiers):
        raise EinopsError("rearrange takes no numbers but 1")
    difference = left.identifiers ^ right.identifiers
    if difference:
        raise EinopsError(f"axes on one side only: {sorted(map(str, difference))}")
    return left, right


def parse_count() -> int:
    return _parses


def _stack(tensor, pattern: str):
    if isinstance(tensor, torch.Tensor):
        return tensor
    if not isinstance(tensor, list) or not tensor:
        raise EinopsError(f'rearrange pattern "{pattern}": expected a tensor or a non-empty list of tensors')
    if not all(isinstance(t, torch.Tensor) for t in tensor):
        raise EinopsError(f'rearrange pattern "{pattern}": a list must hold tensors')
    shapes = [tuple(t.shape) for t in tensor]
    if len(set(shapes)) > 1:
        raise EinopsError(f'rearrange pattern "{pattern}" on a list of shapes {", ".join(map(str, shapes))}: '
                          "they do not stack")
    return torch.stack(tensor)


def rearrange(tensor, pattern, **axes_lengths):
    tensor = _stack(tensor, pattern)
    try:
        left, right = _parse(pattern, "rearrange")
        return _apply(tensor, left, right, axes_lengths)
    except EinopsError as error:
        lengths = f" with {axes_lengths}" if axes_lengths else ""
        raise EinopsError(f'rearrange pattern "{pattern}" on input shape {tuple(tensor.shape)}{lengths}: '
                          f"{error}") from None


def _apply(tensor, left: ParsedExpression, right: ParsedExpression, axes_lengths: dict):
    unknown = set(axes_lengths) - left.identifiers
    if unknown:
        raise EinopsError(f"lengths given for axes not in the pattern: {sorted(unknown)}")
    named = len(left.composition) - left.has_ellipsis
    if tensor.dim() < named or (not left.has_ellipsis and tensor.dim() != named):
        raise EinopsError(f"expected {named} dimensions, got {tensor.dim()}")
    extra = tensor.dim() - named
    ellipsis_axes = [f"{_ellipsis}{i}" for i in range(extra)]
    lengths, elementary = {}, []
    dims = iter(tensor.shape)
    for group in left.composition:
        if group == _ellipsis:
            for axis in ellipsis_axes:
                lengths[axis] = next(dims)
                elementary.append(axis)
            continue
        length = next(dims)
        to_infer = [a for a in group if a not in axes_lengths]
        if len(to_infer) > 1:
            raise EinopsError(f"cannot infer the lengths of {', '.join(to_infer)}")
        known = 1
        for axis in group:
            if axis in axes_lengths:
                known *= axes_lengths[axis]
                lengths[axis] = axes_lengths[axis]
        if to_infer:
            if known == 0 or length % known:
                raise EinopsError(f"{length} is not divisible by {known}")
            lengths[to_infer[0]] = length // known
        elif known != length:
            raise EinopsError(f"a dimension of {length} where the pattern says {known}")
        elementary += group
    order = [a for group in right.composition for axis in ([group] if group == _ellipsis else group)
             for a in (ellipsis_axes if axis == _ellipsis else [axis])]
    x = tensor.reshape([lengths[a] for a in elementary])
    x = x.permute([elementary.index(a) for a in order])
    shape = []
    for group in right.composition:
        if group == _ellipsis:  # alone, the ellipsis is its dimensions; in a group, their product
            shape += [lengths[a] for a in ellipsis_axes]
            continue
        size = 1
        for axis in group:
            for a in ellipsis_axes if axis == _ellipsis else [axis]:
                size *= lengths[a]
        shape.append(size)
    return x.reshape(shape)


def reduce(tensor, pattern, reduction, **axes_lengths):
    raise NotImplementedError("reduce")


def repeat(tensor, pattern, **axes_lengths):
    raise NotImplementedError("repeat")


def einsum(*tensors_and_pattern):
    raise NotImplementedError("einsum")


__all__ = ["EinopsError", "rearrange", "reduce", "repeat", "einsum", "parse_count"]
