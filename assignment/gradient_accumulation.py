"""Problem (gradient_accumulation): gradient accumulation. See handout.md, "Problem (gradient_accumulation)".

Conventions:
- `loss_fn(outputs, targets)` is a *mean-reduced* loss: the mean over the examples it is given (as
  `F.mse_loss` and `F.cross_entropy` are by default). The full-batch loss is its value on all N examples.
- The batch is split along dimension 0, in order, into micro-batches of `micro_batch_size` examples; the
  last one has the N mod micro_batch_size left over (when that is not 0). Micro-batch i, with n_i
  examples, is weighted by its share of the batch, n_i / N: the weighted sum of the micro-batch means is
  exactly the full-batch mean, so the accumulated gradient is exactly the full-batch gradient, uneven last
  micro-batch included.
- Losses are returned as Python floats.
"""

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
    """Leave in every parameter's `.grad` the gradient of the full-batch loss, computed one micro-batch at
    a time, and return the full-batch loss (a Python float).

    - First clear the gradients the parameters hold from before (set them to None, or to zero): what is
      left in `.grad` afterwards is this batch's gradient only.
    - For each micro-batch in order: forward, the micro-batch's loss scaled by n_i / N, backward. Each
      backward adds into `.grad`; only one micro-batch's activations are alive at a time (that is the
      point: the memory of a micro-batch, the gradient of the batch).
    - Return the full-batch loss, the sum of the scaled micro-batch losses.

    Raises ValueError if `micro_batch_size < 1` or the batch is empty (`inputs` and `targets` with different
    batch sizes are a shape error that the annotations report). A `micro_batch_size` of N or more is one
    micro-batch: the plain full-batch step.
    """
    raise NotImplementedError("accumulate_gradients")


def train_step(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    loss_fn: Callable[[Tensor, Tensor], Tensor],
    inputs: Float[Tensor, "batch ..."],
    targets: Shaped[Tensor, "batch ..."],
    micro_batch_size: int,
) -> float:
    """One optimizer step on the whole batch, with gradients accumulated over micro-batches: clear the
    gradients, accumulate (`accumulate_gradients`), `optimizer.step()` once, then clear the gradients
    again (`optimizer.zero_grad()`: set to None, or to zero), so that no gradient outlives the step.
    Returns the full-batch loss before the step (a Python float).

    The result equals a plain step of the same optimizer on the whole batch at once."""
    raise NotImplementedError("train_step")


__all__ = ["accumulate_gradients", "train_step"]
