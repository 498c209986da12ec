"""Problem (einops_practice): einsum, reduce, rearrange. See handout.md, "Problem (einops_practice)".

Each function below is what index-heavy PyTorch writes with `view`, `transpose`, `permute`, `unsqueeze`
and `sum(dim=...)`. Write each one with the einops functions imported below (`einsum`, `rearrange`,
`reduce`, `repeat`), naming every dimension: the tests check, in the source and while the function
runs, that each function calls einops. Plain torch is fine for what einops does not do (softmax,
arithmetic, `math.sqrt`).

Conventions:
- Dimension names are those of the annotations. A composite dimension "(heads d_head)" is heads-major:
  feature j of head i is at index i * d_head + j, as `x.view(..., heads, d_head)` reads it.
- Weights multiply from the right: a linear map from d_in to d_out is `x @ w` with w: (d_in, d_out).
- Inputs may be non-contiguous (einops handles that; `.view` would not).
"""

import math  # noqa: F401 - for the 1/sqrt(d_k) of attention

import torch  # noqa: F401 - softmax
from einops import einsum, rearrange, reduce, repeat  # noqa: F401 - what every solution uses
from jaxtyping import Float
from torch import Tensor


def matmul(a: Float[Tensor, "seq1 hidden"], b: Float[Tensor, "hidden seq2"]) -> Float[Tensor, "seq1 seq2"]:
    """The matrix product a @ b, as an einsum over the named dimensions."""
    raise NotImplementedError("matmul")


def attention_scores(
    q: Float[Tensor, "*batch seq_q d_k"], k: Float[Tensor, "*batch seq_k d_k"]
) -> Float[Tensor, "*batch seq_q seq_k"]:
    """Scaled dot-product scores q . k / sqrt(d_k) for every query and key, over any leading batch
    dimensions (use `...`): score[..., i, j] = sum_d q[..., i, d] * k[..., j, d] / sqrt(d_k)."""
    raise NotImplementedError("attention_scores")


def sum_hidden(x: Float[Tensor, "*batch hidden"]) -> Float[Tensor, "*batch"]:
    """The sum over the last (hidden) dimension, whatever the leading dimensions."""
    raise NotImplementedError("sum_hidden")


def split_heads(x: Float[Tensor, "batch seq d_model"], heads: int) -> Float[Tensor, "batch heads seq d_head"]:
    """Split d_model = (heads d_head) into `heads` heads and move them before seq."""
    raise NotImplementedError("split_heads")


def merge_heads(x: Float[Tensor, "batch heads seq d_head"]) -> Float[Tensor, "batch seq d_model"]:
    """The inverse of `split_heads`: heads back after seq, merged as (heads d_head)."""
    raise NotImplementedError("merge_heads")


def per_head_linear(
    x: Float[Tensor, "batch seq d_in"], w: Float[Tensor, "heads hidden1 hidden2"]
) -> Float[Tensor, "batch seq d_out"]:
    """The lecture's split -> einsum -> merge: d_in is (heads hidden1); head i's slice of x is multiplied
    by its own matrix w[i] (hidden1 x hidden2), and the heads are merged again as (heads hidden2).
    `heads` is w.shape[0]."""
    raise NotImplementedError("per_head_linear")


def patchify(
    images: Float[Tensor, "batch channels height width"], patch_h: int, patch_w: int
) -> Float[Tensor, "batch patches patch_dim"]:
    """Cut each image into patch_h x patch_w patches (as a vision transformer does) and flatten each.

    Patches are numbered row by row over the grid ((grid_h grid_w), grid_h = height / patch_h); each
    patch is flattened as (patch_h patch_w channels): pixel by pixel, all channels of a pixel together.
    height and width are multiples of the patch sizes."""
    raise NotImplementedError("patchify")


def unpatchify(
    patches: Float[Tensor, "batch patches patch_dim"], height: int, width: int, patch_h: int, patch_w: int
) -> Float[Tensor, "batch channels height width"]:
    """The inverse of `patchify` for images of height x width (channels = patch_dim / (patch_h * patch_w))."""
    raise NotImplementedError("unpatchify")


def pool2d(
    x: Float[Tensor, "batch channels height width"], kernel_h: int, kernel_w: int, reduction: str
) -> Float[Tensor, "batch channels out_h out_w"]:
    """Non-overlapping 2-D pooling with a kernel_h x kernel_w window (stride = kernel), `reduction` "max"
    or "mean". height and width are multiples of the kernel sizes."""
    raise NotImplementedError("pool2d")


def pairwise_sq_distances(x: Float[Tensor, "n d"], y: Float[Tensor, "m d"]) -> Float[Tensor, "n m"]:
    """Squared Euclidean distance between every row of x and every row of y: |x_i|^2 + |y_j|^2 - 2 x_i.y_j,
    without building the (n, m, d) difference tensor."""
    raise NotImplementedError("pairwise_sq_distances")


def repeat_kv(
    kv: Float[Tensor, "batch kv_heads seq d_head"], n_rep: int
) -> Float[Tensor, "batch heads seq d_head"]:
    """Grouped-query attention: each of the kv_heads key (or value) heads serves n_rep query heads, so
    query head i reads kv head i // n_rep. Repeat each kv head n_rep times, next to itself:
    heads = (kv_heads n_rep)."""
    raise NotImplementedError("repeat_kv")


def multihead_attention(
    x: Float[Tensor, "batch seq d_model"],
    w_q: Float[Tensor, "d_model d_model"],
    w_k: Float[Tensor, "d_model d_model"],
    w_v: Float[Tensor, "d_model d_model"],
    w_o: Float[Tensor, "d_model d_model"],
    heads: int,
) -> Float[Tensor, "batch seq d_model"]:
    """Multi-head self-attention without masking or biases: Q = x @ w_q (and K, V alike), split into
    `heads` heads as in `split_heads`; in each head softmax(Q K^T / sqrt(d_head)) over the keys, times V;
    heads merged as in `merge_heads`, then @ w_o."""
    raise NotImplementedError("multihead_attention")


def two_layer_backward(
    x: Float[Tensor, "batch d_in"],
    w1: Float[Tensor, "d_in d_hidden"],
    w2: Float[Tensor, "d_hidden d_out"],
    grad_y: Float[Tensor, "batch d_out"],
) -> tuple[Float[Tensor, "batch d_in"], Float[Tensor, "d_in d_hidden"], Float[Tensor, "d_hidden d_out"]]:
    """Backward of y = x @ w1 @ w2 by hand, each product an einsum: given grad_y = dL/dy, return
    (dL/dx, dL/dw1, dL/dw2). The tests compare with autograd."""
    raise NotImplementedError("two_layer_backward")


__all__ = [
    "matmul",
    "attention_scores",
    "sum_hidden",
    "split_heads",
    "merge_heads",
    "per_head_linear",
    "patchify",
    "unpatchify",
    "pool2d",
    "pairwise_sq_distances",
    "repeat_kv",
    "multihead_attention",
    "two_layer_backward",
]
