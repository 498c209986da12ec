"""The tensors problem's one scenario: the code under test answering with torch's tensor ops made unusable.

Every function of the problem takes a layout as plain data, so the tests call it directly; this scenario
is the run-time half of the audit. Under `NoTensorOps` every ATen op (the factories that make a tensor
included) raises, so a solution that builds a tensor with `as_strided` and asks torch for its strides
fails here, while one that computes them passes.
"""

from torch.utils._python_dispatch import TorchDispatchMode

from tests.scenarios.escapes import ops_outside_mode, record_ops

RAISES = "raises ValueError"


class NoTensorOps(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        raise RuntimeError(f"a layout is computed from its shape and strides, not by asking torch ({func} was "
                           "called while torch's tensor ops were made unusable)")


def without_tensor_ops(pkg, calls: list, _record=record_ops, _outside=ops_outside_mode, _mode=NoTensorOps) -> dict:
    """Scenario: each (name, args) of `calls` as `pkg.tensors.name(*args)` under `NoTensorOps`; a ValueError
    becomes `RAISES` (an impossible view), anything else propagates. "results": one per call; "outside":
    the ops that ran with the mode stepped around (tests/scenarios/escapes.py)."""
    results = []
    _record()
    try:
        with _mode():
            for name, args in calls:
                try:
                    results.append(getattr(pkg.tensors, name)(*args))
                except ValueError:
                    results.append(RAISES)
    finally:
        outside = _outside()
    return {"results": results, "outside": outside}
