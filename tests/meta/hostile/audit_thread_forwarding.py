"""The oracle audits (issue 22): the genuine FlopCounterMode counting in a helper thread while a plain dispatch
mode in the main thread forwards each op to it (a profile function sees the main thread only). The oracle is
absent from the flops worker: the helper thread builds nothing, whatever thread asks.
"""
import queue as _queue
import threading as _threading

from torch.utils._python_dispatch import TorchDispatchMode as _Mode

_requests, _answers = _queue.Queue(), _queue.Queue()


def _helper():
    try:
        oracle = getattr(__import__("torch.utils." + "flop_counter", fromlist=["x"]), "FlopCounter" + "Mode")
        counter = oracle(display=False)
    except Exception as exc:  # the oracle is a stub here
        _answers.put(exc)
        return
    while True:
        func, args, kwargs = _requests.get()
        with counter:
            func(*args, **kwargs)
        _answers.put(counter.get_total_flops())


_threading.Thread(target=_helper, daemon=True).start()


class FlopCounter(_Mode):  # noqa: F811 - the attack replaces the stub
    def __init__(self):
        super().__init__()
        self.total, self.by_op = 0, {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        _requests.put((func, args, kwargs or {}))
        answer = _answers.get(timeout=5)
        if isinstance(answer, Exception):
            raise answer
        self.total = answer
        return func(*args, **(kwargs or {}))
