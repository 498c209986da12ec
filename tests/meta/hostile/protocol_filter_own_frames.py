"""The worker protocol (issue 22): the worker's own frames filtered: `os.write` wrapped so that every frame
carrying the guard's evidence is dropped, then the oracle used. Nothing needs hiding: the oracle is absent,
and the test process decides from the reply alone.
"""
import os as _os

_write = _os.write


def _filtered(fd, data):
    if b'"event": "audit"' in bytes(data):
        return len(data)
    return _write(fd, data)


_os.write = _filtered


class FlopCounter:  # noqa: F811 - the attack replaces the stub
    def __init__(self):
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
