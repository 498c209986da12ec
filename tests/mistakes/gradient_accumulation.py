"""Classic mistakes in gradient accumulation, each written as the wrong code a student would write."""

import torch

from tests.mistakes import Mistake


def _split(inputs, targets, m):
    if m < 1:
        raise ValueError(f"micro_batch_size must be >= 1, got {m}")
    if inputs.shape[0] == 0:
        raise ValueError("an empty batch")
    return [(inputs[s : s + m], targets[s : s + m]) for s in range(0, inputs.shape[0], m)]


def sum_of_means(model, loss_fn, inputs, targets, micro_batch_size):
    """Each micro-batch's mean loss backpropagated as is: the gradient of the sum of k means, k times too big."""
    model.zero_grad(set_to_none=True)
    total = 0.0
    for x, y in _split(inputs, targets, micro_batch_size):
        loss = loss_fn(model(x), y)
        loss.backward()
        total += loss.item()
    return total


def one_over_k(model, loss_fn, inputs, targets, micro_batch_size):
    """Every micro-batch weighted 1/k: right only when all micro-batches are the same size."""
    model.zero_grad(set_to_none=True)
    parts = _split(inputs, targets, micro_batch_size)
    total = 0.0
    for x, y in parts:
        loss = loss_fn(model(x), y) / len(parts)
        loss.backward()
        total += loss.item()
    return total


def zeroed_between(model, loss_fn, inputs, targets, micro_batch_size):
    """The gradients cleared before every micro-batch: only the last one's contribution is left."""
    n, total = inputs.shape[0], 0.0
    for x, y in _split(inputs, targets, micro_batch_size):
        model.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y) * (x.shape[0] / n)
        loss.backward()
        total += loss.item()
    return total


def stale_grads(model, loss_fn, inputs, targets, micro_batch_size):
    """No clearing before accumulating: whatever .grad held from before is added in."""
    n, total = inputs.shape[0], 0.0
    for x, y in _split(inputs, targets, micro_batch_size):
        loss = loss_fn(model(x), y) * (x.shape[0] / n)
        loss.backward()
        total += loss.item()
    return total


def drops_last_partial(model, loss_fn, inputs, targets, micro_batch_size):
    """range(0, N - N % m, m): the last, partial micro-batch never runs (weights still n_i/N)."""
    model.zero_grad(set_to_none=True)
    n, m, total = inputs.shape[0], micro_batch_size, 0.0
    for s in range(0, n - n % m, m):
        loss = loss_fn(model(inputs[s : s + m]), targets[s : s + m]) * (m / n)
        loss.backward()
        total += loss.item()
    return total


def returns_last_loss(model, loss_fn, inputs, targets, micro_batch_size):
    """The right gradient, but the loss returned is the last micro-batch's mean."""
    model.zero_grad(set_to_none=True)
    n, last = inputs.shape[0], None
    for x, y in _split(inputs, targets, micro_batch_size):
        loss = loss_fn(model(x), y)
        (loss * (x.shape[0] / n)).backward()
        last = loss.item()
    return last


def unweighted_mean_loss(model, loss_fn, inputs, targets, micro_batch_size):
    """The right gradient, but the loss returned is the plain mean of the micro-batch means."""
    model.zero_grad(set_to_none=True)
    n, losses = inputs.shape[0], []
    for x, y in _split(inputs, targets, micro_batch_size):
        loss = loss_fn(model(x), y)
        (loss * (x.shape[0] / n)).backward()
        losses.append(loss.item())
    return sum(losses) / len(losses)


def full_batch_backward(model, loss_fn, inputs, targets, micro_batch_size):
    """micro_batch_size ignored: one backward on the whole batch. The right gradient, no memory saved."""
    _split(inputs, targets, micro_batch_size)  # validates it, and nothing else
    model.zero_grad(set_to_none=True)
    loss = loss_fn(model(inputs), targets)
    loss.backward()
    return loss.item()


def one_backward_at_the_end(model, loss_fn, inputs, targets, micro_batch_size):
    """The weighted losses summed and backpropagated once: every micro-batch's graph alive together."""
    model.zero_grad(set_to_none=True)
    n, total = inputs.shape[0], 0.0
    for x, y in _split(inputs, targets, micro_batch_size):
        total = total + loss_fn(model(x), y) * (x.shape[0] / n)
    total.backward()
    return total.item()


def _correct(model, loss_fn, inputs, targets, micro_batch_size):
    model.zero_grad(set_to_none=True)
    n, total = inputs.shape[0], 0.0
    for x, y in _split(inputs, targets, micro_batch_size):
        loss = loss_fn(model(x), y) * (x.shape[0] / n)
        loss.backward()
        total += loss.item()
    return total


def no_zero_after_step(model, optimizer, loss_fn, inputs, targets, micro_batch_size):
    loss = _correct(model, loss_fn, inputs, targets, micro_batch_size)
    optimizer.step()
    return loss


def step_per_micro_batch(model, optimizer, loss_fn, inputs, targets, micro_batch_size):
    """An optimizer step after every micro-batch: k small steps instead of one."""
    optimizer.zero_grad(set_to_none=True)
    n, total = inputs.shape[0], 0.0
    for x, y in _split(inputs, targets, micro_batch_size):
        loss = loss_fn(model(x), y) * (x.shape[0] / n)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        total += loss.item()
    return total


def loss_after_step(model, optimizer, loss_fn, inputs, targets, micro_batch_size):
    """Returns the loss re-evaluated after the step instead of the loss the step was taken on."""
    optimizer.zero_grad(set_to_none=True)
    _correct(model, loss_fn, inputs, targets, micro_batch_size)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    with torch.no_grad():
        return loss_fn(model(inputs), targets).item()


def _m(id, description, **replaces):
    return Mistake("gradient_accumulation", id, description, replaces)


MISTAKES = [
    _m("sum_of_means", "each micro-batch's mean loss backpropagated unscaled (the sum of k means)",
       accumulate_gradients=sum_of_means),
    _m("one_over_k", "every micro-batch weighted 1/k, wrong when the last micro-batch is smaller",
       accumulate_gradients=one_over_k),
    _m("zeroed_between", "gradients cleared before every micro-batch, so only the last one counts",
       accumulate_gradients=zeroed_between),
    _m("stale_grads", "gradients not cleared before accumulating: stale .grad added in",
       accumulate_gradients=stale_grads),
    _m("drops_last_partial", "the last, partial micro-batch skipped", accumulate_gradients=drops_last_partial),
    _m("returns_last_loss", "the last micro-batch's loss returned instead of the full batch's",
       accumulate_gradients=returns_last_loss),
    _m("unweighted_mean_loss", "the loss returned as the unweighted mean of the micro-batch losses",
       accumulate_gradients=unweighted_mean_loss),
    _m("full_batch_backward", "micro_batch_size ignored: one full-batch backward, no activation memory saved",
       accumulate_gradients=full_batch_backward),
    _m("one_backward_at_the_end", "the scaled losses summed and backpropagated once: all graphs alive together",
       accumulate_gradients=one_backward_at_the_end),
    _m("no_zero_after_step", "train_step leaves the gradients in .grad after the step",
       train_step=no_zero_after_step),
    _m("step_per_micro_batch", "train_step steps the optimizer after every micro-batch",
       train_step=step_per_micro_batch),
    _m("loss_after_step", "train_step returns the loss after the step instead of the loss it stepped on",
       train_step=loss_after_step),
]


# The behaviours each mistake may cost: those whose tests it failed under the held-out grading seed of
# tests/meta/test_mistakes.py, which checks it (the behaviours that wait for them may lose their points too).
# `python -m tests.meta.mutation --every-test --profile grade --grading-seed 11 --costs` prints what a run saw.
COSTS = {
    "sum_of_means": ("the full-batch gradient, float32", "the full-batch gradient, float64", "uneven splits"),
    "one_over_k": ("uneven splits",),
    "zeroed_between": ("the full-batch gradient, float32", "the full-batch gradient, float64", "uneven splits"),
    "stale_grads": ("the full-batch gradient, float32", "the full-batch gradient, float64", "uneven splits"),
    "drops_last_partial": ("no gradient left, invalid sizes", "uneven splits"),
    "returns_last_loss": ("the full-batch gradient, float32", "the full-batch gradient, float64", "uneven splits"),
    "unweighted_mean_loss": ("uneven splits",),
    "full_batch_backward": ("one micro-batch's activations at a time",),
    "one_backward_at_the_end": ("one micro-batch's activations at a time",),
    "no_zero_after_step": ("no gradient left, invalid sizes",),
    "step_per_micro_batch": ("train_step",),
    "loss_after_step": ("train_step",),
}
