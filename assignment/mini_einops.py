"""Problem (mini_einops): rearrange, reduce, repeat and einsum from scratch. See handout.md,
"Problem (mini_einops)".

Write einops' four operations with its calling convention and its grammar, using only torch tensor
methods (reshape, permute, sum, mean, amax, amin, prod, unsqueeze, expand, diagonal, multiplication, bmm
or @...), and `torch.stack` for a list input.
Do not import or mention the einops library in this file: it is the oracle the tests compare you with,
and the grader checks.

The grammar (one side of "left -> right"):
- An axis name is a Python identifier that neither starts nor ends with "_" ("b", "seq", "d_model",
  "h2"); names are separated by spaces (only the space character).
- "(h w)" is one dimension made of the axes h and w, h the slower one (row-major, as `reshape`): on the
  left it splits a dimension, on the right it merges axes. Parentheses do not nest.
- "()" and "1" are a dimension of length 1 (on the left the input dimension must have length 1; inside
  parentheses a 1 changes nothing).
- A number n > 1 is an axis of length n with no name ("(h 2)" on the left of `reduce`; "h w -> h w 3" in
  `repeat`). `rearrange` accepts no numbers but 1. Every occurrence of a number is its own axis.
- "..." (once per side) stands for all the dimensions the named ones leave over. On the left it may not
  be inside parentheses; on the right "(...)" merges them into one dimension. A right side may have "..."
  only if the left has.
- No axis name appears twice on one side.

The input of `rearrange`, `reduce` and `repeat`: a torch tensor, or a non-empty list of torch tensors of
one shape, which is stacked along a new first axis first (as `torch.stack(tensors)`; einops does the same):
`rearrange([x, y, z], "n h w -> h w n")` puts three images side by side in a last axis. The pattern, the
axis lengths and the error messages are then about the stacked tensor (its shape is the one named). An
empty list, a list of tensors of different shapes, or an input that is neither raises `EinopsError`
naming the pattern (and, for the list, its tensors' shapes). `einsum` takes tensors only.

The rules of each operation:
- `rearrange`: the same axes on both sides (the ellipsis included); it only moves, splits and merges.
- `reduce`: every axis on the right is on the left; left axes missing on the right (including the
  ellipsis' dimensions when the right has no "...") are reduced with `reduction`, one of "sum", "mean",
  "max", "min", "prod" (and "any", "all" for bool tensors). "mean" needs a floating-point tensor when any
  axis is reduced.
- `repeat`: every axis on the left is on the right; right axes missing on the left are new, with the
  length given as a keyword (`c=3`) or as a number in the pattern; the input is copied along them.
- `axes_lengths` keywords name axes of the pattern: an axis whose length cannot be read off the input
  (one of two in a split "(h w)") needs one; a length given for an axis that can be read off is checked.
  At most one axis per split group may be left to infer, and the dimension must divide exactly.
- `einsum(*tensors, pattern)`: tensors first, then a pattern like "b i d, b j d -> b i j", one
  comma-separated input per tensor, and "->" always. Axis names as above (and "_"), "..." allowed, no
  parentheses, "()", "1" or numbers (einops itself happens to read a one-axis group "(b)" as b; the tests
  never pass one, so refusing it or reading it as einops does are both right). An axis name in the output
  survives; every axis that is in no output is summed over (the sum of the product of all inputs). An axis
  repeated in one input takes the diagonal; an axis of length 1 broadcasts against the same axis
  elsewhere; "..." dimensions broadcast right-aligned across inputs and are summed if the output has no
  "...". Every output axis must be in some input, and appear in the output once.

Errors: every pattern, shape or axis length that einops rejects raises `EinopsError` (a `ValueError`),
never another exception type. Its message names the pattern verbatim and each input's shape as a Python
tuple (`str(tuple(tensor.shape))`, e.g. "(2, 3, 4)"), then what is wrong:

    rearrange pattern "b (h w) -> b h w" on input shape (2, 12): cannot infer the lengths of h, w

Every input einops accepts gives einops' result: the same shape, dtype and values.

Out of scope (einops accepts them, these functions need not; the reference raises `EinopsError`):
arrays of other libraries (numpy, jax, ...) and lists of them; a callable as the reduction; the names
"rearrange" and "repeat" as a reduction (einops' internal spelling of those operations); and einops'
own exception types and messages for einsum patterns it does not support (NotImplementedError or
RuntimeError there, `EinopsError` here, with your own message).

Caching: a pattern is parsed once. Parse "left -> right" for one kind of operation ("rearrange",
"reduce", "repeat" or "einsum") in one function cached with `functools.lru_cache`, and count its
(uncached) runs in a module-level counter that `parse_count()` returns. Using a pattern again, on any
shape, with any reduction and any axis lengths, must not parse it again. (Caching the per-shape work too
is what makes a warm call cheap.)
"""

from jaxtyping import Shaped
from torch import Tensor


class EinopsError(ValueError):
    """A pattern, shape or axis length that einops rejects."""


def parse_count() -> int:
    """How many times a pattern has been parsed (the cached parser's cache misses) since this module was
    imported: one per distinct (pattern, kind of operation), however many calls and shapes use it."""
    raise NotImplementedError("parse_count")


def rearrange(
    tensor: Shaped[Tensor, "..."] | list[Shaped[Tensor, "..."]], pattern: str, **axes_lengths: int
) -> Shaped[Tensor, "..."]:
    """Reorder, split and merge the dimensions of `tensor` as `pattern` says, like `einops.rearrange`.

    rearrange(x, "b c h w -> b (h w) c"); rearrange(x, "b (h w) -> b h w", h=4);
    rearrange(x, "... d -> d ...")."""
    raise NotImplementedError("rearrange")


def reduce(
    tensor: Shaped[Tensor, "..."] | list[Shaped[Tensor, "..."]], pattern: str, reduction: str, **axes_lengths: int
) -> Shaped[Tensor, "..."]:
    """Rearrange `tensor`, reducing the axes that are not on the right with `reduction`, like
    `einops.reduce`.

    reduce(x, "b c (h 2) (w 2) -> b c h w", "max") (2x2 max-pooling); reduce(x, "b c h w -> b c", "mean");
    reduce(x, "b ... -> b", "sum")."""
    raise NotImplementedError("reduce")


def repeat(
    tensor: Shaped[Tensor, "..."] | list[Shaped[Tensor, "..."]], pattern: str, **axes_lengths: int
) -> Shaped[Tensor, "..."]:
    """Rearrange `tensor`, copying it along the new axes on the right, like `einops.repeat`.

    repeat(x, "h w -> h w c", c=3); repeat(x, "h w -> (h 2) (w 2)") (nearest-neighbour upsampling: each
    row twice, next to itself); repeat(x, "h w -> (r h) w", r=2) (the whole image twice)."""
    raise NotImplementedError("repeat")


def einsum(*tensors_and_pattern: Shaped[Tensor, "..."] | str) -> Shaped[Tensor, "..."]:
    """Sum of products over the axes not in the output, like `einops.einsum`: tensors first, then the
    pattern.

    einsum(q, k, "b i d, b j d -> b i j"); einsum(x, "i i ->") (the trace).

    The tests use small tensors, where multiplying the inputs out on the union of their axes and then
    summing is fine; the handout says how to contract with matrix products instead, so that it scales."""
    raise NotImplementedError("einsum")


__all__ = ["EinopsError", "rearrange", "reduce", "repeat", "einsum", "parse_count"]
