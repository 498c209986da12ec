"""Classic mistakes in the einops exercises, each as the wrong function a student would write."""

import math

import torch
from einops import einsum, rearrange, reduce, repeat

from reference import einops_practice as ref
from tests.mistakes import Mistake


def merge_heads_d_major(x):
    return rearrange(x, "b heads s d -> b s (d heads)")


def split_heads_d_major(x, heads):
    return rearrange(x, "b s (d heads) -> b heads s d", heads=heads)


def repeat_kv_tiled(kv, n_rep):
    return repeat(kv, "b kv s d -> b (n_rep kv) s d", n_rep=n_rep)


def patchify_channels_first(images, patch_h, patch_w):
    return rearrange(images, "b c (h ph) (w pw) -> b (h w) (c ph pw)", ph=patch_h, pw=patch_w)


def patchify_column_order(images, patch_h, patch_w):
    return rearrange(images, "b c (h ph) (w pw) -> b (w h) (ph pw c)", ph=patch_h, pw=patch_w)


def pool2d_kernels_swapped(x, kernel_h, kernel_w, reduction):
    return reduce(x, "b c (h kh) (w kw) -> b c h w", reduction, kh=kernel_w, kw=kernel_h)


def scores_unscaled(q, k):
    return einsum(q, k, "... s_q d, ... s_k d -> ... s_q s_k")


def scores_scaled_by_d(q, k):
    return einsum(q, k, "... s_q d, ... s_k d -> ... s_q s_k") / q.shape[-1]


def distances_without_two(x, y):
    return (reduce(x * x, "n d -> n 1", "sum") + reduce(y * y, "m d -> 1 m", "sum")
            - einsum(x, y, "n d, m d -> n m"))


def attention_softmax_over_queries(x, w_q, w_k, w_v, w_o, heads):
    q, k, v = (ref.split_heads(einsum(x, w, "b s i, i o -> b s o"), heads) for w in (w_q, w_k, w_v))
    weights = torch.softmax(ref.attention_scores(q, k), dim=-2)
    context = einsum(weights, v, "b h s_q s_k, b h s_k d -> b h s_q d")
    return einsum(ref.merge_heads(context), w_o, "b s i, i o -> b s o")


def attention_scaled_by_d_model(x, w_q, w_k, w_v, w_o, heads):
    q, k, v = (ref.split_heads(einsum(x, w, "b s i, i o -> b s o"), heads) for w in (w_q, w_k, w_v))
    scores = einsum(q, k, "b h s_q d, b h s_k d -> b h s_q s_k") / math.sqrt(x.shape[-1])
    context = einsum(torch.softmax(scores, dim=-1), v, "b h s_q s_k, b h s_k d -> b h s_q d")
    return einsum(ref.merge_heads(context), w_o, "b s i, i o -> b s o")


def per_head_linear_shared_first_weight(x, w):
    x = rearrange(x, "... (heads h1) -> ... heads h1", heads=w.shape[0])
    y = einsum(x, w[0], "... heads h1, h1 h2 -> ... heads h2")
    return rearrange(y, "... heads h2 -> ... (heads h2)")


def per_head_linear_merged_hidden_major(x, w):
    x = rearrange(x, "... (heads h1) -> ... heads h1", heads=w.shape[0])
    y = einsum(x, w, "... heads h1, heads h1 h2 -> ... heads h2")
    return rearrange(y, "... heads h2 -> ... (h2 heads)")


def backward_ignores_upstream(x, w1, w2, grad_y):
    return ref.two_layer_backward(x, w1, w2, torch.ones_like(grad_y))


def backward_w1_grad_without_w2(x, w1, w2, grad_y):
    grad_x, grad_w1, grad_w2 = ref.two_layer_backward(x, w1, w2, grad_y)
    wrong = einsum(x, reduce(grad_y, "b o -> b", "sum"), "b i, b -> i")
    return grad_x, repeat(wrong, "i -> i h", h=w1.shape[1]), grad_w2


def sum_hidden_mean(x):
    return reduce(x, "... hidden -> ...", "mean")


def merge_heads_plain_torch(x):
    # right answer, but the index-heavy way the exercise replaces
    b, heads, s, d = x.shape
    return x.transpose(1, 2).reshape(b, s, heads * d)


def _m(id, description, **replaces):
    return Mistake("einops_practice", id, description, replaces)


MISTAKES = [
    _m("merge_d_heads", "heads merged as (d_head heads) instead of (heads d_head)", merge_heads=merge_heads_d_major),
    _m("split_d_heads", "d_model split as (d_head heads)", split_heads=split_heads_d_major),
    _m("repeat_kv_tiled", "kv heads tiled as (n_rep kv_heads): query head i reads kv head i % kv_heads",
       repeat_kv=repeat_kv_tiled),
    _m("patch_channels_first", "each patch flattened (c ph pw) instead of (ph pw c)", patchify=patchify_channels_first),
    _m("patch_column_order", "patches numbered column by column (w h)", patchify=patchify_column_order),
    _m("pool_kernels_swapped", "kernel_h applied along the width", pool2d=pool2d_kernels_swapped),
    _m("scores_unscaled", "attention scores without 1/sqrt(d_k)", attention_scores=scores_unscaled),
    _m("scores_over_d", "attention scores divided by d_k, not sqrt(d_k)", attention_scores=scores_scaled_by_d),
    _m("distances_no_two", "|x|^2 + |y|^2 - x.y (the cross term's 2 forgotten)",
       pairwise_sq_distances=distances_without_two),
    _m("softmax_over_queries", "attention softmax over the queries (dim -2) instead of the keys",
       multihead_attention=attention_softmax_over_queries),
    _m("attention_sqrt_d_model", "attention scaled by sqrt(d_model) instead of sqrt(d_head)",
       multihead_attention=attention_scaled_by_d_model),
    _m("per_head_shared_weight", "every head multiplied by head 0's matrix",
       per_head_linear=per_head_linear_shared_first_weight),
    _m("per_head_merge_h2_heads", "heads merged back as (hidden2 heads)",
       per_head_linear=per_head_linear_merged_hidden_major),
    _m("backward_ignores_grad_y", "the backward uses ones for the upstream gradient",
       two_layer_backward=backward_ignores_upstream),
    _m("backward_w1_skips_w2", "dL/dw1 without the chain through w2", two_layer_backward=backward_w1_grad_without_w2),
    _m("merge_heads_without_einops", "the right answer with transpose/reshape, no einops (the audit)",
       merge_heads=merge_heads_plain_torch),
    _m("sum_hidden_mean", "mean instead of sum over hidden", sum_hidden=sum_hidden_mean),
]


# The behaviours each mistake may cost: those whose tests it failed under the held-out grading seed of
# tests/meta/test_mistakes.py, which checks it (the behaviours that wait for them may lose their points too).
# `python -m tests.meta.mutation --every-test --profile grade --grading-seed 11 --costs` prints what a run saw.
COSTS = {
    "merge_d_heads": ("audit: every function uses einops", "heads: split, merge, per-head linear"),
    "split_d_heads": ("audit: every function uses einops", "heads: split, merge, per-head linear"),
    "repeat_kv_tiled": ("audit: every function uses einops", "pairwise distances, repeat_kv"),
    "patch_channels_first": ("audit: every function uses einops", "images: patchify, unpatchify, pool2d"),
    "patch_column_order": ("audit: every function uses einops", "images: patchify, unpatchify, pool2d"),
    "pool_kernels_swapped": ("audit: every function uses einops", "images: patchify, unpatchify, pool2d"),
    "scores_unscaled": ("audit: every function uses einops", "matmul, attention scores, sum_hidden"),
    "scores_over_d": ("audit: every function uses einops", "matmul, attention scores, sum_hidden"),
    "distances_no_two": ("audit: every function uses einops", "pairwise distances, repeat_kv"),
    "softmax_over_queries": ("audit: every function uses einops", "multi-head attention"),
    "attention_sqrt_d_model": ("audit: every function uses einops", "multi-head attention"),
    "per_head_shared_weight": ("audit: every function uses einops", "heads: split, merge, per-head linear"),
    "per_head_merge_h2_heads": ("audit: every function uses einops", "heads: split, merge, per-head linear"),
    "backward_ignores_grad_y": ("audit: every function uses einops", "two-layer backward"),
    "backward_w1_skips_w2": ("audit: every function uses einops", "two-layer backward"),
    "merge_heads_without_einops": ("audit: every function uses einops",),
    "sum_hidden_mean": ("audit: every function uses einops", "matmul, attention scores, sum_hidden"),
}
