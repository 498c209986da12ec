"""4. Outliving the run: setsid straight through libc (ctypes), a double fork, SIGTERM and SIGHUP ignored,
stdio closed: a daemon that sleeps and waits for the grader to be gone."""
import ctypes as _ctypes
import os as _os
import signal as _signal
import time as _time

if _os.fork() == 0:
    _ctypes.CDLL(None).setsid()
    if _os.fork() == 0:
        for _sig in (_signal.SIGTERM, _signal.SIGHUP, _signal.SIGINT):
            _signal.signal(_sig, _signal.SIG_IGN)
        for _fd in (0, 1, 2):
            _os.close(_fd)
        _os.chdir("/")
        _time.sleep(600)
    _os._exit(0)
