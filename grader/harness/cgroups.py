"""Where the grader may make cgroups of its own: for a grading's CPU share (grader/batch/cpushare.py) and for the
memory its workers hold (`memory_group`).

cgroup v1 has a hierarchy per controller: the grader makes its groups below its own group of the `cpu`
hierarchy and of the `memory` hierarchy. cgroup v2 has one hierarchy, a process is in one group for every
controller, and a group whose children use a controller holds no process itself. So on v2 the grader enables
the cpu and memory controllers for the groups it makes below its own group, first moving the processes of that
group into a leaf of their own (`ra-grader-PID`) where the kernel asks for it (EBUSY); it does so only where
they are all its own: itself, those that started it and those it started. Where its group holds any other
process, the grader makes no v2 group and says so (`v2_refusal`).
"""

import contextlib
import errno
import functools
import os
import time
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("cpu", "memory")  # what a grading's groups may limit on cgroup v2


def own(controller: str | None) -> Path | None:
    """The folder of this process's cgroup: in the v2 hierarchy (controller None) or in the v1 hierarchy of
    `controller`; None where there is none the grader can write to."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controller is None and controllers == "":
            base = ROOT
            if not (base / "cgroup.controllers").exists():
                return None
        elif controller is not None and controller in controllers.split(","):
            base = ROOT / controllers
            if not base.is_dir():
                base = ROOT / controller
        else:
            continue
        folder = base / path.lstrip("/")
        folder = folder if folder.is_dir() else base  # a container sees its own cgroup as the root
        return folder if os.access(folder, os.W_OK) else None
    return None


def v2_parent() -> Path | None:
    """The cgroup v2 group below which this grader makes its groups, with the controllers of CONTROLLERS it
    has enabled for them; None where it may make none (no v2 hierarchy of its own, not writable, no such
    controller, or processes not its own in its group: `v2_refusal` says which)."""
    state = _v2_ready()
    return None if state is None else state[0]


def v2_refusal() -> str | None:
    """Why the grader makes no cgroup v2 group here, where it has a v2 hierarchy to make one in; None where it
    does, or where there is no v2 hierarchy at all."""
    state = _v2_ready()
    return None if state is None else state[1]


@functools.cache
def _v2_ready() -> tuple[Path | None, str | None] | None:
    group = own(None)
    if group is None:
        return None
    wanted = [c for c in CONTROLLERS if c in (group / "cgroup.controllers").read_text().split()]
    if not wanted:
        return None
    try:
        _enable(group, wanted)
    except OSError as exc:
        if exc.errno != errno.EBUSY:
            return None, f"cannot enable {' and '.join(wanted)} below {group}: {exc.strerror}"
        before = _processes_in(group)  # those in it both before and after: not a child being born or gone
        strangers = (before - _own_processes()) & _processes_in(group)
        if strangers:
            return None, (f"{group} holds processes other than the grader's ({len(strangers)}, such as "
                          f"{_described(min(strangers))}): run it in a group of its own (a container, or "
                          "`systemd-run --scope -p Delegate=yes`)")
        for stale in group.glob("ra-grader-*"):  # of graders gone whose processes are all gone too
            with contextlib.suppress(OSError):
                stale.rmdir()
        leaf = group / f"ra-grader-{os.getpid()}"
        try:
            leaf.mkdir(exist_ok=True)
            for pid in _processes_in(group):
                with contextlib.suppress(ProcessLookupError):  # gone meanwhile
                    (leaf / "cgroup.procs").write_text(str(pid))
            _enable(group, wanted)
        except OSError as exc:
            return None, f"cannot enable {' and '.join(wanted)} below {group}: {exc.strerror}"
    return group, None


def enabled_below(group: Path) -> list[str]:
    """The controllers a cgroup v2 group has enabled for its children (none for a v1 group)."""
    try:
        return (group / "cgroup.subtree_control").read_text().split()
    except FileNotFoundError:
        return []


def _enable(group: Path, controllers: list[str]) -> None:
    enabled = enabled_below(group)
    missing = [c for c in controllers if c not in enabled]
    if missing:
        (group / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in missing))


def _processes_in(group: Path) -> set[int]:
    return {int(pid) for pid in (group / "cgroup.procs").read_text().split()}


def _parents() -> dict[int, int]:
    """pid -> its parent's pid, of every process of this pid namespace, from /proc."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
    return parents


def descendants(root: int, parents: dict[int, int] | None = None) -> set[int]:
    """`root` and every process it started, and they started, from /proc."""
    parents = _parents() if parents is None else parents
    tree, grown = {root}, True
    while grown:
        children = {child for child, parent in parents.items() if parent in tree} - tree
        tree |= children
        grown = bool(children)
    return tree


def _own_processes() -> set[int]:
    """This process, the processes that started it (its ancestors) and those it started (its descendants)."""
    parents = _parents()
    own, pid = descendants(os.getpid(), parents), os.getpid()
    while parents.get(pid, 0) > 0:
        pid = parents[pid]
        own.add(pid)
    return own


class CpuAccount:
    """The CPU seconds of a process tree, as the kernel counts them: a group of cgroup v1's `cpuacct` hierarchy
    or of v2 that the tree's first process joins as it starts (`join`, Popen's preexec_fn), so that what its
    descendants spend counts whether or not anyone waits for them (the sandbox's workers, os.times() misses
    them). `kind` is None where the grader may make no such group (then `seconds` is None)."""

    def __init__(self):
        self.group, self.kind = None, None
        for kind, parent, usage in (("cgroup v1 cpuacct", own("cpuacct"), "cpuacct.usage"),
                                    ("cgroup v2 cpu.stat", v2_parent(), "cpu.stat")):
            if parent is None or not (parent / usage).exists():
                continue
            group = parent / f"ra-account-{os.getpid()}-{time.monotonic_ns()}"
            with contextlib.suppress(OSError):
                group.mkdir()
                self.group, self.kind, self._usage = group, kind, usage
                return

    def join(self) -> None:
        if self.group is not None:
            (self.group / "cgroup.procs").write_text(str(os.getpid()))

    def seconds(self) -> float | None:
        if self.group is None:
            return None
        text = (self.group / self._usage).read_text()
        if self._usage == "cpuacct.usage":
            return int(text) / 1e9
        return int(dict(line.split() for line in text.splitlines())["usage_usec"]) / 1e6

    def close(self) -> None:
        if self.group is not None:
            remove(self.group)
            self.group = None

    def __enter__(self) -> "CpuAccount":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _described(pid: int) -> str:
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        return f"pid {pid}: {command[:60]}"
    except OSError:
        return f"pid {pid}"


def remove(group: Path) -> list[str]:
    """Remove a group the grader made and every group below it (their processes are gone); what could not be
    removed, in words."""
    problems = []
    for below in sorted((p for p in group.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(FileNotFoundError):
            try:
                below.rmdir()
            except OSError as exc:
                problems.append(f"could not remove the cgroup {below}: {exc.strerror}")
    try:
        group.rmdir()
    except FileNotFoundError:
        pass
    except OSError as exc:
        problems.append(f"could not remove the cgroup {group}: {exc.strerror}")
    return problems


def memory_group(memory_mb: int, within: Path | None = None) -> Path | None:
    """A new memory cgroup of `memory_mb` MiB (swap included where it is counted) for one grading's workers: in
    `within` (a CPU share's group on cgroup v2, grader/batch/cpushare.py: a process is in one group for every
    controller there), or below the grader's own group (cgroup v1's memory hierarchy, or v2's:
    grader/harness/cgroups.py); None where the grader may make none. The kernel charges it with what the
    workers hold, files in tmpfs and /dev/shm included, and kills one of them past it."""
    parent = within or own("memory") or v2_parent()
    v1 = parent is not None and (parent / "memory.limit_in_bytes").exists()
    if parent is None or not (v1 or "memory" in enabled_below(parent)):
        return None
    for stale in parent.glob("ra-sandbox-*-*"):  # of graders killed outright: their teardown never ran
        if not Path("/proc", stale.name.split("-")[2]).exists():
            with contextlib.suppress(OSError):
                stale.rmdir()  # refused while a process is in it
    group = parent / f"ra-sandbox-{os.getpid()}-{time.monotonic_ns()}"
    try:
        group.mkdir()
        (group / ("memory.limit_in_bytes" if v1 else "memory.max")).write_text(str(memory_mb * 2**20))
    except OSError:
        with contextlib.suppress(OSError):
            group.rmdir()
        return None
    with contextlib.suppress(OSError):  # where swap is counted: none beyond the limit
        if v1:
            (group / "memory.memsw.limit_in_bytes").write_text(str(memory_mb * 2**20))
        else:
            (group / "memory.swap.max").write_text("0")
    return group
