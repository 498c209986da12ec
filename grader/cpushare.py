"""A fixed CPU share for each grading of a batch, so that no submission can slow a sibling.

`CpuShare(cpus, index)` is the share of one grading: `add(pid)` puts a process of the grading (the test
process, before it starts the worker: every process it starts inherits the share) in it, `close()` ends it.
In order of preference, where the grader may use it:

- cgroup v2: a child of the grader's own cgroup with `cpu.max` = `cpus` CPUs;
- cgroup v1: the same in the `cpu` hierarchy, with `cpu.cfs_quota_us` (no sandbox user may write to a
  cgroup's files, so a worker cannot leave its group);
- affinity: the grading's processes pinned to `cpus` cores of their own (round-robin where there are more
  gradings than cores). A process may widen its own affinity again, so this one is a fairness measure, not
  a wall: the time limits count each worker's own CPU time (grader/harness/client.py), so a grade does not
  depend on it.
"""

import itertools
import os
from pathlib import Path

PERIOD_US = 100_000
CGROUP_ROOT = Path("/sys/fs/cgroup")
_names = itertools.count()


def _own_cgroup(controller: str | None) -> Path | None:
    """The folder of this process's cgroup: in the v2 hierarchy (controller None) or in the v1 hierarchy of
    `controller`; None where there is none the grader can write to."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controller is None and controllers == "":
            base = CGROUP_ROOT
            available = base / "cgroup.controllers"
            if not available.exists() or "cpu" not in available.read_text().split():
                return None
        elif controller is not None and controller in controllers.split(","):
            base = CGROUP_ROOT / controllers
            if not base.is_dir():
                base = CGROUP_ROOT / controller
        else:
            continue
        folder = base / path.lstrip("/")
        folder = folder if folder.is_dir() else base  # a container sees its own cgroup as the root
        return folder if os.access(folder, os.W_OK) else None
    return None


class CpuShare:
    def __init__(self, cpus: float, index: int = 0):
        self.cpus, self.index = cpus, index
        self.group: Path | None = None
        self.cores: set[int] | None = None
        self.kind = "none"
        for kind, controller, quota in (("cgroup v2", None, self._v2), ("cgroup v1", "cpu", self._v1)):
            parent = _own_cgroup(controller)
            if parent is None:
                continue
            group = parent / f"ra-grading-{os.getpid()}-{next(_names)}"
            try:
                group.mkdir()
            except OSError:
                continue
            try:
                quota(parent, group)
            except OSError:
                group.rmdir()
                continue
            self.group, self.kind = group, kind
            return
        available = sorted(os.sched_getaffinity(0))
        count = max(1, min(len(available), round(cpus)))
        self.cores = {available[(index * count + i) % len(available)] for i in range(count)}
        self.kind = "affinity"

    def _v2(self, parent: Path, group: Path) -> None:
        if "cpu" not in (group / "cgroup.controllers").read_text().split():
            (parent / "cgroup.subtree_control").write_text("+cpu")  # EBUSY where the parent holds processes
        (group / "cpu.max").write_text(f"{round(self.cpus * PERIOD_US)} {PERIOD_US}")

    def _v1(self, parent: Path, group: Path) -> None:
        (group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
        (group / "cpu.cfs_quota_us").write_text(str(round(self.cpus * PERIOD_US)))

    def describe(self) -> str:
        if self.cores is not None:
            return f"affinity: cores {sorted(self.cores)}"
        return f"{self.kind}: {self.cpus:g} CPU ({self.group})"

    def add(self, pid: int) -> None:
        """Put `pid` in the share, before it starts other processes (they inherit it)."""
        if self.group is not None:
            (self.group / "cgroup.procs").write_text(str(pid))
        elif self.cores is not None:
            os.sched_setaffinity(pid, self.cores)

    def close(self) -> None:
        """Remove the cgroup (its processes are gone: the sandbox's teardown killed them)."""
        if self.group is not None:
            try:
                self.group.rmdir()
            except OSError:
                pass
            self.group = None

    def __enter__(self) -> "CpuShare":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
