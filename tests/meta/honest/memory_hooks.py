"""Counting bytes the way memory-profiling notes and blog posts do: `dtype.itemsize` and `math.prod` for a
tensor's bytes, `sum(p.numel() for p in module.parameters())`, a policy table read with `getattr`, and a
`saved_tensors_hooks` meter that keeps a dict of the storages it has seen (the hooks entered by hand in
`__enter__`, kept on self for `__exit__`). The notes it is modelled on deduplicate by the tensor object, or count
a saved view's own bytes: SLIPS.

Graded by tests/meta/test_honest.py."""

import math

import torch
from torch import nn

from assignment.given import OPTIMIZER_STATE_TENSORS, POLICIES, BytesPerParam, PrecisionPolicy

CASE = {"problem": "memory", "score": 8}
SLIPS = {
    "deduplicated_by_object": ("        key = tensor.untyped_storage().data_ptr()", "        key = id(tensor)",
                               ("SavedActivations: the autograd graph", "differential: all functions")),
    "view_counted_by_its_own_size": (
        "        self.seen[key] = tensor.untyped_storage().nbytes()",
        "        self.seen[key] = tensor.numel() * tensor.element_size()",
        ("SavedActivations: the autograd graph", "differential: all functions")),
}


def tensor_bytes(shape, dtype):
    return math.prod(shape) * dtype.itemsize


def parameter_count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())  # parameters() yields a shared one once


def parameter_bytes(module: nn.Module) -> int:
    return sum(p.numel() * p.element_size() for p in module.parameters())


def _policy(policy) -> PrecisionPolicy:
    if isinstance(policy, PrecisionPolicy):
        return policy
    if policy not in POLICIES:
        raise ValueError(f"unknown precision policy {policy!r}; known: {sorted(POLICIES)}")
    return POLICIES[policy]


def bytes_per_param(policy, optimizer):
    p = _policy(policy)
    if optimizer not in OPTIMIZER_STATE_TENSORS:
        raise ValueError(f"unknown optimizer {optimizer!r}; known: {sorted(OPTIMIZER_STATE_TENSORS)}")
    master = 0 if p.master_dtype is None else p.master_dtype.itemsize
    return BytesPerParam(params=p.param_dtype.itemsize, grads=p.grad_dtype.itemsize,
                         optimizer_state=OPTIMIZER_STATE_TENSORS[optimizer] * p.state_dtype.itemsize,
                         master_weights=master)


def model_state_bytes(n_params, policy, optimizer):
    return n_params * bytes_per_param(policy, optimizer).total


def max_trainable_params(memory_bytes, policy, optimizer):
    per_param = bytes_per_param(policy, optimizer).total
    if isinstance(memory_bytes, float):
        memory_bytes = int(memory_bytes)  # a float number of bytes is a whole one (8 * 80e9)
    return memory_bytes // per_param


class SavedActivations:
    def __init__(self) -> None:
        self.total, self.storages, self.seen = 0, 0, {}
        self._hooks = None

    def _is_parameter(self, tensor) -> bool:
        return isinstance(tensor, nn.Parameter) or isinstance(getattr(tensor, "_base", None), nn.Parameter)

    def pack(self, tensor):
        if self._is_parameter(tensor):
            return tensor
        key = tensor.untyped_storage().data_ptr()
        if key not in self.seen:
            self.seen[key] = tensor.untyped_storage().nbytes()
            self.total += self.seen[key]
            self.storages += 1
        return tensor

    @staticmethod
    def unpack(tensor):
        return tensor

    def __enter__(self):
        self.total, self.storages, self.seen = 0, 0, {}
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc):
        self._hooks.__exit__(*exc)
        self._hooks = None


def mlp_activation_bytes(batch, width, layers, dtype):
    # each Linear keeps its input for its weight's gradient; a ReLU's output is the next Linear's input
    return layers * batch * width * dtype.itemsize


__all__ = ["BytesPerParam", "PrecisionPolicy", "tensor_bytes", "parameter_count", "parameter_bytes",
           "bytes_per_param", "model_state_bytes", "max_trainable_params", "SavedActivations",
           "mlp_activation_bytes"]
