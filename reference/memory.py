"""Problem (memory): counting bytes. Reference solution; the spec is in assignment/memory.py."""

import math
from collections.abc import Sequence

import torch
from jaxtyping import Shaped
from torch import Tensor, nn

from assignment.given import OPTIMIZER_STATE_TENSORS, POLICIES, BytesPerParam, PrecisionPolicy


def tensor_bytes(shape: Sequence[int], dtype: torch.dtype) -> int:
    return math.prod(shape) * dtype.itemsize


def parameter_count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())  # parameters() yields each Parameter once


def parameter_bytes(module: nn.Module) -> int:
    return sum(tensor_bytes(p.shape, p.dtype) for p in module.parameters())


def _policy(policy: PrecisionPolicy | str) -> PrecisionPolicy:
    if isinstance(policy, PrecisionPolicy):
        return policy
    if policy not in POLICIES:
        raise ValueError(f"unknown precision policy {policy!r}; known: {', '.join(POLICIES)}")
    return POLICIES[policy]


def bytes_per_param(policy: PrecisionPolicy | str, optimizer: str) -> BytesPerParam:
    p = _policy(policy)
    if optimizer not in OPTIMIZER_STATE_TENSORS:
        raise ValueError(f"unknown optimizer {optimizer!r}; known: {', '.join(OPTIMIZER_STATE_TENSORS)}")
    return BytesPerParam(
        params=p.param_dtype.itemsize,
        grads=p.grad_dtype.itemsize,
        optimizer_state=OPTIMIZER_STATE_TENSORS[optimizer] * p.state_dtype.itemsize,
        master_weights=p.master_dtype.itemsize if p.master_dtype is not None else 0,
    )


def model_state_bytes(n_params: int, policy: PrecisionPolicy | str, optimizer: str) -> int:
    return n_params * bytes_per_param(policy, optimizer).total


def max_trainable_params(memory_bytes: int | float, policy: PrecisionPolicy | str, optimizer: str) -> int:
    return int(memory_bytes // bytes_per_param(policy, optimizer).total)


def _is_parameter(t: Shaped[Tensor, "*shape"]) -> bool:
    return isinstance(t, nn.Parameter) or isinstance(t._base, nn.Parameter)


class SavedActivations:
    def __init__(self) -> None:
        self.total = 0
        self.storages = 0
        self._seen: set[int] = set()
        self._hooks = None

    def _pack(self, t: Shaped[Tensor, "*shape"]) -> Shaped[Tensor, "*shape"]:
        if not _is_parameter(t):
            storage = t.untyped_storage()
            if storage.data_ptr() not in self._seen:
                self._seen.add(storage.data_ptr())
                self.total += storage.nbytes()
                self.storages += 1
        return t

    def __enter__(self) -> "SavedActivations":
        self.total, self.storages, self._seen = 0, 0, set()
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._hooks.__exit__(*exc)
        self._hooks = None


def mlp_activation_bytes(batch: int, width: int, layers: int, dtype: torch.dtype) -> int:
    # each Linear keeps its input; a ReLU's output is the next Linear's input (one storage)
    return layers * tensor_bytes((batch, width), dtype)


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
