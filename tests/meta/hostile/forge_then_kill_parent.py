"""1. Forged results: write a forged `finished` run into the report, then kill the parent test process so
that nothing after the forgery is written."""
import glob as _glob
import json as _json
import os as _os
import signal as _signal

for _path in _glob.glob("/tmp/ra-grade-*/private/report.jsonl") + ["report.jsonl", "../report.jsonl"]:
    try:
        with open(_path, "a") as _report:
            _report.write(_json.dumps({"finished": 0}) + "\n")
    except OSError:
        pass
for _pid in (_os.getppid(), _os.getpgid(0)):
    try:
        _os.kill(_pid, _signal.SIGKILL)
    except OSError:
        pass
