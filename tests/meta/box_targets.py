"""What tests/meta/test_analysis.py runs in a box (grader/harness/box.py) in place of the grader's analyses: each
`answers` misbehaves as `request["do"]` says, so that the box's limits and filter are seen to hold."""

import os
import time


def prepare(request: dict) -> None:
    """Before the filter: nothing to read."""


def answers(request: dict):
    what = request["do"]
    yield {"first": True}
    if what == "loop":
        while True:
            pass
    elif what == "memory":
        hoard = []
        while True:
            hoard.append(bytearray(64 << 20))
    elif what == "output":
        yield {"text": "x" * (16 << 20)}
    elif what == "silence":
        time.sleep(3600)
    elif what == "crash":
        os.abort()
    elif what == "nonsense":
        os.write(1, b"[1, 2, 3]\n")
    elif what == "reach":  # after the filter: each answers with the errno it got, or what it did
        found = {}
        for name, action in (("open", lambda: os.open("/etc/hostname", os.O_RDONLY)),
                             ("write a file", lambda: os.open("/tmp/ra-hostile-box", os.O_CREAT | os.O_WRONLY)),
                             ("fork", os.fork), ("signal", lambda: os.kill(os.getppid(), 0))):
            try:
                action()
                found[name] = "done"
            except OSError as exc:
                found[name] = exc.errno
        yield found
