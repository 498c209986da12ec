"""What a dispatch-mode audit cannot see by itself: torch ops run with its mode switched off.

The tensors and precision audits watch the code under test through a `TorchDispatchMode`. Code can step
around a mode (`torch._C._DisableTorchDispatch()`, popping the mode stack, excluding the Python dispatch
key), and then the mode sees nothing. The dispatcher's own record (the profiler's RecordFunction events)
still sees every op: `ops_outside_mode` names each op that ran, at top level, without reaching a
Python dispatch mode. The profiler's off switches are in `grader/registry.py`'s ORACLES for these
problems, so the guard fails a request that turns the record off.
"""

from contextlib import contextmanager

import torch
from torch.autograd.profiler import profile

MODE_EVENT = "PythonDispatchMode"


@contextmanager
def ops_outside_mode():
    """Yields a list, filled on exit with the names of the ops run inside the block that never reached a
    Python dispatch mode. An op that is only a composition of others (CompositeImplicitAutograd) and did
    nothing (`contiguous` of a contiguous tensor) counts as reaching it: there was nothing to see. An op
    with a kernel of its own (`empty`) that ran outside the mode counts even with no ops below it."""
    outside: list[str] = []
    with profile(use_kineto=False) as record:
        yield outside
    for event in record.function_events:
        if event.cpu_parent is None and event.name != MODE_EVENT and not _reached_mode(event):
            if event.cpu_children or not _is_composite(event.name):
                outside.append(event.name)


def _reached_mode(event) -> bool:
    pending = list(event.cpu_children)
    while pending:
        child = pending.pop()
        if child.name == MODE_EVENT:
            return True
        pending += child.cpu_children
    return False


def _is_composite(name: str) -> bool:
    """Whether every overload of the op `name` ("aten::contiguous") is only a composition of other ops."""
    namespace, _, op = name.partition("::")
    packet = getattr(getattr(torch.ops, namespace, None), op, None)
    if packet is None:
        return False
    kinds = [_has_composite_kernel(name if o == "default" else f"{name}.{o}") for o in packet.overloads()]
    kinds = [k for k in kinds if k is not None]
    return bool(kinds) and all(kinds)


def _has_composite_kernel(overload: str) -> bool | None:
    try:
        return torch._C._dispatch_has_kernel_for_dispatch_key(overload, "CompositeImplicitAutograd")
    except RuntimeError:  # listed for TorchScript, not registered with the dispatcher
        return None
