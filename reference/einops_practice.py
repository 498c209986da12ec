"""Problem (einops_practice): einsum, reduce, rearrange. Reference solution; the spec is in
assignment/einops_practice.py."""

import math

import torch
from einops import einsum, rearrange, reduce, repeat
from jaxtyping import Float
from torch import Tensor


def matmul(a: Float[Tensor, "seq1 hidden"], b: Float[Tensor, "hidden seq2"]) -> Float[Tensor, "seq1 seq2"]:
    return einsum(a, b, "seq1 hidden, hidden seq2 -> seq1 seq2")


def attention_scores(
    q: Float[Tensor, "*batch seq_q d_k"], k: Float[Tensor, "*batch seq_k d_k"]
) -> Float[Tensor, "*batch seq_q seq_k"]:
    return einsum(q, k, "... seq_q d_k, ... seq_k d_k -> ... seq_q seq_k") / math.sqrt(q.shape[-1])


def sum_hidden(x: Float[Tensor, "*batch hidden"]) -> Float[Tensor, "*batch"]:
    return reduce(x, "... hidden -> ...", "sum")


def split_heads(x: Float[Tensor, "batch seq d_model"], heads: int) -> Float[Tensor, "batch heads seq d_head"]:
    return rearrange(x, "batch seq (heads d_head) -> batch heads seq d_head", heads=heads)


def merge_heads(x: Float[Tensor, "batch heads seq d_head"]) -> Float[Tensor, "batch seq d_model"]:
    return rearrange(x, "batch heads seq d_head -> batch seq (heads d_head)")


def per_head_linear(
    x: Float[Tensor, "batch seq d_in"], w: Float[Tensor, "heads hidden1 hidden2"]
) -> Float[Tensor, "batch seq d_out"]:
    x = rearrange(x, "... (heads hidden1) -> ... heads hidden1", heads=w.shape[0])
    y = einsum(x, w, "... heads hidden1, heads hidden1 hidden2 -> ... heads hidden2")
    return rearrange(y, "... heads hidden2 -> ... (heads hidden2)")


def patchify(
    images: Float[Tensor, "batch channels height width"], patch_h: int, patch_w: int
) -> Float[Tensor, "batch patches patch_dim"]:
    return rearrange(images, "b c (h ph) (w pw) -> b (h w) (ph pw c)", ph=patch_h, pw=patch_w)


def unpatchify(
    patches: Float[Tensor, "batch patches patch_dim"], height: int, width: int, patch_h: int, patch_w: int
) -> Float[Tensor, "batch channels height width"]:
    return rearrange(patches, "b (h w) (ph pw c) -> b c (h ph) (w pw)",
                     h=height // patch_h, ph=patch_h, pw=patch_w)


def pool2d(
    x: Float[Tensor, "batch channels height width"], kernel_h: int, kernel_w: int, reduction: str
) -> Float[Tensor, "batch channels out_h out_w"]:
    return reduce(x, "b c (h kh) (w kw) -> b c h w", reduction, kh=kernel_h, kw=kernel_w)


def pairwise_sq_distances(x: Float[Tensor, "n d"], y: Float[Tensor, "m d"]) -> Float[Tensor, "n m"]:
    x_sq = reduce(x * x, "n d -> n 1", "sum")
    y_sq = reduce(y * y, "m d -> 1 m", "sum")
    return x_sq + y_sq - 2 * einsum(x, y, "n d, m d -> n m")


def repeat_kv(
    kv: Float[Tensor, "batch kv_heads seq d_head"], n_rep: int
) -> Float[Tensor, "batch heads seq d_head"]:
    return repeat(kv, "b kv_heads s d -> b (kv_heads n_rep) s d", n_rep=n_rep)


def multihead_attention(
    x: Float[Tensor, "batch seq d_model"],
    w_q: Float[Tensor, "d_model d_model"],
    w_k: Float[Tensor, "d_model d_model"],
    w_v: Float[Tensor, "d_model d_model"],
    w_o: Float[Tensor, "d_model d_model"],
    heads: int,
) -> Float[Tensor, "batch seq d_model"]:
    q, k, v = (split_heads(einsum(x, w, "b s d_in, d_in d_out -> b s d_out"), heads) for w in (w_q, w_k, w_v))
    weights = torch.softmax(attention_scores(q, k), dim=-1)
    context = einsum(weights, v, "b h s_q s_k, b h s_k d -> b h s_q d")
    return einsum(merge_heads(context), w_o, "b s d_in, d_in d_out -> b s d_out")


def two_layer_backward(
    x: Float[Tensor, "batch d_in"],
    w1: Float[Tensor, "d_in d_hidden"],
    w2: Float[Tensor, "d_hidden d_out"],
    grad_y: Float[Tensor, "batch d_out"],
) -> tuple[Float[Tensor, "batch d_in"], Float[Tensor, "d_in d_hidden"], Float[Tensor, "d_hidden d_out"]]:
    h = einsum(x, w1, "batch d_in, d_in d_hidden -> batch d_hidden")
    grad_w2 = einsum(h, grad_y, "batch d_hidden, batch d_out -> d_hidden d_out")
    grad_h = einsum(grad_y, w2, "batch d_out, d_hidden d_out -> batch d_hidden")
    grad_w1 = einsum(x, grad_h, "batch d_in, batch d_hidden -> d_in d_hidden")
    grad_x = einsum(grad_h, w1, "batch d_hidden, d_in d_hidden -> batch d_in")
    return grad_x, grad_w1, grad_w2


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
