"""7. Leftovers: a hundred thousand files in the working folder, in nested folders, one of them made
unreadable, so that cleaning up is slow or fails."""
import os as _os

try:
    for _i in range(100):
        _folder = _os.path.join(f"ra-hostile-many-{_i}")
        _os.makedirs(_folder, exist_ok=True)
        for _j in range(1000):
            open(_os.path.join(_folder, str(_j)), "w").close()
    _os.chmod("ra-hostile-many-0", 0)
except OSError:
    pass
