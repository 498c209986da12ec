"""4. Outliving the run: a child in a new session (out of the worker's process group) that keeps
rewriting every results.json it can find, for minutes, so that it lands after the grader has written it."""
import glob as _glob
import json as _json
import os as _os
import time as _time


def _results_paths():
    found = set(_glob.glob("/tmp/**/results.json", recursive=True))
    for cmdline in _glob.glob("/proc/*/cmdline"):
        try:
            words = open(cmdline, "rb").read().decode(errors="replace").split("\0")
        except OSError:
            continue
        for flag, value in zip(words, words[1:], strict=False):
            if flag == "--out":
                found.update(_glob.glob(_os.path.join(value, "**", "results.json"), recursive=True) + [value])
    return found


if _os.fork() == 0:
    _os.setsid()
    _forged = _json.dumps({"score": 100, "tests": [], "output": "ra-hostile"})
    for _ in range(3000):
        for _path in _results_paths():
            try:
                with open(_path, "w") as _f:
                    _f.write(_forged)
            except OSError:
                pass
        _time.sleep(0.1)
    _os._exit(0)
