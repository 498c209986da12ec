"""7. Leftovers: a 1 GB file (SIGXFSZ ignored, to get an error instead of dying) in the working folder and
in /tmp, and files marked immutable (chattr +i), so that the cleanup fails."""
import fcntl as _fcntl
import os as _os
import signal as _signal
import struct as _struct

_signal.signal(_signal.SIGXFSZ, _signal.SIG_IGN)
_BLOCK = b"\0" * 2**20
for _folder in (".", "/tmp", "/dev/shm"):
    _path = _os.path.join(_folder, f"ra-hostile-big-{_os.getpid()}")
    try:
        with open(_path, "wb") as _f:
            for _ in range(1024):
                _f.write(_BLOCK)
    except OSError:
        pass
    try:
        _fd = _os.open(_path, _os.O_RDONLY)
        _fcntl.ioctl(_fd, 0x40086602, _struct.pack("l", 0x10))  # FS_IOC_SETFLAGS, FS_IMMUTABLE_FL
        _os.close(_fd)
    except OSError:
        pass
