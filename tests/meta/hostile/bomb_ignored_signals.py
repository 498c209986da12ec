"""Bombs: every catchable signal ignored, then a function that never returns (the call's time limit must
still end it, and only that test fails)."""
import signal as _signal

for _sig in (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP, _signal.SIGQUIT, _signal.SIGUSR1, _signal.SIGALRM,
             _signal.SIGXCPU):
    _signal.signal(_sig, _signal.SIG_IGN)


def matmul_flops(b: int, d: int, k: int) -> int:  # noqa: F811 - replaces the stub
    while True:
        pass
