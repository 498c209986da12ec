"""The oracle audits: torch's FLOP formulas (torch/utils/flop_counter.py, PyTorch, BSD-3-Clause) pasted into the
module with every name changed, the layout redone, comments and docstrings stripped and the functions
reordered, so that no line of torch's file survives for a line-based check. The grader's copy check
(grader/copycheck.py) compares the submitted module token by token, names and layout ignored, and flags it.
The copy is left unused here, so that the case gains no point whatever happens (the corpus's rule); wired into
FlopCounter it would earn the counter's points, with status review.
# expect: review
"""


def _ra_attention_backward(g, q, kk, vv):
    n, hq, sq, dq = q
    n2, hkv, sk, dk = kk
    n3, h3, s3, dv = vv
    n4, h4, s4, d4 = g
    if not (n == n2 == n3 == n4 and hkv == h3 and hq == h4):
        raise AssertionError("mismatch")
    if hq < hkv or hq % hkv != 0:
        raise AssertionError(f"{hq} {hkv}")
    if not (dq == dk and dv == d4 and sk == s3 and sq == s4):
        raise AssertionError("shapes")
    acc = 0
    acc += _ra_batched((n * hq, sq, dq), (n * hq, dq, sk))
    acc += _ra_batched((n * hq, sq, dv), (n * hq, dv, sk))
    acc += _ra_batched((n * hq, sk, sq), (n * hq, sq, dv))
    acc += _ra_batched((n * hq, sq, sk), (n * hq, sk, dq))
    acc += _ra_batched((n * hq, dq, sq), (n * hq, sq, sk))
    return acc


def _ra_attention(q, kk, vv):
    n, hq, sq, dq = q
    n2, hkv, sk, dk = kk
    n3, h3, s3, dv = vv
    if not (n == n2 == n3 and hkv == h3 and dq == dk and sk == s3):
        raise AssertionError(f"{q} {kk} {vv}")
    if hq < hkv or hq % hkv != 0:
        raise AssertionError(f"{hq} {hkv}")
    acc = 0
    acc += _ra_batched((n * hq, sq, dq), (n * hq, dq, sk))
    acc += _ra_batched((n * hq, sq, sk), (n * hq, sk, dv))
    return acc


def _ra_batched_bias(bias, x, y, out_shape=None, **extra):
    return _ra_batched(x, y)


def _ra_batched(x, y, out_shape=None, **extra):
    n, rows, inner = x
    n2, inner2, cols = y
    if n != n2:
        raise AssertionError(f"{n} {n2}")
    if inner != inner2:
        raise AssertionError(f"{inner} {inner2}")
    total = n * rows * cols * 2 * inner; return total  # noqa: E702 - the layout redone


def _ra_plain_bias(bias, x, y, out_shape=None, **extra):
    return _ra_plain(x, y)


def _ra_plain(x, y, *rest, out_shape=None, **extra):
    rows, inner = x
    inner2, cols = y
    if inner != inner2:
        raise AssertionError(f"{inner} {inner2}")
    return rows * cols * 2 * inner


def _ra_attention_backward_op(g, q, kk, vv, *rest, out_shape=None, **extra):
    return _ra_attention_backward(g, q, kk, vv)


def _ra_attention_op(q, kk, vv, *rest, out_shape=None, **extra):
    return _ra_attention(q, kk, vv)
