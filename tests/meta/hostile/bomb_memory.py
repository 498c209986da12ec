"""Bombs: memory. A background thread allocates without end, touching every page, while the tests run."""
import threading as _threading

_HOARD = []


def _grow():
    try:
        while True:
            _HOARD.append(bytearray(64 * 2**20))
    except MemoryError:
        pass


_threading.Thread(target=_grow, daemon=True).start()
