"""Bombs: output. Hundreds of megabytes to stdout and stderr, from a thread, while the tests run; and a
function that answers with a huge exception message."""
import sys as _sys
import threading as _threading

_LINE = "ra-hostile " * 1000 + "\n"


def _flood():
    for _ in range(20000):
        _sys.stdout.write(_LINE)
        _sys.stderr.write(_LINE)


_threading.Thread(target=_flood, daemon=True).start()


def matmul_flops(b: int, d: int, k: int) -> int:  # noqa: F811 - replaces the stub
    raise ValueError(_LINE * 10000)
