"""The oracle audits (issue 22): code that runs between requests, when no tripwire is on: a `weakref.finalize`
callback, a `__del__` and a SIGALRM handler, each of which loads the oracle and puts it where the next
request finds it. There is no oracle in the worker to load, between requests or during them.
"""
import gc as _gc
import signal as _signal
import weakref as _weakref

_found = []


def _load(*_):
    try:
        module = __import__("torch.utils." + "flop_counter", fromlist=["x"])
        mode = getattr(module, "FlopCounter" + "Mode")(display=False)
        _found.append(mode)
    except Exception:
        pass


class _Trigger:
    def __del__(self):
        _load()


_weakref.finalize(type("_Box", (), {})(), _load)
_Trigger()
_gc.collect()
try:
    _signal.signal(_signal.SIGALRM, _load)
    _signal.setitimer(_signal.ITIMER_REAL, 0.05, 0.05)
except (ValueError, OSError):
    pass


class FlopCounter:  # noqa: F811 - the attack replaces the stub
    def __init__(self):
        if not _found:
            raise NotImplementedError
        self._mode = _found[-1]

    def __enter__(self):
        self._mode.__enter__()
        return self

    def __exit__(self, *exc):
        return self._mode.__exit__(*exc)

    @property
    def total(self):
        return self._mode.get_total_flops()
