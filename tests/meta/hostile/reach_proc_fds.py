"""6. Reaching across processes: write forged records through every other process's open files
(/proc/PID/fd/N: the report wherever it is, and the pipes of the worker protocol)."""
import glob as _glob
import json as _json
import os as _os

_FORGED = (_json.dumps({"nodeid": "tests/test_flops.py::test_matmul_flops_by_formula", "problem": "flops",
                        "outcome": "passed", "gpu": False, "differential": False, "duration": 0.0,
                        "message": ""}) + "\n").encode()
for _fd in _glob.glob("/proc/[0-9]*/fd/*"):
    if _fd.startswith(f"/proc/{_os.getpid()}/"):
        continue
    try:
        _target = _os.readlink(_fd)
        if _target.endswith("report.jsonl") or _target.startswith("pipe:"):
            _handle = _os.open(_fd, _os.O_WRONLY | _os.O_APPEND | _os.O_NONBLOCK)
            _os.write(_handle, _FORGED)
            _os.close(_handle)
    except OSError:
        pass
