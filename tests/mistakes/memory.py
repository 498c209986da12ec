"""Classic mistakes in counting bytes, each written as the wrong function a student would write."""

import torch

from reference import memory as ref
from tests.mistakes import Mistake


def allocates(shape, dtype):
    return torch.empty(tuple(shape), dtype=dtype).nbytes


def bits_over_eight(shape, dtype):
    info = torch.finfo(dtype) if dtype.is_floating_point else torch.iinfo(dtype)
    return ref.math.prod(shape) * info.bits // 8


def packed_halved(shape, dtype):
    # treats the shape of a packed dtype as counting 4-bit values
    n = ref.tensor_bytes(shape, dtype)
    return n // 2 if str(dtype).endswith("x2") else n


def count_tied_twice(module):
    return sum(p.numel() for _, p in module.named_parameters(remove_duplicate=False))


def count_trainable_only(module):
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def count_state_dict(module):
    return sum(t.numel() for t in module.state_dict().values())


def bytes_as_fp32(module):
    return 4 * ref.parameter_count(module)


def bytes_tied_twice(module):
    return sum(p.numel() * p.element_size() for _, p in module.named_parameters(remove_duplicate=False))


def state_in_param_dtype(policy, optimizer):
    b = ref.bytes_per_param(policy, optimizer)
    p = ref._policy(policy)
    return ref.BytesPerParam(b.params, b.grads, ref.OPTIMIZER_STATE_TENSORS[optimizer] * p.param_dtype.itemsize,
                             b.master_weights)


def master_ignored(policy, optimizer):
    b = ref.bytes_per_param(policy, optimizer)
    return ref.BytesPerParam(b.params, b.grads, b.optimizer_state, 0)


def grads_in_fp32(policy, optimizer):
    b = ref.bytes_per_param(policy, optimizer)
    return ref.BytesPerParam(b.params, 4, b.optimizer_state, b.master_weights)


def adam_one_moment(policy, optimizer):
    b = ref.bytes_per_param(policy, optimizer)
    if optimizer != "adamw":
        return b
    return ref.BytesPerParam(b.params, b.grads, b.optimizer_state // 2, b.master_weights)


def state_bytes_without_grads(n_params, policy, optimizer):
    b = ref.bytes_per_param(policy, optimizer)
    return n_params * (b.total - b.grads)


def max_params_rounded_up(memory_bytes, policy, optimizer):
    return ref.math.ceil(memory_bytes / ref.bytes_per_param(policy, optimizer).total)


def max_params_sixteen(memory_bytes, policy, optimizer):
    return int(memory_bytes // 16)


class SavedEveryTensor(ref.SavedActivations):
    """Adds each saved tensor's bytes, without asking whether its storage was already counted."""

    def _pack(self, t):
        if not ref._is_parameter(t):
            self.total += t.numel() * t.element_size()
            self.storages += 1
        return t


class SavedWithParameters(ref.SavedActivations):
    def _pack(self, t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in self._seen:
            self._seen.add(storage.data_ptr())
            self.total += storage.nbytes()
            self.storages += 1
        return t


class SavedDedupById(ref.SavedActivations):
    """Deduplicates tensor objects, not storages: a view is a new object over the same memory."""

    def _pack(self, t):
        if not ref._is_parameter(t) and id(t) not in self._seen:
            self._seen.add(id(t))
            self.total += t.numel() * t.element_size()
            self.storages += 1
        return t


class SavedViewBytes(ref.SavedActivations):
    """Counts a storage once, but by the first view's size rather than the whole storage."""

    def _pack(self, t):
        if not ref._is_parameter(t) and t.untyped_storage().data_ptr() not in self._seen:
            self._seen.add(t.untyped_storage().data_ptr())
            self.total += t.numel() * t.element_size()
            self.storages += 1
        return t


class SavedNeverResets(ref.SavedActivations):
    def __enter__(self):
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)
        self._hooks.__enter__()
        return self


class SavedDetaches(ref.SavedActivations):
    """Hands back a detached copy from the unpack hook: backward no longer reaches the earlier layers."""

    def __enter__(self):
        super().__enter__()
        self._hooks.__exit__(None, None, None)
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t.detach() * 1.0001)
        self._hooks.__enter__()
        return self


def mlp_relu_counted_apart(batch, width, layers, dtype):
    return (2 * layers - 1) * ref.tensor_bytes((batch, width), dtype)


def mlp_forgets_input(batch, width, layers, dtype):
    return (layers - 1) * ref.tensor_bytes((batch, width), dtype)


def mlp_fp32(batch, width, layers, dtype):
    return layers * batch * width * 4


def loops_forever(shape, dtype):
    # a helper that never returns (a loop whose condition never changes): parameter_bytes and mlp_activation_bytes
    # call it, as the reference's do
    while True:
        pass


def _m(id, description, loops=False, **replaces):
    return Mistake("memory", id, description, replaces, loops=loops)


MISTAKES = [
    _m("allocates", "tensor_bytes allocates the tensor to ask its nbytes (fails for terabytes)",
       tensor_bytes=allocates),
    _m("bits_over_eight", "tensor_bytes from finfo/iinfo bits / 8 (no bits for bool, complex, packed dtypes)",
       tensor_bytes=bits_over_eight),
    _m("packed_halved", "a packed fp4 element counted as half a byte (torch's element is the packed byte)",
       tensor_bytes=packed_halved),
    _m("tied_counted_twice", "tied or shared parameters counted at each place they appear",
       parameter_count=count_tied_twice),
    _m("trainable_only", "frozen parameters left out of the count", parameter_count=count_trainable_only),
    _m("state_dict", "parameters counted from state_dict (buffers in, tied weights twice)",
       parameter_count=count_state_dict),
    _m("bytes_assume_fp32", "4 bytes per parameter whatever its dtype", parameter_bytes=bytes_as_fp32),
    _m("bytes_tied_twice", "tied parameters' bytes counted twice", parameter_bytes=bytes_tied_twice),
    _m("state_in_param_dtype", "optimizer state in the parameter's dtype (torch's default, not the policy's)",
       bytes_per_param=state_in_param_dtype),
    _m("master_ignored", "the fp32 master copy of bf16_master forgotten", bytes_per_param=master_ignored),
    _m("grads_fp32", "gradients always 4 bytes", bytes_per_param=grads_in_fp32),
    _m("adam_one_moment", "AdamW keeps one state tensor instead of two", bytes_per_param=adam_one_moment),
    _m("state_without_grads", "model state without the gradients", model_state_bytes=state_bytes_without_grads),
    _m("max_params_ceil", "parameters that fit rounded up", max_trainable_params=max_params_rounded_up),
    _m("max_params_16", "16 bytes per parameter whatever the policy", max_trainable_params=max_params_sixteen),
    _m("saved_every_tensor", "each saved tensor counted, not each storage (ReLU output counted twice)",
       SavedActivations=SavedEveryTensor),
    _m("saved_parameters", "parameters (a Linear's saved weight) counted as activations",
       SavedActivations=SavedWithParameters),
    _m("saved_dedup_by_id", "tensors deduplicated by Python object, not by storage (views counted again)",
       SavedActivations=SavedDedupById),
    _m("saved_view_bytes", "a storage counted by the size of the first view seen, not the whole storage",
       SavedActivations=SavedViewBytes),
    _m("saved_never_resets", "the count carries over from one use to the next", SavedActivations=SavedNeverResets),
    _m("saved_unpack_changes", "the unpack hook returns something other than the saved tensor",
       SavedActivations=SavedDetaches),
    _m("mlp_relu_apart", "ReLU outputs counted apart from the next Linear's input (2L-1 tensors)",
       mlp_activation_bytes=mlp_relu_counted_apart),
    _m("mlp_forgets_input", "the first layer's input not counted (L-1 tensors)",
       mlp_activation_bytes=mlp_forgets_input),
    _m("mlp_fp32", "4 bytes per activation whatever the dtype", mlp_activation_bytes=mlp_fp32),
    _m("helper_loop", "tensor_bytes never returns, and parameter_bytes and mlp_activation_bytes call it",
       loops=True, tensor_bytes=loops_forever),
]


# The behaviours each mistake may cost: those whose tests it failed under the held-out grading seed of
# tests/meta/test_mistakes.py, which checks it (the behaviours that wait for them may lose their points too).
# `python -m tests.meta.mutation --every-test --profile grade --grading-seed 11 --costs` prints what a run saw.
COSTS = {
    "allocates": ("tensor_bytes",),
    "bits_over_eight": ("tensor_bytes",),
    "packed_halved": ("tensor_bytes",),
    "tied_counted_twice": ("parameter count and bytes",),
    "trainable_only": ("parameter count and bytes",),
    "state_dict": ("parameter count and bytes",),
    "bytes_assume_fp32": ("parameter count and bytes",),
    "bytes_tied_twice": ("parameter count and bytes",),
    "state_in_param_dtype": ("bytes_per_param: AdamW's totals, unknown names", "bytes_per_param: real optimizer state"),
    "master_ignored": ("bytes_per_param: AdamW's totals, unknown names", "bytes_per_param: real optimizer state"),
    "grads_fp32": ("bytes_per_param: AdamW's totals, unknown names", "bytes_per_param: real optimizer state"),
    "adam_one_moment": ("bytes_per_param: AdamW's totals, unknown names", "bytes_per_param: real optimizer state"),
    "state_without_grads": ("model_state_bytes",),
    "max_params_ceil": ("max_trainable_params",),
    "max_params_16": ("max_trainable_params",),
    "saved_every_tensor": ("SavedActivations: from zero, a worked MLP", "SavedActivations: the autograd graph"),
    "saved_parameters": ("SavedActivations: from zero, a worked MLP", "SavedActivations: the autograd graph"),
    "saved_dedup_by_id": ("SavedActivations: the autograd graph",),
    "saved_view_bytes": ("SavedActivations: the autograd graph",),
    "saved_never_resets": ("SavedActivations: from zero, a worked MLP",),
    "saved_unpack_changes": ("SavedActivations: backward gets what was saved",),
    "mlp_relu_apart": ("mlp_activation_bytes",),
    "mlp_forgets_input": ("mlp_activation_bytes",),
    "mlp_fp32": ("mlp_activation_bytes",),
    # what leaving tensor_bytes unfinished costs (tests/meta/test_loops.py grades both)
    "helper_loop": ("tensor_bytes", "parameter count and bytes", "mlp_activation_bytes", "differential: all functions"),
}
