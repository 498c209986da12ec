"""Problem (memory): counting bytes. See handout.md, "Problem (memory)".

Conventions (this course uses these):
- A tensor's bytes are its number of elements times its dtype's size, counted as torch counts them: a
  packed dtype (`float4_e2m1fn_x2`, `quint4x2`, `quint2x4`, `bits1x8`, ...) holds 2, 4 or 8 values in one
  1-byte element, and the shape counts those bytes; torch's `uint1`..`uint7` and `int1`..`int7` take a
  whole byte per element.
- What training keeps per parameter depends on a named precision policy and optimizer (`POLICIES` and
  `OPTIMIZER_STATE_TENSORS` in `assignment/given.py`), never on one magic number. Activations are
  counted separately.
- Every count of bytes or parameters is an exact `int`.
"""

from collections.abc import Sequence

import torch
from torch import nn

from assignment.given import OPTIMIZER_STATE_TENSORS, POLICIES, BytesPerParam, PrecisionPolicy  # noqa: F401


def tensor_bytes(shape: Sequence[int], dtype: torch.dtype) -> int:
    """Bytes of a tensor of `shape` and `dtype`, without allocating it (the shape may describe terabytes).

    `shape` is a sequence of sizes (a tuple, list or `torch.Size`; `()` is a scalar, one element). Every
    torch dtype works, bool, complex and the packed sub-byte ones included (see the module's conventions).

    A 4 x 8 float32 matrix is 128 bytes; a 10**6 x 10**6 bfloat16 matrix is 2 * 10**12 bytes."""
    raise NotImplementedError("tensor_bytes")


def parameter_count(module: nn.Module) -> int:
    """Number of parameter values in `module`, each Parameter counted once.

    A Parameter that appears twice in the module tree (tied weights, such as an LM head that reuses the
    embedding matrix, or one block used at two places) is one set of numbers in memory: count it once.
    Frozen parameters (requires_grad=False) are parameters; buffers (BatchNorm's running statistics) are
    not."""
    raise NotImplementedError("parameter_count")


def parameter_bytes(module: nn.Module) -> int:
    """Bytes of `module`'s parameters, each Parameter once, each in its own dtype (a model may mix
    float32 and bfloat16 parameters)."""
    raise NotImplementedError("parameter_bytes")


def bytes_per_param(policy: PrecisionPolicy | str, optimizer: str) -> BytesPerParam:
    """What one parameter costs in training, by kind: its value, its gradient, the optimizer's state and
    the master copy of the weights.

    `policy` is a `PrecisionPolicy` or the name of one in `POLICIES`; `optimizer` is a key of
    `OPTIMIZER_STATE_TENSORS`, which says how many parameter-sized state tensors it keeps (AdamW: the
    first and second moments; SGD with momentum: the momentum buffer; AdaGrad: the sum of squared
    gradients; plain SGD: none). Each state tensor is in `policy.state_dtype`; the master copy, when the
    policy has one, is in `policy.master_dtype`. Raise ValueError for an unknown policy name or optimizer.

    AdamW: "fp32" 4+4+8+0 = 16, "bf16" (the lecture's) 2+2+8+0 = 12, "bf16_master" 2+2+8+4 = 16."""
    raise NotImplementedError("bytes_per_param")


def model_state_bytes(n_params: int, policy: PrecisionPolicy | str, optimizer: str) -> int:
    """Bytes that training `n_params` parameters keeps besides activations: parameters, gradients,
    optimizer state and master weights."""
    raise NotImplementedError("model_state_bytes")


def max_trainable_params(memory_bytes: int | float, policy: PrecisionPolicy | str, optimizer: str) -> int:
    """The largest number of parameters whose `model_state_bytes` fit in `memory_bytes` (activations
    ignored).

    A worked example (ours, not the lecture's): 8 H100s (8 * 80e9 bytes) with AdamW in the lecture's
    "bf16" policy (12 bytes per parameter) hold 53_333_333_333 parameters."""
    raise NotImplementedError("max_trainable_params")


class SavedActivations:
    """Context manager that measures the bytes autograd saves for backward during the code it wraps.

    Use `torch.autograd.graph.saved_tensors_hooks`: every tensor an op saves for its backward passes
    through the pack hook (return it unchanged, and unchanged from the unpack hook, so backward still
    works). Count memory, not tensor objects:
    - each storage once (`t.untyped_storage()`; its `data_ptr()` identifies it and `nbytes()` is its
      size): ReLU saves its output and the next Linear saves the same tensor as its input; a view (a
      reshape, a slice) saves the whole storage it looks into, counted once with its base;
    - parameters are not activations: skip a saved tensor that is an `nn.Parameter` or a view of one
      (its `._base` is a Parameter; a Linear saves its weight's transpose).

    Attributes, reset to zero each time the context is entered:
    - `total`: int, the bytes of the distinct storages saved;
    - `storages`: int, how many distinct storages that is.

    Example::

        with SavedActivations() as saved:
            loss = model(x).sum()
        saved.total
        loss.backward()
    """

    def __init__(self) -> None:
        raise NotImplementedError("SavedActivations.__init__")

    def __enter__(self) -> "SavedActivations":
        raise NotImplementedError("SavedActivations.__enter__")

    def __exit__(self, *exc) -> None:
        raise NotImplementedError("SavedActivations.__exit__")


def mlp_activation_bytes(batch: int, width: int, layers: int, dtype: torch.dtype) -> int:
    """Bytes of activations saved by the forward pass of `layers` Linear(width, width) layers in `dtype`
    with a ReLU between each two (none after the last), on an input of `batch` x `width` that needs no
    gradient; parameters excluded, each storage once (what `SavedActivations` measures).

    A worked example (ours, not the lecture's): batch 64, width 1024, 16 layers in bfloat16 save
    2_097_152 bytes."""
    raise NotImplementedError("mlp_activation_bytes")


__all__ = [
    "BytesPerParam",
    "PrecisionPolicy",
    "tensor_bytes",
    "parameter_count",
    "parameter_bytes",
    "bytes_per_param",
    "model_state_bytes",
    "max_trainable_params",
    "SavedActivations",
    "mlp_activation_bytes",
]
