"""7. Leftovers: files and folders in every folder that all users may write to (/tmp, /var/tmp, /dev/shm,
/run/lock), which would outlive the grading."""
import os as _os

for _folder in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", _os.path.expanduser("~"), "."):
    try:
        with open(_os.path.join(_folder, f"ra-hostile-{_os.getpid()}.txt"), "w") as _f:
            _f.write("left behind")
        _os.makedirs(_os.path.join(_folder, f"ra-hostile-dir-{_os.getpid()}", "deeper"), exist_ok=True)
    except OSError:
        pass
