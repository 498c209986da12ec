"""4. Outliving the run: results after the time limit. Every call sleeps (no CPU time, so only the wall-clock
backstops end it), the worker ignores the signals that ask it to stop, and its exit waits too: the fingerprint
pass's waits (a call started just before its deadline, a fork server's exit) used to run past the grading's time
limit, so that results.json came after it (on Gradescope: no grade at all)."""
import atexit as _atexit
import signal as _signal
import time as _time

for _sig in (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP, _signal.SIGPIPE):
    _signal.signal(_sig, _signal.SIG_IGN)
_atexit.register(_time.sleep, 10**6)


def _sleeps(*args, **kwargs):
    _time.sleep(10**6)


for _name in __all__:  # noqa: F821 - the stub's, which this file is appended to
    if _name != "FlopCounter":
        globals()[_name] = _sleeps
