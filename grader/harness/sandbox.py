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
2. user        grader is root  a uid/gid of its own per grading (uids.claim_uid: no two graders of the machine
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
                               alone, `hiding.hide_oracles`). Stops: delegating to the oracle however it is reached
                               (captured, forwarded from a thread, re-imported, renamed, read and compiled,
                               rebuilt from code objects, run between requests, through a scenario).
5. seccomp     Linux x86-64 or aarch64 with seccomp: the worker's kernel filter (grader/harness/seccomp.py),
                               on before the code under test is imported (its own on the fork server, which
                               runs as a uid other than its workers' where the grader is root): an allowlist of
                               what a CPython + torch process does on its own behalf, ENOSYS for anything else,
                               EPERM for what reaches another process or shared state (new processes, ptrace,
                               signals, fd ownership, limits and priority but its own; keyrings, message queues,
                               memfd, io_uring; the page cache's residency and eviction; sockets, locks). Every
                               file of the view is read into the page cache before any worker runs
                               (grader/harness/pagecache.py). Stops: fork bombs, exec, daemons, tracing, reading
                               or signalling other processes, outliving a grader killed outright, kernel state
                               and the page cache as a channel to the next grading.
6. guard       always          (in the worker, grader/harness/guard.py) Python-level evidence for a person:
                               opening an oracle's source, rebinding the grader's code, reaching into the
                               guard; a grade never depends on it alone.
7. teardown    always          every process of the sandbox killed, its home unmounted and removed, and
                               (user layer) whatever its uid left in the shared temporary folders, System V
                               IPC and keyrings (the filter refuses keyrings; this is for a machine without
                               it), and its ACL entries on the oracles' files; the next grading, and this
                               one's fingerprint pass, take another uid (uids.claim_uid). A grader killed
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
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from grader.harness import boundary, cgroups, hiding, pagecache, uids

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
    server_uid: int | None = None  # a fork server's uid (user layer), never its workers' (`command`)

    @classmethod
    def load(cls, path: str | Path) -> "Spec":
        return cls(**json.loads(Path(path).read_text()))

    def command(self, argv: list[str], problems: list[str | None] = ()) -> list[str]:
        """The command that starts `argv` in the sandbox, for a worker of `problems` (one, or a fork server's):
        their oracles' files are masked (namespaces) or, with the user layer alone, made unreadable to the
        sandbox's uids from now until a worker of other problems starts or the grading ends (`hiding.hide_oracles`).
        A fork server's command (its `argv` names --fork-for: grader/harness/client.py) runs, with the user layer,
        as `server_uid`, holding only the capabilities to give each worker it forks the workers' uid (`--worker-uid`,
        grader/harness/forkserver.py): no worker can then signal it, set its limits or priority, or open its memory,
        whatever its filter lets through (the kernel refuses them to another uid)."""
        self.show(problems)
        server = "--fork-for" in argv and "user" in self.layers and self.server_uid is not None
        if server:
            argv = [*argv, "--worker-uid", str(self.uid)]
        limits = [f"--fsize={FILE_BYTES}", f"--cpu={self.cpu_seconds}", f"--nofile={OPEN_FILES}", "--core=0"]
        if "user" in self.layers:  # the process count is per uid: only meaningful for a uid of its own
            limits.append(f"--nproc={MAX_PROCESSES}")
        argv = ["prlimit", *limits, "--", *argv]
        if "user" in self.layers:
            uid = self.server_uid if server else self.uid
            caps = (["--inh-caps=-all,+setuid,+setgid", "--ambient-caps=+setuid,+setgid",
                     "--bounding-set=-all,+setuid,+setgid"] if server else ["--inh-caps=-all", "--bounding-set=-all"])
            argv = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs", *caps,
                    *dies_with_parent(), "--", *argv]
        if "namespaces" in self.layers:
            argv = ["bwrap", *self._bwrap_options(self.hidden(problems)), "--", *argv]
        return argv

    def hidden(self, problems: list[str | None]) -> list[str]:
        """The oracles' files that a worker of `problems` must not see."""
        return sorted({path for problem in problems for path in self.oracles.get(problem or "", [])})

    def show(self, problems: list[str | None]) -> None:
        """With the user layer alone, make what a worker of `problems` may read readable to the sandbox's uid,
        and their oracles' files not (`hiding.hide_oracles`); the namespaces layer masks them in the command instead."""
        if "user" in self.layers and "namespaces" not in self.layers and hiding.acl_problem() is None:
            for uid in self.uids():
                hiding.hide_oracles(uid, self.hidden(problems), self.oracles)

    def uids(self) -> list[int]:
        """The sandbox's uids (user layer): its workers', and its fork servers' where it has one."""
        return [uid for uid in (self.uid, self.server_uid) if uid is not None]

    def join(self) -> None:
        """In a worker's process before it starts (Popen's preexec_fn, as the grader's user): into the grading's
        memory cgroup, with everything it will start."""
        if self.memory_group:
            Path(self.memory_group, "cgroup.procs").write_text(str(os.getpid()))

    def env(self) -> dict[str, str]:
        """The worker's whole environment: nothing of the grader's but what numerics libraries need."""
        env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
        env.update(PATH="/usr/local/bin:/usr/bin:/bin", LANG="C.UTF-8", HOME=self.home, TMPDIR=self.home,
                   MPLCONFIGDIR=self.home, PYTHONPATH=self.tree, PYTHONDONTWRITEBYTECODE="1", PYTHONNOUSERSITE="1",
                   PYTHONSAFEPATH="1")  # its home (the folder it starts in) never on its import path
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
        options += hiding.mask_options(oracles)
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
            for uid in self.uids():
                for folder in SHARED_TMP:
                    uids.remove_owned(Path(folder), uid)
                uids.clear_keyrings(uid)

    def kill_all(self, spare: int | None = None) -> None:
        """Kill every process of the sandbox's workers' uid, those that left the worker's process group included,
        but `spare` (the grading's fork server, grader/harness/forkserver.py, which runs as a uid of its own where the
        sandbox has one: then spared by its uid; `spare` None kills it too); then hold the uids again
        (`uids.hold_uid`) until the next worker starts."""
        if "user" in self.layers:
            if self.server_uid is None:
                uids.kill_uid(self.uid) if spare is None else uids.kill_uid_but(self.uid, spare)
            else:
                uids.kill_uid(self.uid)
                if spare is None:
                    uids.kill_uid(self.server_uid)
            for uid in self.uids() if spare is None else [self.uid]:
                uids.hold_uid(uid)


# -- the oracles: absent from the worker of their problem (grader/harness/absent.py) --------------------------


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


def _interpreter_paths() -> list[str]:
    """What the worker's interpreter needs, read-only: system libraries, Python, its site-packages."""
    paths = {"/usr", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
             sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             str(Path(os.path.realpath(sys.executable)).parent.parent), sysconfig.get_paths()["purelib"],
             sysconfig.get_paths()["platlib"]}
    kept = sorted(p for p in paths if os.path.exists(p))
    return [p for p in kept if not _inside(p, [q for q in kept if q != p])]


def view() -> tuple[list[str], list[str]]:
    """What a worker sees (namespaces): the folders bound read-only, and those masked in them."""
    binds = _interpreter_paths()
    return binds, [s for s in _secret_paths() if _inside(s, binds)] + unneeded()


def warm_view(layers: "Layers") -> dict | None:
    """Every file of the workers' view in the page cache, where a sandbox runs them (grader/harness/pagecache.py:
    at most once per WARM_SECONDS in this process). The grader calls it before a grading's clock starts
    (grader/grading.py); each sandbox again before its first worker, which then costs nothing."""
    return pagecache.warm(*view()) if layers.active else None


@functools.cache
def unneeded() -> list[str]:
    """The folders of /usr that no worker needs, masked in its view (the namespaces layer): all but the interpreter,
    its standard library and packages, the system's shared libraries and locales, and the folders of the tools that
    start it and that CPython's ctypes asks (setpriv, prlimit, ldconfig); and the base interpreter's own packages where
    a virtual environment leaves them out of the import path. Fewer files to read (or to
    probe: grader/harness/pagecache.py)."""
    paths = sysconfig.get_paths()
    keep = [p for p in _interpreter_paths() if p != "/usr"] + pagecache.libraries() + [
        os.path.realpath(sys.executable), paths["stdlib"], paths["platstdlib"], paths["purelib"], paths["platlib"],
        sysconfig.get_config_var("LIBDIR") or "/usr/lib", "/usr/lib/locale", "/usr/lib64", "/usr/lib32",
        *[os.path.dirname(p) for tool in ("setpriv", "prlimit", "ldconfig") for p in {shutil.which(tool) or "",
                                                                          os.path.realpath(shutil.which(tool) or "")}]]
    unused = [os.path.join(base, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}", "site-packages")
              for base in {sys.base_prefix, sys.base_exec_prefix} if sys.prefix != sys.base_prefix]
    unused = [p for p in unused if os.path.isdir(p) and not any(_inside(e, [p]) for e in sys.path if e)]
    return pagecache.narrowed("/usr", [k for k in keep if k and os.path.exists(k)]) + unused


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
    elif (problem := uids._uid_problem(uids.UID_BASE)) is not None:
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


def _probe(layers: tuple[str, ...]) -> str | None:
    uid, lock = uids.claim_uid() if "user" in layers else (None, -1)
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
        self.server_uid, self.server_lock = None, -1  # the fork servers' uid (user layer)
        self.memory_group: Path | None = None
        self.mounted = False
        self.warmed: dict | None = None  # what warming the page cache read (grader/harness/pagecache.py)
        self.teardown_failures: list[str] = []  # for the operator's log

    def __enter__(self) -> "Sandbox":
        self.teardown_failures += sweep_stale()
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
            self.memory_group = cgroups.memory_group(self.memory_mb, self.memory_within)
        if "user" in self.layers.active:
            self.uid, self.lock = uids.claim_uid()
            uids.hold_uid(self.uid)
            self.server_uid, self.server_lock = uids.claim_uid()
            uids.hold_uid(self.server_uid)
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

    def sandbox(self) -> "Spec":
        """The Spec of this box's workers, for a worker started in this process. Before it is made (before any worker
        runs), every file of the workers' view is in the page cache (grader/harness/pagecache.py)."""
        binds, masks = view()
        self.warmed = warm_view(self.layers)
        return Spec(list(self.layers.active), str(self.home), str(self.tree), self.uid, self.cpu_seconds,
                    binds, masks, hiding.oracle_files(), str(self.memory_group) if self.memory_group else None,
                    self.server_uid)

    def spec(self) -> Path:
        """The spec file (in private/) that the test process, another process, is given: `sandbox()` as JSON."""
        path = self.private / "sandbox.json"
        path.write_text(json.dumps(asdict(self.sandbox())))
        return path

    def __exit__(self, *exc) -> None:
        self.teardown()

    def teardown(self) -> None:
        """Kill every process of the sandbox, then remove everything it could have written (once)."""
        if self not in OPEN:
            return
        OPEN.discard(self)
        mine = [uid for uid in (self.uid, self.server_uid) if uid is not None]
        if mine:
            # until the uids have had no process for a while: a worker being started when the test process died
            # is still root for a few milliseconds (prlimit, setpriv) before it becomes the uid
            deadline, quiet, alive = time.monotonic() + 10, 0, []
            while quiet < 5 and time.monotonic() < deadline:
                alive = [pid for uid in mine for pid in uids.processes_of(uid)]
                quiet = 0 if alive else quiet + 1
                for uid in mine if alive else ():
                    uids.kill_uid(uid)
                time.sleep(0.05)
            if alive:
                self.teardown_failures.append(f"processes of uids {mine} survived the teardown: {alive}")
        for uid in mine if "namespaces" not in self.layers.active else ():
            try:
                # the uid's entries removed: it may be another grading's next
                hiding.hide_oracles(uid, [], hiding.oracle_files())
            except OSError as exc:
                self.teardown_failures.append(f"could not lift the oracles' ACL entries of uid {uid}: {exc}")
        if self.mounted and subprocess.run(["umount", "--lazy", str(self.home)], capture_output=True).returncode:
            self.teardown_failures.append(f"could not unmount {self.home}")
        failures = self.teardown_failures
        shutil.rmtree(self.top, onerror=lambda _f, path, e: failures.append(f"could not remove {path}: {e[1]}"))
        for uid in mine:
            for folder in SHARED_TMP:
                self.teardown_failures += uids.remove_owned(Path(folder), uid)
            self.teardown_failures += filter(None, [uids.clear_keyrings(uid)])
        if mine:
            self._remove_ipc(set(mine))
        if self.memory_group is not None:
            try:
                self.memory_group.rmdir()  # its processes are gone; what its files held is its parent's now
            except OSError as exc:
                self.teardown_failures.append(f"could not remove the memory cgroup {self.memory_group}: {exc}")
        for lock in (self.lock, self.server_lock):
            if lock >= 0:
                os.close(lock)  # the uid is free for another grading
        os.close(self.in_use)

    def _remove_ipc(self, owners: set[int]) -> None:
        """Remove the System V IPC objects of the sandbox's uids: they outlive processes (with the namespaces
        layer, they die with the ipc namespace)."""
        for kind, ipc_id in uids.ipc_objects(owners):
            if subprocess.run(["ipcrm", uids.IPC_KINDS[kind], ipc_id], capture_output=True).returncode:
                self.teardown_failures.append(f"could not remove System V {kind} {ipc_id}")


def doctor(mode: str = "auto") -> str:
    """Which layers are active on this machine, and why the others are not."""
    layers = detect(mode)
    probe = cgroups.memory_group(64)
    if probe is not None:
        probe.rmdir()
    memory = ("a memory cgroup per grading: what its workers hold in files counts too" if probe is not None else
              f"address space only ({cgroups.v2_refusal() or 'no memory cgroup the grader may make here'})")
    rows = [f"{'limits':<11} on   files <= {FILE_BYTES >> 20} MiB, CPU time <= the time limit, "
            f"{OPEN_FILES} open files, no core dumps; memory: {memory}"]
    for layer, on_text in [("user", f"a free uid from {uids.UID_BASE}, no groups, <= {MAX_PROCESSES} processes, "
                                    "scrubbed environment, private home"),
                           ("namespaces", "bwrap: own pid/ipc/net/uts/mount namespaces, read-only view, no network")]:
        state = "on " if layer in layers.active else "off"
        rows.append(f"{layer:<11} {state}  {on_text if layer in layers.active else layers.why_not.get(layer, '')}")
    rows += [f"{'':<16}{note}" for note in layers.notes]
    if layers.sandboxed:
        files = ("masked in its view" if "namespaces" in layers.active else
                 "unreadable to the sandbox's uid (an ACL entry per grading)" if hiding.acl_problem() is None else
                 f"READABLE to the sandbox's uid ({hiding.acl_problem()}): absent from imports and sys.modules only")
        from grader.registry import SHARED_WORLD

        shared = ", ".join(SHARED_WORLD)
        rows.append(f"{'oracles':<11} on   each problem's oracles absent from its worker (those of {shared} from "
                    f"each of them): stub modules, files {files}")
    why = kernel_filter_problem()
    rows.append(f"{'seccomp':<11} {'off' if why else 'on '}  " + (why + ": new processes, ptrace and other processes' "
                "memory are then only evidence for review (the guard)" if why else
                "the worker's kernel filter, an allowlist: no new process, no ptrace, no other process's memory, "
                "no signal, fd ownership, limit or priority but its own, no keyrings, message queues, memfd, "
                "io_uring, sockets or locks, no page-cache queries or eviction; threads allowed; the fork server "
                "as a uid of its own where the grader is root"))
    rows.append("")
    rows.append(layers.describe())
    rows.append("batch (other people's code): " + ("allowed" if layers.sandboxed else "refused without --no-sandbox"))
    return "\n".join(rows)
