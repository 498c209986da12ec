"""A fixed CPU share for each grading of a batch, so that no submission can slow a sibling.

`CpuShare(cpus, index)` is the share of one grading: `add(pid)` puts a process of the grading (the test
process, before it starts the worker: every process it starts inherits the share) in it, `close()` ends it.
In order of preference, where the grader may use it:

- cgroup v2: a group below the grader's own (grader/harness/cgroups.py) with `cpu.max` = `cpus` CPUs, its
  processes in a leaf of it and its workers in their memory group beside them (`memory_parent`);
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

from grader.harness import cgroups

PERIOD_US = 100_000
_names = itertools.count()
TESTS = "tests"  # on cgroup v2, the leaf of a share's group that holds its processes


class CpuShare:
    def __init__(self, cpus: float, index: int = 0):
        self.cpus, self.index = cpus, index
        self.group: Path | None = None
        self.cores: set[int] | None = None
        self.kind = "none"
        for kind, parent, quota in (("cgroup v2", cgroups.v2_parent(), self._v2),
                                    ("cgroup v1", cgroups.own("cpu"), self._v1)):
            if parent is None:
                continue
            group = parent / f"ra-grading-{os.getpid()}-{next(_names)}"
            try:
                group.mkdir()
            except OSError:
                continue
            try:
                quota(group)
            except OSError:
                cgroups.remove(group)
                continue
            self.group, self.kind = group, kind
            return
        available = sorted(os.sched_getaffinity(0))
        count = max(1, min(len(available), round(cpus)))
        self.cores = {available[(index * count + i) % len(available)] for i in range(count)}
        self.kind = "affinity"

    def _v2(self, group: Path) -> None:
        """cpu.max on the grading's group, its processes in a leaf below it (TESTS), beside the memory group of
        its workers (cgroups.memory_group): a v2 group with children holds no process."""
        if "cpu" not in (group / "cgroup.controllers").read_text().split():
            raise OSError("no cpu controller")
        (group / "cpu.max").write_text(f"{round(self.cpus * PERIOD_US)} {PERIOD_US}")
        if "memory" in (group / "cgroup.controllers").read_text().split():
            (group / "cgroup.subtree_control").write_text("+memory")
        (group / TESTS).mkdir()

    def _v1(self, group: Path) -> None:
        (group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
        (group / "cpu.cfs_quota_us").write_text(str(round(self.cpus * PERIOD_US)))

    @property
    def memory_parent(self) -> Path | None:
        """Where a grading in this share makes its workers' memory group: inside the share on cgroup v2 (a
        process is in one group for every controller there); None elsewhere (v1's memory hierarchy is its own)."""
        return self.group if self.kind == "cgroup v2" else None

    def describe(self) -> str:
        if self.cores is not None:
            return f"affinity: cores {sorted(self.cores)}"
        return f"{self.kind}: {self.cpus:g} CPU ({self.group})"

    def add(self, pid: int) -> None:
        """Put `pid` in the share, before it starts other processes (they inherit it)."""
        if self.group is not None:
            (self.group / (TESTS if self.kind == "cgroup v2" else "") / "cgroup.procs").write_text(str(pid))
        elif self.cores is not None:
            os.sched_setaffinity(pid, self.cores)

    def close(self) -> None:
        """Remove the cgroup (its processes are gone: the sandbox's teardown killed them)."""
        if self.group is not None:
            cgroups.remove(self.group)
            self.group = None

    def __enter__(self) -> "CpuShare":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
