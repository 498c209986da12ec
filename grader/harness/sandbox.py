"""The sandbox that student code runs in while it is graded, made of operating-system boundaries.

The grader opens one `Sandbox` per submission; the test process starts every worker through its `Spec`
(grader/harness/client.py). Layers, in the order they apply, each with the attacks it stops, each on where the
machine allows it (`resource-grader doctor` says which are and why):

1. limits      always          rlimits on the worker: file size, CPU time, open files, no core dumps; and
                               where the grader may make one (as root: cgroup v1's memory hierarchy, or
                               cgroup v2 with its processes alone in their group, cgroups.py), a memory
                               cgroup for the grading's workers, charged with all they hold: tmpfs and
                               /dev/shm files included, which no rlimit counts (`memory_group`).
                               Stops: disk, CPU and file-descriptor bombs, core files, memory held in files.
2. user        grader is root  a uid/gid of its own per grading (claim_uid: no two graders of the machine
                               ever share one), no supplementary groups, at most
                               MAX_PROCESSES processes, a scrubbed environment, a private home; it cannot
                               signal, trace or read the grader's processes, nor open its private files;
                               the kernel kills it when its starter dies (setpriv --pdeathsig).
                               Stops: reading the reference and the results, killing or tracing the grader,
                               another grading's files, fork bombs beyond the process cap.
3. namespaces  bwrap works     new pid, ipc, net, uts and mount namespaces: the worker sees only the
                               interpreter, its libraries, the worker's code (read-only) and its home;
                               no network; its whole process tree dies with the namespace.
                               Stops: the network, other processes, the rest of the filesystem, leftovers.
4. oracles     always          the problem's oracles (grader/registry.py ORACLES) absent from its worker
                               (and those of the problems graded in one world with it, SHARED_WORLD):
                               stub modules in place of them before torch is imported, their compiled
                               kernels replaced (grader/harness/absent.py); their files masked in the view
                               (namespaces) or denied to the sandbox's uid by an ACL entry (user layer
                               alone, `hide_oracles`). Stops: delegating to the oracle however it is reached
                               (captured, forwarded from a thread, re-imported, renamed, read and compiled,
                               rebuilt from code objects, run between requests, through a scenario).
5. seccomp     Linux x86-64 or aarch64 with seccomp: the worker's kernel filter (grader/harness/seccomp.py),
                               on before the code under test is imported (a lighter one on the fork server):
                               no new process, no ptrace, no other process's memory, no signal but to itself,
                               no keyrings, message queues, memfd, io_uring or userfaultfd, no namespaces, no
                               undoing the kill-with-its-starter; threads allowed. Stops: fork bombs, exec,
                               daemons, tracing, reading or signalling other processes, outliving a grader
                               killed outright, kernel state left for the next grading.
6. guard       always          (in the worker, grader/harness/guard.py) Python-level evidence for a person:
                               opening an oracle's source, rebinding the grader's code, reaching into the
                               guard; a grade never depends on it alone.
7. teardown    always          every process of the sandbox killed, its home unmounted and removed, and
                               (user layer) whatever its uid left in the shared temporary folders, System V
                               IPC and keyrings (the filter refuses keyrings; this is for a machine without
                               it), and its ACL entries on the oracles' files; the next grading, and this
                               one's fingerprint pass, take another uid (claim_uid). A grader killed
                               outright (SIGKILL) cannot: the next sandbox opened on the machine removes its
                               folders (`sweep_stale`).

The folders of one grading, under one temporary folder that others may cross but not list:

    private/   0700, the grader's user only: the official tree with the reference, the report, the spec
    worker/    read-only to the worker: boundary.WORKER (the student's modules, the given code, the scenarios,
               the harness's worker modules)
    home/      the worker's cwd, HOME and TMPDIR, and the only place it may write (a size-bounded
               tmpfs where the grader may mount one)
"""

import contextlib
import fcntl
import functools
import json
import os
import pwd
import shutil
import signal
import socket
import struct
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from grader.harness import boundary, cgroups

UID_BASE = int(os.environ.get("RA_SANDBOX_UID_BASE", "2000000"))  # gradings run as the lowest free uid from here
UID_LOCKS = Path("/run/ra-sandbox") if os.access("/run", os.W_OK) else Path(tempfile.gettempdir(), "ra-sandbox-locks")
UID_TOKEN_PREFIX = "resource-accounting/sandbox-uid/"  # + uid: the abstract socket that holds a uid
MAX_PROCESSES = 128  # processes and threads of the sandbox's uid (torch's thread pools fit in it)
FILE_BYTES = 64 * 2**20  # the largest file the worker may write
OPEN_FILES = 512
HOME_TMPFS = "size=256m,nr_inodes=4096"  # the home's space and number of files, where it can be mounted
SHARED_TMP = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/dev/mqueue")  # writable by every user
# what numerics libraries read, the test process's: the worker computes on as many threads as the test process
# (tests compare its results bit for bit with the test process's own, and a reduction's order depends on them)
PASSED_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
              "MALLOC_ARENA_MAX")


# -- 1. limits, 2. user, 3. namespaces: the command that starts a worker --------------------------------

@dataclass
class Spec:
    """How to start a worker in one grading's sandbox; the grader writes it as JSON for the test process."""

    layers: list[str]  # "user", "namespaces"
    home: str
    tree: str
    uid: int | None = None
    cpu_seconds: int = 600
    binds: list[str] = field(default_factory=list)  # read-only, at the same path (namespaces)
    masks: list[str] = field(default_factory=list)  # secret folders inside binds, hidden under an empty tmpfs
    oracles: dict[str, list[str]] = field(default_factory=dict)  # problem -> its oracles' files, hidden from its worker
    memory_group: str | None = None  # the cgroup every worker joins as it starts (`join`), where there is one

    @classmethod
    def load(cls, path: str | Path) -> "Spec":
        return cls(**json.loads(Path(path).read_text()))

    def command(self, argv: list[str], problems: list[str | None] = ()) -> list[str]:
        """The command that starts `argv` in the sandbox, for a worker of `problems` (one, or a fork server's):
        their oracles' files are masked (namespaces) or, with the user layer alone, made unreadable to the
        sandbox's uid from now until a worker of other problems starts or the grading ends (`hide_oracles`)."""
        self.show(problems)
        limits = [f"--fsize={FILE_BYTES}", f"--cpu={self.cpu_seconds}", f"--nofile={OPEN_FILES}", "--core=0"]
        if "user" in self.layers:  # the process count is per uid: only meaningful for a uid of its own
            limits.append(f"--nproc={MAX_PROCESSES}")
        argv = ["prlimit", *limits, "--", *argv]
        if "user" in self.layers:
            argv = ["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups", "--no-new-privs",
                    "--inh-caps=-all", "--bounding-set=-all", *dies_with_parent(), "--", *argv]
        if "namespaces" in self.layers:
            argv = ["bwrap", *self._bwrap_options(self.hidden(problems)), "--", *argv]
        return argv

    def hidden(self, problems: list[str | None]) -> list[str]:
        """The oracles' files that a worker of `problems` must not see."""
        return sorted({path for problem in problems for path in self.oracles.get(problem or "", [])})

    def show(self, problems: list[str | None]) -> None:
        """With the user layer alone, make what a worker of `problems` may read readable to the sandbox's uid,
        and their oracles' files not (`hide_oracles`); the namespaces layer masks them in the command instead."""
        if "user" in self.layers and "namespaces" not in self.layers and acl_problem() is None:
            hide_oracles(self.uid, self.hidden(problems), self.oracles)

    def join(self) -> None:
        """In a worker's process before it starts (Popen's preexec_fn, as the grader's user): into the grading's
        memory cgroup, with everything it will start."""
        if self.memory_group:
            Path(self.memory_group, "cgroup.procs").write_text(str(os.getpid()))

    def env(self) -> dict[str, str]:
        """The worker's whole environment: nothing of the grader's but what numerics libraries need."""
        env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
        env.update(PATH="/usr/local/bin:/usr/bin:/bin", LANG="C.UTF-8", HOME=self.home, TMPDIR=self.home,
                   MPLCONFIGDIR=self.home, PYTHONPATH=self.tree, PYTHONDONTWRITEBYTECODE="1", PYTHONNOUSERSITE="1")
        return env

    def _bwrap_options(self, oracles: list[str] = ()) -> list[str]:
        options = ["--unshare-pid", "--unshare-ipc", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
                   "--hostname", "sandbox", "--die-with-parent", "--new-session", "--dev", "/dev", "--proc", "/proc"]
        options += system_links()
        options += open_folders([*self.binds, self.tree, self.home], below=["/"], except_in=self.binds)
        for path in self.binds:
            options += ["--ro-bind", path, path]
        for path in self.masks:
            options += ["--tmpfs", path]
        options += mask_options(oracles)
        return options + ["--ro-bind", self.tree, self.tree, "--bind", self.home, self.home, "--chdir", self.home]

    def clear(self) -> None:
        """Between two problems' workers (none running): empty the home, and (user layer) remove what the uid
        left in the shared temporary folders, so that nothing one problem's worker saw reaches the next one
        (an oracle's source read where it was not hidden, stashed for the worker of its problem)."""
        for entry in os.scandir(self.home):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
        if "user" in self.layers:
            for folder in SHARED_TMP:
                remove_owned(Path(folder), self.uid)
            clear_keyrings(self.uid)

    def kill_all(self, spare: int | None = None) -> None:
        """Kill every process of the sandbox's uid, those that left the worker's process group included, but
        `spare` (the grading's fork server, grader/harness/forkserver.py); then hold the uid again (`hold_uid`)
        until the next worker starts."""
        if "user" in self.layers:
            kill_uid(self.uid) if spare is None else kill_uid_but(self.uid, spare)
            hold_uid(self.uid)


# -- the oracles: absent from the worker of their problem (grader/harness/absent.py) --------------------------

def oracle_files() -> dict[str, list[str]]:
    """Problem -> the files and folders of its oracles' modules (grader/registry.py ORACLES), found without
    importing them: what its worker must not see."""
    from grader.harness import absent
    from grader.registry import ORACLES

    return {problem: paths for problem, names in ORACLES.items() if (paths := absent.hidden_paths(names))}


def mask_options(paths: list[str]) -> list[str]:
    """bwrap options that hide `paths` (namespaces): a file reads as /dev/null, a folder as an empty
    read-only tmpfs."""
    options = []
    for path in paths:
        if os.path.isdir(path):
            options += ["--tmpfs", path, "--remount-ro", path]
        else:
            options += ["--ro-bind", "/dev/null", path]
    return options


ACL_XATTR = "system.posix_acl_access"
ACL_USER_OBJ, ACL_USER, ACL_GROUP_OBJ, ACL_GROUP, ACL_MASK, ACL_OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
ACL_UNDEFINED_ID = 0xFFFFFFFF


def _acl(path: str) -> list[tuple[int, int, int]]:
    """The access ACL of `path` as (tag, perm, id) entries; the one its mode means where it has none."""
    try:
        raw = os.getxattr(path, ACL_XATTR, follow_symlinks=False)
    except OSError:
        mode = os.stat(path).st_mode
        return [(ACL_USER_OBJ, mode >> 6 & 7, ACL_UNDEFINED_ID), (ACL_GROUP_OBJ, mode >> 3 & 7, ACL_UNDEFINED_ID),
                (ACL_OTHER, mode & 7, ACL_UNDEFINED_ID)]
    return [struct.unpack_from("<HHI", raw, 4 + 8 * i) for i in range((len(raw) - 4) // 8)]


def _set_acl(path: str, entries: list[tuple[int, int, int]]) -> None:
    """Write `entries`; without named users it is the mode alone (the ACL removed)."""
    named = [e for e in entries if e[0] in (ACL_USER, ACL_GROUP)]
    if not named:
        try:
            os.removexattr(path, ACL_XATTR, follow_symlinks=False)
        except OSError:
            pass
        return
    group = next(e[1] for e in entries if e[0] == ACL_GROUP_OBJ)
    entries = [e for e in entries if e[0] != ACL_MASK] + [(ACL_MASK, group, ACL_UNDEFINED_ID)]
    raw = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in sorted(entries, key=lambda e: (e[0], e[2])))
    os.setxattr(path, ACL_XATTR, raw, follow_symlinks=False)


@contextlib.contextmanager
def _acl_lock():
    """Gradings edit the same oracle files' ACLs, each reading then writing the whole ACL: one at a time."""
    UID_LOCKS.mkdir(mode=0o700, exist_ok=True)
    with open(UID_LOCKS / "acl.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def hide_oracles(uid: int, hidden: list[str], every: dict[str, list[str]]) -> None:
    """With the user layer alone: `uid` may read none of `hidden` (an ACL entry with no rights, which
    concerns that uid alone, so concurrent gradings of other problems still read them) and again every other
    oracle file of `every`. Raises OSError where the filesystem has no ACLs (`doctor` says so)."""
    with _acl_lock():
        for path in sorted({p for paths in every.values() for p in paths}):
            entries = [e for e in _acl(path) if not (e[0] == ACL_USER and e[2] == uid)]
            if path in hidden:
                entries.append((ACL_USER, 0, uid))
            _set_acl(path, entries)


@functools.cache
def acl_problem() -> str | None:
    """Why this machine cannot deny one uid an oracle's files by ACL, or None (checked once)."""
    files = [p for paths in oracle_files().values() for p in paths]
    if os.geteuid() != 0:
        return "the grader is not root"
    if files:
        try:
            with _acl_lock():  # unlocked, a stale copy written back would lift another grading's entry
                _set_acl(files[0], _acl(files[0]))  # rewrites what is there: a no-op that needs ACL support
        except OSError as exc:
            return f"no POSIX ACLs on {files[0]}'s filesystem ({exc.strerror})"
    return None


@functools.cache
def dies_with_parent() -> tuple[str, ...]:
    """setpriv's option that has the kernel kill the worker when its starter (the test process) dies, where
    this setpriv has it; else none, and a worker under the user layer alone outlives a
    grader killed outright until its CPU limit (under namespaces, bwrap's --die-with-parent holds anyway)."""
    try:
        usage = subprocess.run(["setpriv", "--help"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        usage = ""
    return ("--pdeathsig=KILL",) if "--pdeathsig" in usage else ()


@functools.cache
def kernel_filter_problem() -> str | None:
    """Why the worker's seccomp filter (grader/harness/seccomp.py) does not hold here, or None (checked once,
    in a child process)."""
    from grader.harness import seccomp

    return seccomp.unsupported() or seccomp.selftest()


def system_links() -> list[str]:
    """bwrap options for the top-level links of a merged-/usr system (/bin -> usr/bin, ...)."""
    return [option for link in ("/bin", "/lib", "/lib64", "/sbin") if os.path.islink(link)
            for option in ("--symlink", os.readlink(link), link)]


def _inside(path: str, folders: list[str]) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


def open_folders(mounted: list[str], below: list[str], except_in: list[str]) -> list[str]:
    """bwrap options that create, open to every user, the folders on the way to each mounted path that lie
    strictly inside `below` and not inside `except_in` (bwrap would make them mode 0700, closed to others)."""
    folders = {str(a) for p in mounted for a in Path(p).parents if _inside(str(a), below) and str(a) not in below}
    options = []
    for folder in sorted(folders, key=len):
        if not _inside(folder, except_in):
            options += ["--perms", "0755", "--dir", folder]
    return options


def kill_uid(uid: int) -> None:
    """SIGKILL every process of `uid`: a child that becomes `uid` and signals -1 reaches exactly those."""
    child = os.fork()
    if child == 0:
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            for _ in range(200):
                os.kill(-1, signal.SIGKILL)  # every process this uid may signal, except the caller
                if processes_of(uid) == [os.getpid()]:  # zombies still take the signal: look for live ones
                    break
                time.sleep(0.005)
        finally:  # ProcessLookupError: none left
            os._exit(0)
    os.waitpid(child, 0)


def kill_uid_but(uid: int, spare: int) -> None:
    """SIGKILL every process of `uid` but `spare`, one by one: each found is stopped, until a search finds no new
    one (a stopped process starts nothing more), then all are killed."""
    stopped: set[int] = set()
    while found := set(processes_of(uid)) - stopped - {spare}:
        for pid in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        stopped |= found
    for pid in stopped:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def hold_uid(uid: int) -> None:
    """Start a process of `uid` that does nothing until it is killed or its starter dies: from the claim on, a
    grader that looks for live processes of a uid before taking it (every version of this one does) sees it
    taken, even between two workers. It reads a pipe whose only writer is this process (`cat`, to its end):
    when this process exits, or is killed, the holder ends too, and no uid is held by a grader that is gone.
    Returns once the holder is `uid` (before, it is root for a moment: a teardown that looked then would
    miss it, and it would outlive the sandbox). The teardown kills it with the rest."""
    _holders[:] = [h for h in _holders if h.poll() is None]  # reaped once killed; their pipes closed
    holder = subprocess.Popen(
        ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs", "--", "cat"],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/",
        env={"PATH": "/usr/bin:/bin"}, start_new_session=True)
    _holders.append(holder)
    deadline = time.monotonic() + 10
    while _real_uid(holder.pid) != uid and holder.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)


_holders: list[subprocess.Popen] = []


def _status(pid: int | str) -> dict[str, str] | None:
    """The fields of /proc/<pid>/status (name -> the text after the colon); None once the process is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    return dict(line.split(":", 1) for line in status.splitlines() if ":" in line)


def _real_uid(pid: int) -> int | None:
    fields = _status(pid)
    return None if fields is None else int(fields["Uid"].split()[0])


def processes_of(uid: int | range) -> list[int]:
    """The live (not zombie) processes whose real uid is `uid`, or in the range `uid` (`sandbox_uids()`)."""
    uids = range(uid, uid + 1) if isinstance(uid, int) else uid
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        fields = _status(pid)
        if fields and int(fields["Uid"].split()[0]) in uids and not fields["State"].strip().startswith(("Z", "X")):
            found.append(int(pid))
    return found


def _interpreter_paths() -> list[str]:
    """What the worker's interpreter needs, read-only: system libraries, Python, its site-packages."""
    paths = {"/usr", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
             sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             str(Path(os.path.realpath(sys.executable)).parent.parent), sysconfig.get_paths()["purelib"],
             sysconfig.get_paths()["platlib"]}
    kept = sorted(p for p in paths if os.path.exists(p))
    return [p for p in kept if not _inside(p, [q for q in kept if q != p])]


def _secret_paths() -> list[str]:
    """boundary.PRIVATE, wherever this installation keeps it (an installed `reference` too): never readable by
    the sandbox's user."""
    import importlib.util

    found = {str(boundary.locate(s)) for s in boundary.PRIVATE}
    spec = importlib.util.find_spec("reference")
    if spec is not None and spec.submodule_search_locations:
        found.update(spec.submodule_search_locations)
    return sorted(p for p in found if os.path.exists(p))


# -- which layers this machine allows -----------------------------------------------------------------

@dataclass
class Layers:
    active: tuple[str, ...]
    why_not: dict[str, str]  # layer -> why it is off
    notes: list[str] = field(default_factory=list)

    @property
    def sandboxed(self) -> bool:
        return bool(self.active)

    def describe(self) -> str:
        if not self.active:
            return "no sandbox: the submission runs as this user (" + "; ".join(self.why_not.values()) + ")"
        return "sandbox: " + " + ".join(["limits", *self.active])


PROBE = "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)"
_detected: dict[str, Layers] = {}


def detect(mode: str = "auto") -> Layers:
    """The strongest combination of layers that starts a worker's interpreter here. `mode`: auto, user
    (the user layer alone, as on a machine without namespaces), none."""
    if mode not in _detected:
        _detected[mode] = _detect(mode)
    return _detected[mode]


def _detect(mode: str) -> Layers:
    why_not: dict[str, str] = {}
    if mode == "none":
        return Layers((), {"user": "--no-sandbox", "namespaces": "--no-sandbox"})
    missing = [tool for tool in ("prlimit", "setpriv", "bwrap") if shutil.which(tool) is None]
    if os.geteuid() != 0:
        why_not["user"] = "the grader is not root, so it cannot run the submission as another user"
    elif {"prlimit", "setpriv"} & set(missing):
        why_not["user"] = "prlimit or setpriv not found (Debian/Ubuntu package util-linux)"
    elif (problem := _uid_problem(UID_BASE)) is not None:
        why_not["user"] = problem
    if mode == "user":
        why_not["namespaces"] = "switched off (--sandbox user)"
    elif "bwrap" in missing:
        why_not["namespaces"] = "bwrap not found (Debian/Ubuntu package bubblewrap)"
    candidates = [c for c in (("user", "namespaces"), ("user",), ("namespaces",))
                  if not set(c) & set(why_not) and (os.geteuid() != 0 or "user" in c)]
    for layers in candidates:
        failure = _probe(layers)
        if failure is None:
            return Layers(layers, why_not, _notes(layers))
        for layer in layers:
            why_not.setdefault(layer, f"a worker could not start with {' + '.join(layers)}: {failure}")
    return Layers((), why_not)


def _uid_problem(uid: int) -> str | None:
    try:
        return f"uid {uid} belongs to user {pwd.getpwuid(uid).pw_name!r} (set RA_SANDBOX_UID_BASE)"
    except KeyError:
        return None


UID_RANGE = 1000  # the uids a sandbox may take: sandbox_uids()


def sandbox_uids() -> range:
    return range(UID_BASE, UID_BASE + UID_RANGE)


def claim_uid() -> tuple[int, int]:
    """A sandbox uid that no other grading on this machine holds, and the file descriptor of the token that holds
    it (released when closed, or when the grader dies). The search starts after the uid claimed last on this
    machine (`UID_LOCKS`/next), so that the next grading, and the fingerprint pass of this one, run as another
    uid. Three conditions, each enough to pass a uid over: its lock file is held (graders sharing UID_LOCKS),
    its token is held (every grader of the machine, whatever its lock folder or root: `uid_token`), a process of
    that uid is alive."""
    UID_LOCKS.mkdir(mode=0o700, exist_ok=True)
    start = _next_uid_offset()
    for uid in (UID_BASE + (start + i) % UID_RANGE for i in range(UID_RANGE)):
        lock = os.open(UID_LOCKS / f"{uid}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(lock)
            continue
        token = uid_token(uid)
        os.close(lock)  # the token holds the uid from here: the lock only spares a look-up
        if token is None:
            continue
        if _uid_problem(uid) is None and not processes_of(uid):
            _next_uid_offset(uid - UID_BASE + 1)
            return uid, token
        os.close(token)
    raise RuntimeError(f"no free sandbox uid from {UID_BASE}")


def _next_uid_offset(new: int | None = None) -> int:
    """Where the next search for a uid starts (an offset from UID_BASE); with `new`, record it. Graders racing
    here only change which uid is tried first: the locks and tokens keep a uid to one grading."""
    record = UID_LOCKS / "next"
    if new is not None:
        with contextlib.suppress(OSError):
            record.write_text(str(new % UID_RANGE))
        return new % UID_RANGE
    try:
        return int(record.read_text()) % UID_RANGE
    except (OSError, ValueError):
        return 0


def uid_token(uid: int) -> int | None:
    """A socket bound to the abstract unix address of `uid` (a name the kernel holds, with no file: the same
    for every grader of the machine, in a chroot or not, and freed when its holder dies), or None where
    another process holds it. A worker that shares the grader's network namespace (the user layer alone)
    could bind such names first: that makes the uid look taken, never shared."""
    token = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        token.bind(f"\0{UID_TOKEN_PREFIX}{uid}")
    except OSError:
        token.close()
        return None
    return token.detach()


def _probe(layers: tuple[str, ...]) -> str | None:
    uid, lock = claim_uid() if "user" in layers else (None, -1)
    try:
        with tempfile.TemporaryDirectory(prefix="ra-probe-") as tmp:
            spec = Spec(list(layers), home=tmp, tree=tmp, uid=uid, binds=_interpreter_paths())
            os.chmod(tmp, 0o755)
            done = subprocess.run(spec.command([sys.executable, "-c", PROBE]), env=spec.env(), cwd=tmp,
                                  capture_output=True, timeout=60)
    finally:
        if lock >= 0:
            os.close(lock)
    if done.returncode == 0:
        return None
    why = (done.stderr.decode(errors="replace").strip().splitlines() or [f"exit code {done.returncode}"])[-1]
    private = _private_ancestor()
    return why + (f" ({private} is closed to other users)" if private and "namespaces" not in layers else "")


def _private_ancestor() -> str | None:
    """The first folder on the way to the interpreter or its libraries that other users cannot cross."""
    for target in (os.path.realpath(sys.executable), sys.prefix, sys.base_prefix):
        for folder in reversed(Path(target).parents):
            if not os.stat(folder).st_mode & 0o001:
                return str(folder)
    return None


def _notes(layers: tuple[str, ...]) -> list[str]:
    notes = []
    if "user" in layers and "namespaces" not in layers:
        for secret in _secret_paths():
            notes.append(f"{secret}: made private to the grader's user (mode 0700)")
    return notes


# -- one grading's sandbox, and its teardown ----------------------------------------------------------

OPEN: set["Sandbox"] = set()  # the sandboxes not yet torn down: what a grader stopped by SIGTERM tears down
PREFIX = "ra-grade-"  # a sandbox's folder in the temporary folder
STALE_AFTER = 60  # seconds: younger, a folder may be one whose grader has not locked it yet


def _lock(folder: Path) -> int:
    """An open descriptor of `folder` holding its lock: the kernel releases it when the grader dies, however."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def sweep_stale(tmp: Path | None = None, older_than: float = STALE_AFTER) -> list[str]:
    """Remove the sandboxes of graders killed outright (SIGKILL: the OOM killer, a lost cluster worker), which
    could not tear down their own: each folder of the temporary folder `tmp` (default: tempfile's) named
    PREFIX*, the grader's user's own, older than `older_than` seconds, whose lock no process holds, its home's
    tmpfs unmounted first (a folder of that name that another user made is not a sandbox). Their processes
    are gone already (the kernel killed them with the grader). What could not be removed, in words."""
    problems = []
    folder = Path(tmp or tempfile.gettempdir())
    for entry in folder.glob(PREFIX + "*"):
        try:
            stat = entry.lstat()
            if stat.st_uid != os.geteuid() or time.time() - stat.st_mtime < older_than:
                continue
            fd = os.open(entry, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            continue  # gone, or not a folder: not a sandbox
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue  # a grader holds it
        try:
            home = entry / "home"
            if _is_mount(home) and subprocess.run(["umount", "--lazy", str(home)], capture_output=True).returncode:
                problems.append(f"could not unmount {home}, left by a grader killed outright")
                continue
            shutil.rmtree(entry, onerror=lambda _f, path, e: problems.append(f"could not remove {path}: {e[1]}"))
        finally:
            os.close(fd)
    return problems


def _is_mount(path: Path) -> bool:
    mounts = Path("/proc/self/mounts").read_text().splitlines()
    return any(line.split()[1] == str(path) for line in mounts if len(line.split()) > 1)


class Sandbox:
    """The folders, uid and teardown of one grading: `with Sandbox(layers) as box: ...`."""

    def __init__(self, layers: Layers, cpu_seconds: float = 600, memory_mb: int = 0, memory_within: Path | None = None):
        self.layers, self.cpu_seconds, self.memory_mb = layers, int(cpu_seconds) + 1, memory_mb
        self.memory_within = memory_within  # where its memory group goes (`memory_group`'s `within`)
        self.uid, self.lock = None, -1
        self.memory_group: Path | None = None
        self.mounted = False
        self.problems: list[str] = []  # teardown failures, for the operator's log

    def __enter__(self) -> "Sandbox":
        self.problems += sweep_stale()
        self.top = Path(tempfile.mkdtemp(prefix=PREFIX))
        self.in_use = _lock(self.top)
        OPEN.add(self)
        try:
            return self._open()
        except BaseException:
            self.teardown()
            raise

    def _open(self) -> "Sandbox":
        os.chmod(self.top, 0o711)
        self.private, self.tree, self.home = self.top / "private", self.top / "worker", self.top / "home"
        self.private.mkdir(mode=0o700)
        self.tree.mkdir(mode=0o755)
        self.home.mkdir(mode=0o700)
        if self.memory_mb:
            self.memory_group = memory_group(self.memory_mb, self.memory_within)
        if "user" in self.layers.active:
            self.uid, self.lock = claim_uid()
            hold_uid(self.uid)
            self.mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"{HOME_TMPFS},mode=0700,nosuid,nodev",
                                           "ra-sandbox", str(self.home)], capture_output=True).returncode == 0
            os.chown(self.home, self.uid, self.uid)
            if "namespaces" not in self.layers.active:
                for secret in _secret_paths():
                    os.chmod(secret, os.stat(secret).st_mode & 0o700)
        return self

    def expose(self, workspace: Path) -> None:
        """Copy what the worker needs (boundary.WORKER) from the grading workspace and the grader into its
        read-only tree."""
        boundary.copy_worker_files(self.tree, workspace)

    def spec(self) -> Path:
        """The spec file (in private/) that the test process is given."""
        binds = _interpreter_paths()
        masks = [s for s in _secret_paths() if _inside(s, binds)]
        spec = Spec(list(self.layers.active), str(self.home), str(self.tree), self.uid, self.cpu_seconds,
                    binds, masks, oracle_files(), str(self.memory_group) if self.memory_group else None)
        path = self.private / "sandbox.json"
        path.write_text(json.dumps(asdict(spec)))
        return path

    def __exit__(self, *exc) -> None:
        self.teardown()

    def teardown(self) -> None:
        """Kill every process of the sandbox, then remove everything it could have written (once)."""
        if self not in OPEN:
            return
        OPEN.discard(self)
        if self.uid is not None:
            # until the uid has had no process for a while: a worker being started when the test process died
            # is still root for a few milliseconds (prlimit, setpriv) before it becomes the uid
            deadline, quiet, alive = time.monotonic() + 10, 0, []
            while quiet < 5 and time.monotonic() < deadline:
                alive = processes_of(self.uid)
                quiet = 0 if alive else quiet + 1
                if alive:
                    kill_uid(self.uid)
                time.sleep(0.05)
            if alive:
                self.problems.append(f"processes of uid {self.uid} survived the teardown: {alive}")
        if self.uid is not None and "namespaces" not in self.layers.active:
            try:
                hide_oracles(self.uid, [], oracle_files())  # the uid's entries removed: it may be another's next
            except OSError as exc:
                self.problems.append(f"could not lift the oracles' ACL entries of uid {self.uid}: {exc}")
        if self.mounted and subprocess.run(["umount", "--lazy", str(self.home)], capture_output=True).returncode:
            self.problems.append(f"could not unmount {self.home}")
        shutil.rmtree(self.top, onerror=lambda _f, path, e: self.problems.append(f"could not remove {path}: {e[1]}"))
        if self.uid is not None:
            for folder in SHARED_TMP:
                self.problems += remove_owned(Path(folder), self.uid)
            self._remove_ipc()
            self.problems += filter(None, [clear_keyrings(self.uid)])
        if self.memory_group is not None:
            try:
                self.memory_group.rmdir()  # its processes are gone; what its files held is its parent's now
            except OSError as exc:
                self.problems.append(f"could not remove the memory cgroup {self.memory_group}: {exc}")
        if self.lock >= 0:
            os.close(self.lock)  # the uid is free for another grading
        os.close(self.in_use)

    def _remove_ipc(self) -> None:
        """Remove the System V IPC objects of the sandbox's uid: they outlive processes (with the namespaces
        layer, they die with the ipc namespace)."""
        for kind, ipc_id in ipc_objects({self.uid}):
            if subprocess.run(["ipcrm", IPC_KINDS[kind], ipc_id], capture_output=True).returncode:
                self.problems.append(f"could not remove System V {kind} {ipc_id}")

KEYCTL_GET_KEYRING_ID, KEYCTL_CLEAR = 0, 7
KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING = -4, -5


def clear_keyrings(uid: int) -> str | None:
    """Empty the keyrings of `uid` that outlive its processes (its user and user-session keyrings: the kernel keeps
    them for the uid, and the next grading may run as it), from a child that takes the uid (the keyring calls
    act on the caller's own). Refused to the worker by its filter (grader/harness/seccomp.py); this clears what
    a worker without one left. None, or what went wrong."""
    import ctypes

    from grader.harness import seccomp

    if seccomp.number("keyctl") is None:
        return None
    keyctl = ctypes.c_long(seccomp.number("keyctl"))
    libc = ctypes.CDLL(None, use_errno=True)
    child = os.fork()
    if child == 0:
        code = 3
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            code = 0
            for keyring in (KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING):
                # asked without creating it: a uid that never made one is left without
                if libc.syscall(keyctl, KEYCTL_GET_KEYRING_ID, keyring, 0) > 0 and libc.syscall(
                        keyctl, KEYCTL_CLEAR, keyring) != 0:
                    code = 2
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    return None if status == 0 else f"could not clear the keyrings of uid {uid} (status {status})"


def memory_group(memory_mb: int, within: Path | None = None) -> Path | None:
    """A new memory cgroup of `memory_mb` MiB (swap included where it is counted) for one grading's workers: in
    `within` (a CPU share's group on cgroup v2, grader/cpushare.py: a process is in one group for every
    controller there), or below the grader's own group (cgroup v1's memory hierarchy, or v2's:
    grader/harness/cgroups.py); None where the grader may make none. The kernel charges it with what the
    workers hold, files in tmpfs and /dev/shm included, and kills one of them past it."""
    parent = within or cgroups.own("memory") or cgroups.v2_parent()
    v1 = parent is not None and (parent / "memory.limit_in_bytes").exists()
    if parent is None or not (v1 or "memory" in cgroups.enabled_below(parent)):
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


def remove_owned(folder: Path, uid: int) -> list[str]:
    """Remove what `uid` left in a folder that every user may write to; what could not be removed, in words."""
    problems = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return problems
    for entry in entries:
        try:
            if entry.stat(follow_symlinks=False).st_uid != uid:
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
        except OSError as exc:
            problems.append(f"could not remove {entry.path}: {exc}")
    return problems


IPC_KINDS = {"shm": "-m", "sem": "-s", "msg": "-q"}  # /proc/sysvipc/KIND -> ipcrm's flag


def ipc_objects(uids: set[int]) -> list[tuple[str, str]]:
    """(kind, id) of the System V shared memory segments, semaphore sets and message queues that any of
    `uids` created or owns."""
    found = []
    for kind in IPC_KINDS:
        try:
            header, *rows = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
        except (OSError, ValueError):
            continue
        for row in rows:
            values = dict(zip(header.split(), row.split(), strict=False))
            if {int(values["cuid"]), int(values["uid"])} & uids:
                found.append((kind, row.split()[1]))  # the second column is the id (shmid, semid, msqid)
    return found


def doctor(mode: str = "auto") -> str:
    """Which layers are active on this machine, and why the others are not."""
    layers = detect(mode)
    probe = memory_group(64)
    if probe is not None:
        probe.rmdir()
    memory = ("a memory cgroup per grading: what its workers hold in files counts too" if probe is not None else
              f"address space only ({cgroups.v2_refusal() or 'no memory cgroup the grader may make here'})")
    rows = [f"{'limits':<11} on   files <= {FILE_BYTES >> 20} MiB, CPU time <= the time limit, "
            f"{OPEN_FILES} open files, no core dumps; memory: {memory}"]
    for layer, on_text in [("user", f"a free uid from {UID_BASE}, no groups, <= {MAX_PROCESSES} processes, "
                                    "scrubbed environment, private home"),
                           ("namespaces", "bwrap: own pid/ipc/net/uts/mount namespaces, read-only view, no network")]:
        state = "on " if layer in layers.active else "off"
        rows.append(f"{layer:<11} {state}  {on_text if layer in layers.active else layers.why_not.get(layer, '')}")
    rows += [f"{'':<16}{note}" for note in layers.notes]
    if layers.sandboxed:
        hiding = ("masked in its view" if "namespaces" in layers.active else
                  "unreadable to the sandbox's uid (an ACL entry per grading)" if acl_problem() is None else
                  f"READABLE to the sandbox's uid ({acl_problem()}): absent from imports and sys.modules only")
        from grader.registry import SHARED_WORLD

        shared = ", ".join(SHARED_WORLD)
        rows.append(f"{'oracles':<11} on   each problem's oracles absent from its worker (those of {shared} from "
                    f"each of them): stub modules, files {hiding}")
    why = kernel_filter_problem()
    rows.append(f"{'seccomp':<11} {'off' if why else 'on '}  " + (why + ": new processes, ptrace and other processes' "
                "memory are then only evidence for review (the guard)" if why else
                "the worker's kernel filter: no new process, no ptrace, no other process's memory, no signal but "
                "to itself, no keyrings, message queues, memfd or io_uring; threads allowed"))
    rows.append("")
    rows.append(layers.describe())
    rows.append("batch (other people's code): " + ("allowed" if layers.sandboxed else "refused without --no-sandbox"))
    return "\n".join(rows)
