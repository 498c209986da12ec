"""Gradient accumulation written the way training loops write it (nanoGPT's and the Hugging Face Trainer's
habits): micro-batches from `Tensor.split`, the loss divided before backward, the running loss kept as a tensor
and read once with `.item()`, `zero_grad(set_to_none=True)`; the weight is each micro-batch's share of the
batch, as this assignment asks (the loops it is modelled on divide by the number of micro-batches: SLIPS).

Graded by tests/meta/test_honest.py (CASE: the score it must reach, SLIPS: one-line slips, the rows each may
cost)."""

import torch
from torch import nn

CASE = {"problem": "gradient_accumulation", "score": 5}
SLIPS = {
    "one_over_k": ("scale = len(x_micro) / len(inputs)", "scale = 1 / len(micro_batches)",
                   ("uneven splits", "differential: accumulate_gradients")),
    "last_loss_returned": ("running_loss += loss.detach()", "running_loss = loss.detach() / scale",
                           ("the full-batch gradient, float64", "the full-batch gradient, float32", "uneven splits",
                            "train_step", "differential: accumulate_gradients")),
}


def accumulate_gradients(model: nn.Module, loss_fn, inputs, targets, micro_batch_size: int) -> float:
    if micro_batch_size < 1:
        raise ValueError(f"micro_batch_size must be positive, got {micro_batch_size}")
    if len(inputs) == 0:
        raise ValueError("cannot accumulate over an empty batch")
    model.zero_grad(set_to_none=True)
    micro_batches = list(zip(inputs.split(micro_batch_size), targets.split(micro_batch_size)))  # noqa: B905
    running_loss = torch.zeros((), dtype=torch.float64)
    for x_micro, y_micro in micro_batches:
        scale = len(x_micro) / len(inputs)
        loss = loss_fn(model(x_micro), y_micro) * scale
        loss.backward()  # frees this micro-batch's graph before the next forward
        running_loss += loss.detach()
    return running_loss.item()


def train_step(model: nn.Module, optimizer, loss_fn, inputs, targets, micro_batch_size: int) -> float:
    loss = accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size)  # clears stale grads first
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)  # flush the gradients as soon as they are used, as nanoGPT does
    return loss


__all__ = ["accumulate_gradients", "train_step"]
