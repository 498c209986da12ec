"""The CPU time a worker has used, read from outside it (/proc), and what memory it is allowed.

The worker is hostile: nothing it says about itself is believed. The kernel's accounting in
/proc/<pid>/stat is: user and system time of every live process of the worker's tree (its threads
included), plus what its exited children used (cutime, cstime: charged to the parent that reaped them).
"""

import os
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")  # /proc's unit of CPU time (1/100 s on Linux)
# A wall-clock backstop is this many times its CPU-time limit: a worker throttled to a third of a CPU needs 3
WALL_FACTOR = 5


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds of the process and of its reaped children), or None when it is gone."""
    try:  # os.open, not pathlib: a full reading reads every process of the machine
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return None
    try:
        return _stat_at(fd)
    finally:
        os.close(fd)


def _stat_at(fd: int) -> tuple[int, float] | None:
    """`_stat` of the process whose /proc/<pid>/stat `fd` holds open: read again from its start, the kernel writes
    it anew (a grading reads it about 10,000 times, at half the cost of opening it each time). None when the
    process is gone: the open file stays that process's, whoever gets its pid later."""
    try:
        text = os.pread(fd, 4096, 0).decode(errors="replace")
    except OSError:
        return None
    if not text:
        return None
    fields = text[text.rfind(")") + 2:].split()  # after "pid (comm) ": the name may hold spaces and parentheses
    utime, stime, cutime, cstime = (int(f) for f in fields[11:15])
    return int(fields[1]), (utime + stime + cutime + cstime) / TICK


def run_queue_wait(pid: int) -> float:
    """Seconds process `pid` has spent runnable, waiting for a CPU: the longest run-queue wait of its live threads (the
    kernel's: /proc/<pid>/task/<tid>/schedstat, its second field, in nanoseconds), time a busy machine or a CPU quota
    took from it, which it did not spend computing, waiting or sleeping. The longest, not their sum: threads that
    wait side by side wait the same seconds once (a process cannot make its starvation outgrow the wall clock by
    starting threads). Threads gone already are not counted."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    longest = 0
    for tid in threads:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as f:
                longest = max(longest, int(f.read().split()[1]))
        except (OSError, IndexError, ValueError):
            continue
    return longest / 1e9


def _uid(pid: str) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


class CpuClock:
    """The CPU seconds used by the process tree under `root` (and, with `uid`, by every process of that uid:
    those that left the tree too). `read()` never goes back: a process that dies unreaped takes its time
    with it, and a clock that went back would give a spinning worker more time.

    A full reading lists every process of the machine; a quick one reads only the processes the last full
    one found (a worker's tree is settled once it has started: one interpreter, under bwrap's two
    processes), through their files held open, which is what a call that returns at once needs. `close()`
    when done with it."""

    def __init__(self, root: int, uid: int | None = None):
        self.root, self.uid = root, uid
        self.files: dict[int, int] = {}  # each known process -> its /proc/<pid>/stat, held open
        self._follow({root})
        self.highest = 0.0

    def read(self, full: bool = False) -> float:
        if full:
            stats = {int(p): s for p in os.listdir("/proc") if p.isdigit() and (s := _stat(int(p))) is not None}
            self._follow(self._tree(stats))
        else:
            stats = {pid: s for pid, fd in self.files.items() if (s := _stat_at(fd)) is not None}
        self.highest = max(self.highest, sum(stats[pid][1] for pid in self.files if pid in stats))
        return self.highest

    def waited(self) -> float:
        """Seconds the processes the last full reading found have spent runnable, waiting for a CPU
        (`run_queue_wait`), summed."""
        return sum(map(run_queue_wait, self.files))

    def close(self) -> None:
        """Let go of the processes' files (the clock reads nothing more: `read()` keeps its highest)."""
        self._follow(set())

    def _follow(self, pids: set[int]) -> None:
        for pid in set(self.files) - pids:
            os.close(self.files.pop(pid))
        for pid in pids - set(self.files):
            try:
                self.files[pid] = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
            except OSError:  # gone already
                continue

    def _tree(self, stats: dict[int, tuple[int, float]]) -> set[int]:
        children: dict[int, list[int]] = {}
        for pid, (parent, _) in stats.items():
            children.setdefault(parent, []).append(pid)
        tree, todo = set(), [self.root]
        while todo:
            pid = todo.pop()
            if pid in stats and pid not in tree:
                tree.add(pid)
                todo += children.get(pid, [])
        if self.uid is not None:
            tree |= {pid for pid in stats if pid not in tree and _uid(str(pid)) == self.uid}
        return tree


def cpu_allowance() -> float:
    """The CPUs this process may use: the cores it may run on, and the CPU quota of its cgroups (a container's, a
    grading's share: cgroup v2's cpu.max, v1's cpu.cfs_quota_us over cpu.cfs_period_us), the smallest."""
    allowed = [float(len(os.sched_getaffinity(0)))]
    for path in _cgroup_files("cpu", "cpu.max", "cpu.cfs_quota_us"):
        try:
            if path.name == "cpu.max":
                quota, period = path.read_text().split()
            else:
                quota, period = path.read_text().strip(), (path.parent / "cpu.cfs_period_us").read_text().strip()
        except (OSError, ValueError):
            continue
        if quota.lstrip("-").isdigit() and int(quota) > 0 and period.isdigit() and int(period) > 0:  # "max", -1: none
            allowed.append(int(quota) / int(period))
    return min(allowed)


def memory_allowance_mb(worker_limit_mb: int = 0) -> int | None:
    """The memory a worker may use, in MiB: the smallest of its own limit and the memory cgroup limits of this
    process (a container's, a grading's), which its worker shares; None where there is no limit."""
    limits = [worker_limit_mb * 2**20] if worker_limit_mb else []
    for path in _cgroup_files("memory", "memory.max", "memory.limit_in_bytes"):
        try:
            value = path.read_text().strip()
        except OSError:
            continue
        if value.isdigit() and int(value) < 2**60:  # "max" (v2) or a huge number (v1): no limit
            limits.append(int(value))
    return min(limits) // 2**20 if limits else None


def _cgroup_files(controller: str, v2_name: str, v1_name: str) -> list[Path]:
    """The file `v2_name` (cgroup v2) or `v1_name` (v1's hierarchy of `controller`) of this process's cgroup and of
    each of its ancestors, whose limits apply too."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return []
    files = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # cgroup v2
            base, name = Path("/sys/fs/cgroup"), v2_name
        elif controller in controllers.split(","):
            base, name = Path("/sys/fs/cgroup") / controllers, v1_name
            if not base.is_dir():
                base = Path("/sys/fs/cgroup") / controller
        else:
            continue
        folder = base / path.lstrip("/")
        if not folder.is_dir():  # a container sees its own cgroup as the root of the hierarchy
            folder = base
        while True:  # the limits of the ancestors apply too
            files.append(folder / name)
            if folder == base:
                break
            folder = folder.parent
    return files
