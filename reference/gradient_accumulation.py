"""Problem (gradient_accumulation): gradient accumulation. Reference solution; the spec is in
assignment/gradient_accumulation.py."""

from collections.abc import Callable

import torch
from jaxtyping import Float, Shaped
from torch import Tensor, nn


def accumulate_gradients(
    model: nn.Module,
    loss_fn: Callable[[Tensor, Tensor], Tensor],
    inputs: Float[Tensor, "batch ..."],
    targets: Shaped[Tensor, "batch ..."],
    micro_batch_size: int,
) -> float:
    n = inputs.shape[0]
    if micro_batch_size < 1:
        raise ValueError(f"micro_batch_size must be >= 1, got {micro_batch_size}")
    if n == 0:
        raise ValueError("the batch is empty")
    model.zero_grad(set_to_none=True)
    total = torch.zeros((), dtype=torch.float64, device=inputs.device)
    for start in range(0, n, micro_batch_size):
        x = inputs[start : start + micro_batch_size]
        y = targets[start : start + micro_batch_size]
        loss = loss_fn(model(x), y) * (x.shape[0] / n)  # this micro-batch's share of the batch mean
        loss.backward()  # frees this micro-batch's activations before the next forward
        total += loss.detach().to(torch.float64)  # no .item() per micro-batch: no sync on an accelerator
    return total.item()


def train_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    loss_fn: Callable[[Tensor, Tensor], Tensor],
    inputs: Float[Tensor, "batch ..."],
    targets: Shaped[Tensor, "batch ..."],
    micro_batch_size: int,
) -> float:
    optimizer.zero_grad(set_to_none=True)
    loss = accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss


__all__ = ["accumulate_gradients", "train_step"]
