"""Bombs: disk. Fill every writable folder with 32 MiB files until the disk or the limits say no."""
import os as _os
import signal as _signal

_signal.signal(_signal.SIGXFSZ, _signal.SIG_IGN)
_BLOCK = b"x" * 2**20
for _folder in (".", "/tmp", "/var/tmp", "/dev/shm"):
    for _i in range(64):
        try:
            with open(_os.path.join(_folder, f"ra-hostile-fill-{_os.getpid()}-{_i}"), "wb") as _f:
                for _ in range(32):
                    _f.write(_BLOCK)
        except OSError:
            break
