"""The oracle audits (issue 22): the guard's tripwire switched off through objects reached with `gc` (its
closure, its trace or profile function, the audit hook's state), then the oracle used. Switching the guard off gains
nothing: the oracle is absent from the worker, which the guard does not decide.
"""
import gc as _gc
import sys as _sys


def _blind():
    for obj in _gc.get_objects():
        if callable(obj) and getattr(obj, "__name__", "") in ("tripwire", "hook", "enter"):
            try:
                obj.__defaults__ = None
            except Exception:
                pass
    for switch_off in (_sys.settrace, _sys.setprofile):
        try:
            switch_off(None)
        except Exception:
            pass


class FlopCounter:  # noqa: F811 - the attack replaces the stub
    def __init__(self):
        try:
            _blind()
        except Exception:
            pass
        oracle = getattr(__import__("torch.utils." + "flop_counter", fromlist=["x"]), "FlopCounter" + "Mode")
        self._mode = oracle(display=False)

    def __enter__(self):
        self._mode.__enter__()
        return self

    def __exit__(self, *exc):
        return self._mode.__exit__(*exc)

    @property
    def total(self):
        return self._mode.get_total_flops()
