"""einops practice in the style of vision-transformer and LLaMA-style model code: short axis names (`b n (h d)`,
`p1 p2`), the scale written `dim_head ** -0.5`, q, k and v split by one `map(lambda t: rearrange(...))`, the
attention as `einsum(..., "... i d, ... j d -> ... i j")` and `.softmax(dim=-1)`, grouped-query heads by
`repeat`, pooling by `reduce` over `(h p1) (w p2)`, a backward pass of three-operand einsums over the whole chain,
and no annotations. Such code flattens a patch as `(p1 p2 c)`
(this assignment's order) or `(c p1 p2)` (a conv's weight order), and may scale by the model's width instead of
the head's: SLIPS.

Graded by tests/meta/test_honest.py."""

from einops import einsum, rearrange, reduce, repeat

CASE = {"problem": "einops_practice", "score": 7}
SLIPS = {
    "patch_channels_first": ("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", "b c (h p1) (w p2) -> b (h w) (c p1 p2)",
                             ("images: patchify, unpatchify, pool2d", "differential: all functions",
                              "audit: every function uses einops")),
    "scale_by_model_width": ("scale = dim_head ** -0.5", "scale = q.shape[-1] ** -0.5",
                             ("multi-head attention", "differential: all functions",
                              "audit: every function uses einops")),
}


def matmul(a, b):
    return einsum(a, b, "i k, k j -> i j")


def attention_scores(q, k):
    return einsum(q, k, "... i d, ... j d -> ... i j") * q.shape[-1] ** -0.5


def sum_hidden(x):
    return reduce(x, "... d -> ...", "sum")


def split_heads(x, heads):
    return rearrange(x, "b n (h d) -> b h n d", h=heads)


def merge_heads(x):
    return rearrange(x, "b h n d -> b n (h d)")


def per_head_linear(x, w):
    x = rearrange(x, "b n (h i) -> b n h i", h=w.shape[0])
    out = einsum(x, w, "b n h i, h i o -> b n h o")
    return rearrange(out, "b n h o -> b n (h o)")


def patchify(images, patch_h, patch_w):
    return rearrange(images, "b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=patch_h, p2=patch_w)


def unpatchify(patches, height, width, patch_h, patch_w):
    return rearrange(patches, "b (h w) (p1 p2 c) -> b c (h p1) (w p2)", h=height // patch_h, w=width // patch_w,
                     p1=patch_h, p2=patch_w)


def pool2d(x, kernel_h, kernel_w, reduction):
    return reduce(x, "b c (h p1) (w p2) -> b c h w", reduction, p1=kernel_h, p2=kernel_w)


def pairwise_sq_distances(x, y):
    xx = reduce(x * x, "n d -> n 1", "sum")
    yy = reduce(y * y, "m d -> 1 m", "sum")
    return xx + yy - 2 * einsum(x, y, "n d, m d -> n m")


def repeat_kv(kv, n_rep):
    return repeat(kv, "b h n d -> b (h r) n d", r=n_rep)


def multihead_attention(x, w_q, w_k, w_v, w_o, heads):
    q, k, v = (einsum(x, w, "b n d, d e -> b n e") for w in (w_q, w_k, w_v))
    dim_head = q.shape[-1] // heads
    scale = dim_head ** -0.5
    q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=heads), (q, k, v))
    attn = (einsum(q, k, "b h i d, b h j d -> b h i j") * scale).softmax(dim=-1)
    out = einsum(attn, v, "b h i j, b h j d -> b h i d")
    out = rearrange(out, "b h n d -> b n (h d)")
    return einsum(out, w_o, "b n d, d e -> b n e")


def two_layer_backward(x, w1, w2, grad_y):
    # y = x w1 w2, each gradient one einsum over the whole chain (the einsum picks the order of the products)
    grad_w2 = einsum(x, w1, grad_y, "b i, i h, b o -> h o")
    grad_w1 = einsum(x, grad_y, w2, "b i, b o, h o -> i h")
    grad_x = einsum(grad_y, w2, w1, "b o, h o, i h -> b i")
    return grad_x, grad_w1, grad_w2


__all__ = ["matmul", "attention_scores", "sum_hidden", "split_heads", "merge_heads", "per_head_linear", "patchify",
           "unpatchify", "pool2d", "pairwise_sq_distances", "repeat_kv", "multihead_attention", "two_layer_backward"]
