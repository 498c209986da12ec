"""The user layer's uids (grader/harness/sandbox.py, layer 2): a uid of its own per grading, never shared and never
reused while anything of its last grading could remain, and what a uid leaves behind cleared: its processes, its
files in the folders every user may write to, its System V IPC objects, its keyrings.
"""

import contextlib
import fcntl
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

UID_BASE = int(os.environ.get("RA_SANDBOX_UID_BASE", "2000000"))  # gradings run as the lowest free uid from here


UID_LOCKS = Path("/run/ra-sandbox") if os.access("/run", os.W_OK) else Path(tempfile.gettempdir(), "ra-sandbox-locks")


UID_TOKEN_PREFIX = "resource-accounting/sandbox-uid/"  # + uid: the abstract socket that holds a uid


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


KEYCTL_GET_KEYRING_ID, KEYCTL_INVALIDATE = 0, 21
KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING = -4, -5


def key_users() -> dict[int, int]:
    """uid -> how many keys (keyrings included) the kernel holds for it (/proc/key-users)."""
    found = {}
    try:
        for line in Path("/proc/key-users").read_text().splitlines():
            uid, _, rest = line.partition(":")
            found[int(uid)] = int(rest.split()[1].split("/")[0])
    except (OSError, ValueError, IndexError):
        pass
    return found


def clear_keyrings(uid: int) -> str | None:
    """Invalidate the keyrings of `uid` that outlive its processes (its user and user-session keyrings: the kernel
    keeps them for the uid, and a later grading may run as it), from a child that takes the uid (the keyring calls
    act on the caller's own): the kernel's collector then removes them, keys and all, and the uid keeps nothing. A
    uid without keys is left alone: looking its keyrings up would create them. Refused to the worker by its filter
    (grader/harness/seccomp.py); this clears what a worker without one, or the kernel itself, left. None, or what
    went wrong."""
    import ctypes

    from grader.harness import seccomp

    if seccomp.number("keyctl") is None or not key_users().get(uid):
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
            # both serials first: looking either up again would make the other anew
            serials = [libc.syscall(keyctl, KEYCTL_GET_KEYRING_ID, spec, 0)
                       for spec in (KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING)]
            for serial in serials:
                if serial <= 0 or libc.syscall(keyctl, KEYCTL_INVALIDATE, serial) != 0:
                    code = 2
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    return None if status == 0 else f"could not clear the keyrings of uid {uid} (status {status})"


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
