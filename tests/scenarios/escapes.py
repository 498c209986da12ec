"""What a dispatch-mode audit cannot see by itself: torch ops run with its mode switched off.

The tensors and precision audits watch the code under test through a `TorchDispatchMode`. Code can step
around a mode (`torch._C._DisableTorchDispatch()`, popping the mode stack, excluding the Python dispatch
key), and then the mode sees nothing. The dispatcher's own record (the profiler's RecordFunction events)
still sees every op: `ops_outside_mode` names each op that ran, at top level, without reaching a
Python dispatch mode.

The record is read through torch's compiled functions alone, held where the code under test cannot rebind
them (positional default arguments: a tuple, which the worker's guard refuses to replace), never through
torch's Python profiler or a context manager, whose classes any code can patch to record nothing. The code
under test cannot blind it either:
- turning the record off before (`_enable_record_function(False)`, at import say) changes nothing: the audit
  turns it on as it starts;
- turning it off or restarting the profiler during the audit is seen by the guard's tripwire, on during these
  scenarios (grader/registry.py RECORD_AUDITS, PROFILER_SWITCHES in ORACLES);
- a range of its own named like the mode's event (`record_function("PythonDispatchMode")`) is a user range,
  which the record marks as such (its scope): only the dispatcher's own event counts as the mode's.
"""

import torch
from torch._C._autograd import _disable_profiler_legacy, _enable_profiler_legacy, _enable_record_function
from torch._C._profiler import ProfilerConfig, ProfilerState, _ExperimentalConfig

MODE_EVENT = "PythonDispatchMode"
OP_SCOPE = 0  # the scope of an op's event (at::RecordScope::FUNCTION); ranges that code opens have others
# events torch's own reading of the record leaves out (torch/autograd/profiler_util.py _filter_name)
UNRECORDED = frozenset({"profiler::_record_function_enter", "profiler::_record_function_enter_new",
                        "profiler::_record_function_exit", "aten::is_leaf", "aten::output_nr", "aten::_version"})


def _composite_only() -> frozenset[str]:
    """The ops ("aten::contiguous") every overload of which is only a composition of other ops."""
    kinds: dict[str, bool] = {}
    for overload in torch._C._dispatch_get_all_op_names():
        op = overload.partition(".")[0]
        try:
            composite = torch._C._dispatch_has_kernel_for_dispatch_key(overload, "CompositeImplicitAutograd")
        except RuntimeError:  # listed for TorchScript, not registered with the dispatcher
            continue
        kinds[op] = kinds.get(op, True) and composite
    return frozenset(op for op, composite in kinds.items() if composite)


COMPOSITE_ONLY = _composite_only()  # read once, before any code under test runs


def _top_level_ops(events, _unrecorded=UNRECORDED, _op_scope=OP_SCOPE) -> list[tuple[str, set[str]]]:
    """(name, the names of the ops below it) of each op of one thread's record that ran below no other op. A
    range that code opened (`record_function`) is see-through: what runs in it is below what the range is in."""
    found, stack, left_out, previous = [], [], set(), None
    for event in events:
        kind, name, node = event.kind(), event.name(), event.node_id()
        key = (event.handle(), node)
        if name in _unrecorded or key in left_out:
            left_out.add(key)
            continue
        if kind == "push" and previous == ("push", name, node):  # a redispatch's twin, as torch's reading has it
            left_out.add(key)
            continue
        if kind == "push" and event.scope() == _op_scope:
            for _, _, below in stack:
                below.add(name)
            stack.append((key, name, set()))
        elif kind == "pop":
            at = next((i for i in range(len(stack) - 1, -1, -1) if stack[i][0] == key), None)
            if at is not None:
                _, op, below = stack.pop(at)
                if at == 0:
                    found.append((op, below))
        previous = (kind, name, node)
    return found


def record_ops(_record=_enable_record_function, _start=_enable_profiler_legacy, _config=ProfilerConfig,
               _state=ProfilerState.CPU, _experimental=_ExperimentalConfig) -> None:
    """Turn on the record of every op, as an audit starts (whatever was switched off before)."""
    _record(True)
    _start(_config(_state, False, False, False, False, False, _experimental()))


def ops_outside_mode(_stop=_disable_profiler_legacy, _top_level=_top_level_ops, _composite=COMPOSITE_ONLY,
                     _mode=MODE_EVENT) -> list[str]:
    """Stop the record `record_ops` started: the names of the ops run since that never reached a Python dispatch
    mode. An op that is only a composition of others (CompositeImplicitAutograd) and did nothing (`contiguous` of
    a contiguous tensor) counts as reaching it: there was nothing to see. An op with a kernel of its own (`empty`)
    that ran outside the mode counts even with no ops below it.

    A scenario calls the two in `try`/`finally`, each held in a default argument of its own: a context manager
    would put contextlib's classes, which any code can patch (an `__exit__` that never resumes the generator
    blinded the audit), between the audit and its record."""
    return [name for events in _stop() for name, below in _top_level(events)
            if name != _mode and _mode not in below and (below or name not in _composite)]
