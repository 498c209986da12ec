"""Scenarios: module-level functions `scenario(pkg, *data)` that the isolated worker can import.

Stateful work that must live beside the code under test (a counter around a model call, an optimizer,
an autograd graph) runs here and returns plain data; the test compares that data in its own process.
Everything a scenario takes and returns is data (see grader/harness/codec.py).
"""


def plain_training(model, optimizer, loss_fn, batches) -> dict:
    """The plain loop that mixed precision and gradient accumulation are compared with: for each (inputs,
    targets) batch, zero the gradients, one forward and backward on the whole batch, one optimizer step.
    Returns the losses (floats) and the final parameters."""
    losses = []
    for inputs, targets in batches:
        optimizer.zero_grad()
        loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return {"losses": losses, "params": [p.detach().clone() for p in model.parameters()]}
