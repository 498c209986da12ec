"""Problem (einops_practice): einsum, reduce, rearrange.

Oracles: plain torch written with view / transpose / matmul / loops in this file
(`F.scaled_dot_product_attention`, `F.max_pool2d`, `F.avg_pool2d`, `repeat_interleave`, autograd for the
backward), on hypothesis shapes with a distinct size per named dimension, so a transposed answer or a
group merged in the wrong order ((d heads) for (heads d)) cannot pass. Inputs are non-contiguous half
the time.

Tolerances, per quantity:
- split/merge heads, patchify/unpatchify, max pooling and repeat_kv only move or select values:
  compared exactly.
- Sums of products (matmul, scores, mean pooling, per-head linear, distances, attention, the backward):
  float32 to 1e-5 relative and 1e-5 absolute. Every operand is standard normal and every sum has at most
  ~30 terms, so a different summation order moves the result by ~1e-6; every catalogued mistake moves it
  by more than 1e-1. Pairwise squared distances add the cancellation of |x|^2 + |y|^2 - 2 x.y: 1e-4
  absolute there.
The audit reads the source (every public function's body names einsum, rearrange, reduce or repeat)
and runs each function under a profiler, which must see einops' functions run.
"""

import ast
import functools
import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from tests import audit, audit_run
from tests.audit_run import own_run
from tests.common.einops_practice import DIFFERENTIAL_TOL, FUNCTIONS, audit_calls, randn
from tests.scenarios import mini_einops as tracing
from tests.strategies import distinct_sizes

pytestmark = pytest.mark.einops_practice

EINOPS = {"einsum", "rearrange", "reduce", "repeat"}

seeds = st.integers(0, 2**16)


def expect_tensor(got, expected: torch.Tensor, what: str, hint: str, exact: bool = False, atol: float = 1e-5):
    assert isinstance(got, torch.Tensor), f"{what} returned {type(got).__name__}, not a tensor"
    assert got.shape == expected.shape, (f"{what}: expected shape {tuple(expected.shape)} (plain torch), got "
                                         f"{tuple(got.shape)}; hint: {hint}")
    if exact:
        assert torch.equal(got, expected), f"{what}: right shape, wrong values (plain torch); hint: {hint}"
    else:
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=atol,
                                   msg=lambda m: f"{what} differs from plain torch; hint: {hint}\n{m}")


# -- plain torch: each function's answer written with view / transpose / matmul / loops -----------------------

def patchify_oracle(images: torch.Tensor, ph: int, pw: int) -> torch.Tensor:
    b, c, height, width = images.shape
    patches = [images[:, :, i:i + ph, j:j + pw].permute(0, 2, 3, 1).reshape(b, ph * pw * c)
               for i in range(0, height, ph) for j in range(0, width, pw)]
    return torch.stack(patches, dim=1)


def unpatchify_oracle(patches: torch.Tensor, height: int, width: int, ph: int, pw: int) -> torch.Tensor:
    b, _, size = patches.shape
    c = size // (ph * pw)
    images = torch.empty(b, c, height, width)
    corners = [(i, j) for i in range(0, height, ph) for j in range(0, width, pw)]
    for n, (i, j) in enumerate(corners):
        images[:, :, i:i + ph, j:j + pw] = patches[:, n].reshape(b, ph, pw, c).permute(0, 3, 1, 2)
    return images


def multihead_oracle(x, w_q, w_k, w_v, w_o, h: int) -> torch.Tensor:
    b, s, dm = x.shape

    def heads(t):
        return (x @ t).view(b, s, h, dm // h).transpose(1, 2)

    context = F.scaled_dot_product_attention(heads(w_q), heads(w_k), heads(w_v))
    return context.transpose(1, 2).reshape(b, s, dm) @ w_o


def two_layer_oracle(x, w1, w2, grad_y) -> tuple[torch.Tensor, ...]:
    leaves = [t.detach().clone().requires_grad_(True) for t in (x, w1, w2)]
    (leaves[0] @ leaves[1] @ leaves[2]).backward(grad_y)
    return tuple(leaf.grad for leaf in leaves)


PLAIN_TORCH = {  # each function's oracle, on its arguments
    "matmul": lambda a, b: a @ b,
    "attention_scores": lambda q, k: q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]),
    "sum_hidden": lambda x: x.sum(-1),
    "split_heads": lambda x, h: x.reshape(*x.shape[:2], h, x.shape[2] // h).transpose(1, 2),
    "merge_heads": lambda x: x.transpose(1, 2).reshape(x.shape[0], x.shape[2], x.shape[1] * x.shape[3]),
    "per_head_linear": lambda x, w: torch.cat([x[..., i * w.shape[1]:(i + 1) * w.shape[1]] @ w[i]
                                               for i in range(w.shape[0])], dim=-1),
    "patchify": patchify_oracle,
    "unpatchify": unpatchify_oracle,
    "pool2d": lambda x, kh, kw, reduction: (F.max_pool2d if reduction == "max" else F.avg_pool2d)(x, (kh, kw)),
    "pairwise_sq_distances": lambda x, y: ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1),
    "repeat_kv": lambda x, rep: x.repeat_interleave(rep, dim=1),
    "multihead_attention": multihead_oracle,
    "two_layer_backward": two_layer_oracle,
}


@given(sizes=distinct_sizes(3, 1, 7), seed=seeds, contiguous=st.booleans())
def test_matmul_is_the_matrix_product(impl, sizes, seed, contiguous):
    s1, h, s2 = sizes
    a, b = randn(seed, s1, h, contiguous=contiguous), randn(seed + 1, h, s2)
    expect_tensor(impl.einops_practice.matmul(a, b), a @ b, f"matmul(a: {tuple(a.shape)}, b: {tuple(b.shape)})",
                  "seq1 hidden, hidden seq2 -> seq1 seq2")


@given(sizes=distinct_sizes(5, 1, 6), n_batch=st.integers(0, 2), seed=seeds, contiguous=st.booleans())
def test_attention_scores_match_q_kt_over_sqrt_d(impl, sizes, n_batch, seed, contiguous):
    *batch, s_q, s_k, d = sizes[:n_batch] + sizes[2:]
    q, k = randn(seed, *batch, s_q, d, contiguous=contiguous), randn(seed + 1, *batch, s_k, d)
    expected = q @ k.transpose(-1, -2) / math.sqrt(d)
    expect_tensor(impl.einops_practice.attention_scores(q, k), expected,
                  f"attention_scores(q: {tuple(q.shape)}, k: {tuple(k.shape)})",
                  "... seq_q d_k, ... seq_k d_k -> ... seq_q seq_k, divided by sqrt(d_k)")


@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=4), seed=seeds, contiguous=st.booleans())
def test_sum_hidden_sums_the_last_dimension(impl, shape, seed, contiguous):
    x = randn(seed, *shape, contiguous=contiguous)
    expect_tensor(impl.einops_practice.sum_hidden(x), x.sum(-1), f"sum_hidden(x: {tuple(x.shape)})",
                  "reduce '... hidden -> ...' with 'sum'")


@given(sizes=distinct_sizes(4, 1, 6), seed=seeds, contiguous=st.booleans())
def test_split_heads_matches_view_and_transpose(impl, sizes, seed, contiguous):
    b, s, h, d = sizes
    x = randn(seed, b, s, h * d, contiguous=contiguous)
    expected = x.reshape(b, s, h, d).transpose(1, 2)
    expect_tensor(impl.einops_practice.split_heads(x, h), expected, f"split_heads(x: {tuple(x.shape)}, heads={h})",
                  "d_model is (heads d_head), heads-major", exact=True)


@given(sizes=distinct_sizes(4, 1, 6), seed=seeds, contiguous=st.booleans())
def test_merge_heads_matches_transpose_and_reshape(impl, sizes, seed, contiguous):
    b, h, s, d = sizes
    x = randn(seed, b, h, s, d, contiguous=contiguous)
    expected = x.transpose(1, 2).reshape(b, s, h * d)
    expect_tensor(impl.einops_practice.merge_heads(x), expected, f"merge_heads(x: {tuple(x.shape)})",
                  "merge as (heads d_head), not (d_head heads)", exact=True)


@given(sizes=distinct_sizes(5, 1, 5), seed=seeds, contiguous=st.booleans())
def test_per_head_linear_applies_each_heads_matrix(impl, sizes, seed, contiguous):
    b, s, h, h1, h2 = sizes
    x, w = randn(seed, b, s, h * h1, contiguous=contiguous), randn(seed + 1, h, h1, h2)
    expected = torch.cat([x[..., i * h1:(i + 1) * h1] @ w[i] for i in range(h)], dim=-1)
    expect_tensor(impl.einops_practice.per_head_linear(x, w), expected,
                  f"per_head_linear(x: {tuple(x.shape)}, w: {tuple(w.shape)})",
                  "split (heads hidden1), einsum with w per head, merge (heads hidden2)")


@given(sizes=distinct_sizes(6, 1, 6), seed=seeds, contiguous=st.booleans())
def test_patchify_cuts_row_by_row_patches(impl, sizes, seed, contiguous):
    b, c, gh, gw, ph, pw = sizes
    images = randn(seed, b, c, gh * ph, gw * pw, contiguous=contiguous)
    expect_tensor(impl.einops_practice.patchify(images, ph, pw), patchify_oracle(images, ph, pw),
                  f"patchify(images: {tuple(images.shape)}, patch_h={ph}, patch_w={pw})",
                  "b c (h ph) (w pw) -> b (h w) (ph pw c)", exact=True)


@given(sizes=distinct_sizes(6, 1, 6), seed=seeds)
def test_unpatchify_inverts_patchify(impl, sizes, seed):
    b, c, gh, gw, ph, pw = sizes
    images = randn(seed, b, c, gh * ph, gw * pw)
    got = impl.einops_practice.unpatchify(patchify_oracle(images, ph, pw), gh * ph, gw * pw, ph, pw)
    expect_tensor(got, images, f"unpatchify(patches of {tuple(images.shape)}, {gh * ph}, {gw * pw}, {ph}, {pw})",
                  "b (h w) (ph pw c) -> b c (h ph) (w pw)", exact=True)


@given(sizes=distinct_sizes(6, 1, 6), reduction=st.sampled_from(["max", "mean"]), seed=seeds,
       contiguous=st.booleans())
def test_pool2d_matches_torch_pooling(impl, sizes, reduction, seed, contiguous):
    b, c, oh, ow, kh, kw = sizes
    x = randn(seed, b, c, oh * kh, ow * kw, contiguous=contiguous)
    expected = (F.max_pool2d if reduction == "max" else F.avg_pool2d)(x, (kh, kw))
    expect_tensor(impl.einops_practice.pool2d(x, kh, kw, reduction), expected,
                  f"pool2d(x: {tuple(x.shape)}, kernel_h={kh}, kernel_w={kw}, {reduction!r})",
                  "b c (h kh) (w kw) -> b c h w", exact=reduction == "max")


@given(sizes=distinct_sizes(3, 1, 7), seed=seeds, contiguous=st.booleans())
def test_pairwise_sq_distances_match_differences(impl, sizes, seed, contiguous):
    n, m, d = sizes
    x, y = randn(seed, n, d, contiguous=contiguous), randn(seed + 1, m, d)
    expected = ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)
    expect_tensor(impl.einops_practice.pairwise_sq_distances(x, y), expected,
                  f"pairwise_sq_distances(x: {tuple(x.shape)}, y: {tuple(y.shape)})",
                  "|x_i|^2 + |y_j|^2 - 2 x_i . y_j", atol=1e-4)


@given(sizes=distinct_sizes(5, 1, 5), seed=seeds, contiguous=st.booleans())
def test_repeat_kv_matches_repeat_interleave(impl, sizes, seed, contiguous):
    b, kv, s, d, rep = sizes
    x = randn(seed, b, kv, s, d, contiguous=contiguous)
    expect_tensor(impl.einops_practice.repeat_kv(x, rep), x.repeat_interleave(rep, dim=1),
                  f"repeat_kv(kv: {tuple(x.shape)}, n_rep={rep})",
                  "heads = (kv_heads n_rep): each kv head next to its copies, not the block tiled", exact=True)


@given(sizes=distinct_sizes(4, 1, 5), seed=seeds, contiguous=st.booleans())
def test_multihead_attention_matches_sdpa(impl, sizes, seed, contiguous):
    b, s, h, d = sizes
    dm = h * d
    x = randn(seed, b, s, dm, contiguous=contiguous)
    w_q, w_k, w_v, w_o = (randn(seed + i, dm, dm) / math.sqrt(dm) for i in range(1, 5))
    expected = multihead_oracle(x, w_q, w_k, w_v, w_o, h)
    expect_tensor(impl.einops_practice.multihead_attention(x, w_q, w_k, w_v, w_o, h), expected,
                  f"multihead_attention(x: {tuple(x.shape)}, heads={h})",
                  "softmax over the keys, scores / sqrt(d_head), heads split and merged as (heads d_head)")


@given(sizes=distinct_sizes(4, 1, 6), seed=seeds, contiguous=st.booleans())
def test_two_layer_backward_matches_autograd(impl, sizes, seed, contiguous):
    b, d_in, d_h, d_out = sizes
    x, w1, w2 = randn(seed, b, d_in, contiguous=contiguous), randn(seed + 1, d_in, d_h), randn(seed + 2, d_h, d_out)
    grad_y = randn(seed + 3, b, d_out)
    got = impl.einops_practice.two_layer_backward(x, w1, w2, grad_y)
    assert isinstance(got, tuple) and len(got) == 3, f"two_layer_backward returned {type(got).__name__}, not 3 tensors"
    for name, g, expected in zip(("dL/dx", "dL/dw1", "dL/dw2"), got, two_layer_oracle(x, w1, w2, grad_y), strict=True):
        what = f"two_layer_backward(...) {name} for x: {tuple(x.shape)}, w1: {tuple(w1.shape)}, w2: {tuple(w2.shape)}"
        expect_tensor(g, expected, what, "dL/dw2 = h^T g, dL/dh = g w2^T, dL/dw1 = x^T dL/dh, dL/dx = dL/dh w1^T")


# -- audit: each function uses einops --------------------------------------------------------------------

def names_without_einops(package: str) -> list[str]:
    """Public functions whose body names none of einops' einsum, rearrange, reduce, repeat (imported from
    einops under any alias, or as an attribute of the einops module under any alias)."""
    _, tree = audit.parsed(package, "einops_practice")
    functions, modules = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "einops":
            functions |= {a.asname or a.name for a in node.names if a.name in EINOPS}
        elif isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name == "einops"}
    missing = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in FUNCTIONS:
            calls = any(isinstance(n, ast.Name) and n.id in functions or isinstance(n, ast.Attribute)
                        and n.attr in EINOPS and isinstance(n.value, ast.Name) and n.value.id in modules
                        for n in ast.walk(node))
            if not calls:
                missing.append(node.name)
    return missing


def right_answer(got, expected) -> bool:
    """Whether `got` is the plain-torch answer (`expected`, a tensor or a tuple of them), to the tests' loosest
    tolerance: what the audit counts as an answer seen right."""
    got, expected = (got, expected) if isinstance(expected, tuple) else ((got,), (expected,))
    return (isinstance(got, tuple) and len(got) == len(expected)
            and all(isinstance(g, torch.Tensor) and g.shape == e.shape and torch.allclose(g, e, rtol=1e-5, atol=1e-4)
                    for g, e in zip(got, expected, strict=True)))


# one item per function, which carries its own evidence (tests/audit_run.py): it checks the calls it saw answered
# right (against plain torch), and pays beside three distinct right answers
@pytest.mark.parametrize("name", FUNCTIONS)
@audit_run.evidenced(lambda kwargs: kwargs["name"], without="plain torch reshapes (with einops)")
@given(seed=seeds)
def test_audit_every_function_uses_einops(impl, name, seed):
    missing = [function for function in names_without_einops(impl.name) if function == name]
    assert not missing, f"{impl.name}/einops_practice.py: {name} does not call einops"
    for name, args in [call for call in audit_calls(seed) if call[0] == name]:
        function = getattr(impl.einops_practice, name)
        if not right_answer(own_run(functools.partial(function, *args)), PLAIN_TORCH[name](*args)):
            continue  # a wrong answer (or an error) is its own test's failure, never the audit's
        ran = impl.run(tracing.einops_calls, "einops_practice", name, args, {})
        if ran["error"] is not None:  # raised only while traced: not an answer the audit saw
            continue
        assert ran["einops"], f"einops_practice.{name} ran without calling einops.einsum/rearrange/reduce/repeat"
        first = ran["result"][0] if isinstance(ran["result"], tuple) else ran["result"]
        audit_run.evidence().saw_right(round(first.double().sum().item(), 6))


# -- differential: every function against the reference ----------------------------------------------------

@given(seed=seeds)
def test_differential_all_functions(impl, ref, seed):
    for name, args in audit_calls(seed):
        got = getattr(impl.einops_practice, name)(*args)
        expected = getattr(ref.einops_practice, name)(*args)
        for g, e in zip(got if isinstance(got, tuple) else (got,), expected if isinstance(expected, tuple)
                        else (expected,), strict=True):
            torch.testing.assert_close(g, e, rtol=DIFFERENTIAL_TOL, atol=DIFFERENTIAL_TOL,
                                       msg=lambda m, n=name: f"{n}: {m} (reference)")
