"""tests/meta/processes.py: what a meta-test starts is limited by the CPU its whole tree uses, and ends with
everything it started, orphans included."""

import os
import sys
import time

import pytest

from tests.meta import processes

pytestmark = pytest.mark.meta

# A command that leaves a child computing in its process group, and an orphan of it (its parent gone, so it is
# init's now, no longer in the tree), then computes itself; it writes their pids and a file in its TMPDIR.
LEAVES_ORPHANS = """
import os, subprocess, sys
spinning = "while True: pass"
child = subprocess.Popen([sys.executable, "-c", spinning])
middle = os.fork()
if middle == 0:
    orphan = subprocess.Popen([sys.executable, "-c", spinning])
    with open(sys.argv[1], "a") as f:
        f.write(f"{orphan.pid}\\n")
    os._exit(0)
os.waitpid(middle, 0)
with open(sys.argv[1], "a") as f:
    f.write(f"{child.pid}\\n{os.environ['TMPDIR']}\\n")
while True:
    pass
"""


def alive(pid: int) -> bool:
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_command_past_its_cpu_seconds_ends_with_everything_it_started(tmp_path):
    written = tmp_path / "pids"
    with pytest.raises(processes.CpuTimeout, match="CPU-seconds of its whole tree: past its limit of 2"):
        processes.run([sys.executable, "-c", LEAVES_ORPHANS, str(written)], cpu_seconds=2)
    *pids, scratch = written.read_text().split()
    assert len(pids) == 2 and scratch.startswith("/") and "ra-meta-run-" in scratch
    deadline = time.monotonic() + 10  # SIGKILL is delivered in turn
    while any(alive(int(pid)) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in pids if alive(int(pid))], "a process of the command outlived it"
    assert not os.path.exists(scratch), "its TMPDIR was left"


def test_a_command_that_ends_by_itself_is_run_as_subprocess_runs_it():
    done = processes.run([sys.executable, "-c", "import sys; print(sys.stdin.read().upper())"], cpu_seconds=60,
                         input="hello", capture_output=True, text=True)
    assert (done.returncode, done.stdout.strip()) == (0, "HELLO")
