"""Problem (gradient_accumulation): gradient accumulation.

Oracles:
- The full-batch gradient and loss: one plain forward and backward of the same seeded model on the whole
  batch, in the test process (`oracles.full_batch`), for generated MLPs, batches of 1-12 examples (with
  and without a sequence dimension), mean-reduced MSE and cross-entropy losses, and micro-batch sizes from 1
  to past the batch; the parameters start with stale gradients. Each test draws the splits of its own
  behaviour: even ones (every micro-batch the same size) for the full-batch gradient and train_step, uneven
  ones (the last micro-batch smaller, or the only one, beyond the batch) in their own test, so a slip in the
  weighting of a smaller micro-batch costs that test alone.
- For `train_step`: two steps of torch.optim.SGD (with momentum) on the whole batch at once, in the test
  process; after the step no gradient is left.
- Memory: the peak bytes of the tensors autograd holds for backward, measured by saved-tensor hooks (the
  tests' own instrument, tests/scenarios/gradient_accumulation.py `SavedPeak`, not the solution's
  `memory` problem), compared with the peak of a plain backward on one micro-batch's rows.
- The work done: hooks on the model, the loss and the optimizer the code is given (tests/scenarios/
  gradient_accumulation.py `Work`) record its forwards, loss calls, backwards and steps, in order. The tests
  whose check is only a property (the peak, no gradient left, an invalid size raises) check that record in
  their own calls, on generated inputs, so a constant, a no-op or a table of answers cannot pass them, and they
  wait for no other test: a slip in the gradient's arithmetic costs the gradient's rows alone.

Tolerances: float64 gradients and losses to 1e-10 relative and 1e-12 absolute: the accumulated gradient
sums the same products in another order (a few dozen float64 roundings at 1e-16), while every catalogued
mistake is off by a factor (k, 1/k, n_i/N against 1/k) or by a whole micro-batch's contribution. float32 to
1e-5 relative and 1e-6 absolute (float32 rounds at 6e-8; the sums here have at most a few hundred terms).
Saved bytes: at most 10% plus 64 bytes above the plain micro-batch's peak (the weighted loss may save a
scalar or two), which a full-batch backward (2x to 12x the micro-batch's rows here) exceeds.
"""

import itertools

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from tests import oracles
from tests.checks import Shown, call_text
from tests.documented import cases, expect_documented_error
from tests.scenarios import gradient_accumulation as scenarios
from tests.strategies.gradient_accumulation import grad_accum_specs, peak_specs, split_of

pytestmark = pytest.mark.gradient_accumulation

TOLERANCES = {"float64": (1e-10, 1e-12), "float32": (1e-5, 1e-6)}
HINT = ("clear stale gradients first; scale micro-batch i's mean loss by n_i/N (its share of the batch, not "
        "1/k) before its backward; keep every micro-batch, the last partial one too")


def describe(spec: dict) -> str:
    n, m = spec["batch"], spec["micro_batch_size"]
    sizes = [min(m, n - start) for start in range(0, n, m)]
    loss = Shown(f"<{'MSE' if spec['loss'] == 'mse' else 'cross-entropy'} loss>")
    call = call_text("accumulate_gradients", Shown("<model>"), loss, Shown(f"<{n} examples>"), Shown("<targets>"), m)
    return (f"{call} on "
            f"{spec} (micro-batches of {sizes} examples)")


def loss_hint(got: float, spec: dict, rtol: float, atol: float) -> str:
    """What a wrong loss is, when it is one of the usual ones; else what the right one is."""
    parts = oracles.micro_batch_losses(spec)
    n = sum(size for size, _ in parts)
    right = "return the sum over micro-batches of (n_i/N) * the micro-batch's mean loss"
    candidates = [
        (parts[-1][1], "that is the last micro-batch's loss alone"),
        (sum(loss for _, loss in parts), "that is the sum of the micro-batch means, unweighted"),
        (sum(loss for _, loss in parts) / len(parts),
         "that is each micro-batch weighted 1/k: the last micro-batch is smaller, so weight each by n_i/N"),
    ]
    for value, cause in candidates:
        if abs(got - value) <= atol + rtol * abs(value) and abs(value - sum(k * v for k, v in parts) / n) > atol:
            return f"{cause}; {right}"
    return right


PARTS = ["gradients", "loss"]  # what accumulate_gradients leaves in .grad, and what it returns: a share each


def expect_full_batch(got: dict, expected: dict, spec: dict, source: str = "a plain full-batch backward",
                      where: str = "", part: str | None = None) -> None:
    """`where` names the spec among several in one falsifying example ("specs[1]: "); `part` (PARTS) checks one
    of the two, None both."""
    rtol, atol = TOLERANCES[spec["dtype"]]
    what = where + describe(spec)
    if part in (None, "loss"):
        assert type(got["loss"]) is float, f"{what} should return the loss as a Python float, got {got['loss']!r}"
        assert abs(got["loss"] - expected["loss"]) <= atol + rtol * abs(expected["loss"]), (
            f"{what} returned the loss {got['loss']!r}; the full-batch loss is {expected['loss']!r} ({source})\n"
            f"  hint: {loss_hint(got['loss'], spec, rtol, atol)}")
    if part == "loss":
        return
    for i, (g, e) in enumerate(zip(got["grads"], expected["grads"], strict=True)):
        assert g is not None, f"{what}: parameter {i} has no gradient afterwards"
        torch.testing.assert_close(g, e, rtol=rtol, atol=atol, msg=lambda m, i=i: (
            f"{what}: the gradient of parameter {i} differs from {source}\n{m}\n  hint: {HINT}"))


# -- the accumulated gradient, against the full batch ------------------------------------------------------

@pytest.mark.parametrize("part", PARTS)
@given(specs=st.lists(grad_accum_specs("float64", "even"), min_size=3, max_size=3))
def test_accumulated_gradient_is_the_full_batch_gradient_float64(impl, part, specs):
    got = impl.run(scenarios.accumulate_many, specs)
    for j, (g, spec) in enumerate(zip(got, specs, strict=True)):
        expect_full_batch(g, oracles.full_batch(spec), spec, where=f"specs[{j}] of the falsifying example: ",
                          part=part)


@pytest.mark.parametrize("part", PARTS)
@given(spec=grad_accum_specs("float32", "even"))
def test_accumulated_gradient_is_the_full_batch_gradient_float32(impl, part, spec):
    got = impl.run(scenarios.accumulate, spec)
    expect_full_batch(got, oracles.full_batch(spec), spec, part=part)


def _uneven(batch: int, micro_batch_size: int, loss: str) -> dict:
    return {"seed": batch * 100 + micro_batch_size, "sizes": [5, 7, 3], "batch": batch,
            "micro_batch_size": micro_batch_size, "seq": 0, "loss": loss, "dtype": "float64", "stale": True}


@pytest.mark.parametrize("part", PARTS)
@given(spec=grad_accum_specs("float64", "uneven"))
@example(spec=_uneven(7, 3, "mse"))  # the first failure shown is a small, plain one
@example(spec=_uneven(3, 10, "cross_entropy"))  # one micro-batch, smaller than the micro-batch size
def test_uneven_splits_give_the_full_batch_gradient(impl, part, spec):
    assert split_of(spec["batch"], spec["micro_batch_size"]) == "uneven", "a test premise, not your code"
    expect_full_batch(impl.run(scenarios.accumulate, spec), oracles.full_batch(spec), spec, part=part)


def _invalid(micro_batch_size: int) -> dict:
    return {"seed": 0, "sizes": [3, 4, 2], "batch": 5, "micro_batch_size": micro_batch_size, "seq": 0, "loss": "mse",
            "dtype": "float64", "stale": False}


@given(spec=grad_accum_specs("float64"), invalid=st.integers(-3, 0))
@example(spec=_invalid(2), invalid=0)
@example(spec=_invalid(5), invalid=-2)
def test_invalid_micro_batch_size_raises_value_error(impl, spec, invalid):
    """An invalid size raises ValueError; the spec's own, valid, size does not, and backpropagates the loss (the
    evidence that the check is on the size: a function that always raises, or never does anything, fails)."""
    got = impl.run(scenarios.invalid_and_valid, spec, invalid)
    assert got["invalid"] == "ValueError", (f"accumulate_gradients with micro_batch_size={invalid} should raise "
                                            f"ValueError, raised {got['invalid']}")
    call = describe(spec)
    assert got["valid"] is None, f"{call} raised {got['valid']}: micro_batch_size={spec['micro_batch_size']} is valid"
    assert "backward through the loss" in got["work"], (
        f"{call} ran no backward through the loss it was given (what it did: {_listed(got['work'])})")


# -- train_step, against torch.optim.SGD on the full batch ---------------------------------------------

def train_specs():
    return st.builds(lambda spec, lr, momentum: dict(spec, steps=2, lr=lr, momentum=momentum, stale=True),
                     grad_accum_specs("float64", "even"), st.sampled_from([0.05, 0.5]), st.sampled_from([0.0, 0.9]))


@pytest.mark.parametrize("part", ["parameters", "losses"])  # what the step does, what it returns: a share each
@given(spec=train_specs())
def test_train_step_is_a_full_batch_sgd_step(impl, part, spec):
    got = impl.run(scenarios.train, spec)
    expected = oracles.full_batch_training(spec)
    rtol, atol = TOLERANCES["float64"]
    what = f"two train_step calls on {spec}"
    for g, e in zip(got["losses"] if part == "losses" else [], expected["losses"], strict=False):
        assert type(g) is float and abs(g - e) <= atol + rtol * abs(e), (
            f"{what}: train_step returned the losses {got['losses']}; full-batch SGD's are {expected['losses']}\n"
            f"  hint: return the full-batch loss of the batch, computed before the step")
    for i, (g, e) in enumerate(zip(got["params"] if part == "parameters" else [], expected["params"], strict=False)):
        torch.testing.assert_close(g, e, rtol=rtol, atol=atol, msg=lambda m, i=i: (
            f"{what}: parameter {i} differs from torch.optim.SGD stepping on the whole batch\n{m}\n"
            f"  hint: clear the gradients, accumulate (n_i/N each), then one optimizer.step() per call"))


@given(spec=train_specs())
def test_train_step_leaves_no_gradient_behind(impl, spec):
    """After each step no gradient is left; each call did step, after a backward through the loss (the evidence
    that there was a gradient to leave: a train_step that only clears, or does nothing, fails)."""
    got = impl.run(scenarios.train, spec)
    for call, work in enumerate(got["work"], 1):
        stepped = "step" in work and "backward through the loss" in work[:len(work) - work[::-1].index("step")]
        assert stepped, (f"train_step call {call} of 2 on {spec} should backpropagate the loss and then step the "
                         f"optimizer; what it did: {_listed(work)}")
    left = [i for i, g in enumerate(got["grads"]) if g is not None and bool(g.ne(0).any())]
    assert not left, (f"after train_step on {spec}, parameters {left} still hold a gradient\n"
                      f"  hint: optimizer.zero_grad() after the step, so no gradient outlives it")


# -- memory ------------------------------------------------------------------------------------------------

MEMORY_SPEC = {"seed": 3, "sizes": [24, 40, 16], "batch": 12, "seq": 0, "dtype": "float32", "stale": False,
               "micro_batch_size": 12}


def _listed(work: list[str]) -> str:
    return ", ".join(work) or "nothing"


def one_at_a_time(batch: int, m: int) -> list[str]:
    """The Work events (tests/scenarios/gradient_accumulation.py) of accumulating a batch m examples at a time."""
    return [event for start in range(0, batch, m) for event in (
        f"forward {start}:{start + m}", f"loss {m}", "backward through the loss", "backward into the model")]


@given(spec=peak_specs())
@example(spec=dict(MEMORY_SPEC, loss="mse", peak_sizes=[12, 6, 4, 1]))
@example(spec=dict(MEMORY_SPEC, loss="cross_entropy", peak_sizes=[12, 6, 4, 1]))
def test_saved_activations_peak_falls_with_the_micro_batch(impl, spec):
    """For each micro-batch size (even splits, largest first): the call ran a forward, the loss and a backward on
    each micro-batch in turn (the evidence that it accumulated, which no constant, no-op or table leaves; its
    gradients are other rows'), and its peak of saved activations is that of a plain backward on one
    micro-batch, falling as the micro-batch shrinks."""
    sizes, n = spec["peak_sizes"], spec["batch"]
    got = impl.run(scenarios.accumulation_peaks, spec, sizes)
    for m, work in zip(sizes, got["work"], strict=True):
        assert work == one_at_a_time(n, m), (
            f"accumulate_gradients(micro_batch_size={m}) on a batch of {n} should run, for each micro-batch of {m} "
            f"in order, a forward of the model on its rows, the loss on its outputs and a backward through that "
            f"loss into the model, before the next micro-batch's forward: {_listed(one_at_a_time(n, m))}; what it "
            f"did: {_listed(work)}")
    for m, peak in zip(sizes, got["peaks"], strict=True):
        expected = oracles.plain_peak(spec, m)
        assert peak <= expected * 1.1 + 64, (
            f"accumulate_gradients(micro_batch_size={m}) on a batch of {n} held {peak} bytes of saved activations "
            f"at its peak; a plain backward on {m} examples holds {expected}\n"
            f"  hint: backward each micro-batch before the next forward, so only one micro-batch's activations "
            f"are alive at a time (one backward of the summed losses keeps every graph alive)")
    assert all(a > b for a, b in itertools.pairwise(got["peaks"])), (
        f"the peak saved-activation bytes of accumulate_gradients should fall as the micro-batch shrinks "
        f"{sizes}: got {got['peaks']}")


# -- differential ------------------------------------------------------------------------------------------

@given(spec=grad_accum_specs("float64"))
def test_accumulate_matches_reference(impl, ref, spec):
    got = impl.run(scenarios.accumulate, spec)
    expect_full_batch(got, ref.run(scenarios.accumulate, spec), spec, source="the reference's accumulation")


# -- every error the docstrings promise, on a fixed call (tests/documented.py) -------------------------------

@pytest.mark.parametrize("case", cases("gradient_accumulation"))
def test_documented_errors_are_raised(impl, case):
    expect_documented_error(impl, "gradient_accumulation", case)
