"""The kernel's rules for the grading worker: a seccomp filter, installed before the code under test is
imported, that the code cannot remove (filters only ever add up, and no_new_privs is for life).

Refused with EPERM (the call fails with PermissionError, "Operation not permitted", and the student's test
fails with that error), for the worker and every thread it has or starts:

    new processes          fork, vfork, clone without CLONE_THREAD, execve, execveat
    other processes        ptrace, process_vm_readv, process_vm_writev, pidfd_getfd, process_madvise
    signals                kill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo but to the worker itself; tkill,
                           pidfd_open, pidfd_send_signal (the fork server and the other workers of the grading
                           run as the same uid, which the kernel lets signal each other)
    kernel state that      add_key, request_key, keyctl (a uid's keyrings outlive its processes, and the session
    outlives a process     keyring is inherited), mq_open, mq_unlink (POSIX message queues live on in the ipc
                           namespace), memfd_create, memfd_secret (memory that no rlimit of the worker counts),
                           io_uring_setup, io_uring_enter, io_uring_register, userfaultfd (no solution needs
                           them; each is a kernel interface of its own to audit)
    new namespaces         unshare, setns
    outliving the grader   prctl(PR_SET_PDEATHSIG): the sandbox asks the kernel to kill the worker when the
                           process that started it dies (grader/harness/sandbox.py), and that request stays
    foreign system calls   any call of another architecture (i386's int 0x80 on x86-64) or of the x32 ABI

A fork server (grader/harness/forkserver.py) holds the filter too, less what it needs to fork its workers (new
processes, signals, the kill-with-its-starter request of each child): `install(server=True)`. Its children
inherit that filter and add the worker's.

clone3 answers ENOSYS, so that libc falls back to clone, whose flags a classic filter can read (clone3
passes them in memory it cannot). Threads are allowed: torch's intra-op threads and an honest thread pool
need them, and a thread is the same process, holding nothing the main thread does not (no oracle is in the
worker: grader/harness/absent.py). Writing to /proc/self/mem is not refused (a filter cannot read a path): the
memory is the student's own process, which ctypes reaches anyway; another process's memory needs ptrace
access, which the kernel refuses to another uid and, with no_new_privs, to everything but the worker itself.

The program is classic BPF, assembled here (`program`), for x86-64 and aarch64; elsewhere, or where the
kernel has no seccomp, `install` says why and the worker runs without it (`resource-grader doctor` reports
it: grader/harness/sandbox.py).
"""

import ctypes
import errno
import os
import platform
import struct

PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_TSYNC = 1  # every thread of the process, those torch already started included
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
CLONE_THREAD = 0x00010000
X32_BIT = 0x40000000
KEYCTL_GET_KEYRING_ID, KEYCTL_JOIN_SESSION_KEYRING = 0, 1
KEY_SPEC_SESSION_KEYRING = -3

# BPF opcodes: load a word of seccomp_data, compare, return
LD_W_ABS, JEQ_K, JGE_K, JSET_K, RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
NR, ARCH, ARG0 = 0, 4, 16  # offsets in struct seccomp_data (ARG0: the low 32 bits of the first argument)

RULE = ("where it was a new process, ptrace, another process's memory, a signal to another process or kernel "
        "state that outlives a process (keyrings, message queues, memfd): the grading worker's kernel filter "
        "refuses them (grader/harness/seccomp.py); threads are allowed")
SHARED = ("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "process_madvise", "unshare", "setns",
          "add_key", "request_key", "keyctl", "mq_open", "mq_unlink", "memfd_create", "memfd_secret",
          "io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd", "tkill", "pidfd_open",
          "pidfd_send_signal")  # refused to the fork server and to every worker
PROCESSES = ("fork", "vfork", "execve", "execveat")  # and clone without CLONE_THREAD: the worker's alone
SIGNALS = ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")  # the worker's: to its own pid only
REFUSED = SHARED + PROCESSES
ARCHITECTURES = {  # machine -> (AUDIT_ARCH_*, the seccomp syscall, the syscall numbers)
    "x86_64": (0xC000003E, 317, {"clone": 56, "fork": 57, "vfork": 58, "execve": 59, "kill": 62, "ptrace": 101,
                                 "rt_sigqueueinfo": 129, "prctl": 157, "tkill": 200, "tgkill": 234, "mq_open": 240,
                                 "mq_unlink": 241, "add_key": 248, "request_key": 249, "keyctl": 250,
                                 "unshare": 272, "rt_tgsigqueueinfo": 297, "setns": 308, "process_vm_readv": 310,
                                 "process_vm_writev": 311, "memfd_create": 319, "execveat": 322, "userfaultfd": 323,
                                 "pidfd_send_signal": 424, "io_uring_setup": 425, "io_uring_enter": 426,
                                 "io_uring_register": 427, "pidfd_open": 434, "clone3": 435, "pidfd_getfd": 438,
                                 "process_madvise": 440, "memfd_secret": 447}),
    "aarch64": (0xC00000B7, 277, {"unshare": 97, "ptrace": 117, "kill": 129, "tkill": 130, "tgkill": 131,
                                  "rt_sigqueueinfo": 138, "prctl": 167, "mq_open": 180, "mq_unlink": 181,
                                  "add_key": 217, "request_key": 218, "keyctl": 219, "clone": 220, "execve": 221,
                                  "rt_tgsigqueueinfo": 240, "setns": 268, "process_vm_readv": 270,
                                  "process_vm_writev": 271, "memfd_create": 279, "execveat": 281, "userfaultfd": 282,
                                  "pidfd_send_signal": 424, "io_uring_setup": 425, "io_uring_enter": 426,
                                  "io_uring_register": 427, "pidfd_open": 434, "clone3": 435, "pidfd_getfd": 438,
                                  "process_madvise": 440, "memfd_secret": 447}),
}


def number(name: str) -> int | None:
    """The number of system call `name` on this machine, where a filter is written for it."""
    return ARCHITECTURES.get(platform.machine(), (0, 0, {}))[2].get(name)


def program(machine: str, pid: int | None = None) -> list[tuple[int, int, int, int]]:
    """The filter for `machine` as (code, jt, jf, k) instructions: a worker's, whose signals may reach its own
    `pid` alone, or (`pid` None) a fork server's, SHARED alone."""
    arch, _, numbers = ARCHITECTURES[machine]
    worker = pid is not None
    refused = [numbers[name] for name in (REFUSED if worker else SHARED) if name in numbers]
    body: list[tuple] = [(LD_W_ABS, 0, 0, ARCH), (JEQ_K, 0, "eperm", arch), (LD_W_ABS, 0, 0, NR)]
    if machine == "x86_64":
        body.append((JGE_K, "eperm", 0, X32_BIT))
    body += [(JEQ_K, "eperm", 0, nr) for nr in refused]
    if worker:
        body += [(JEQ_K, "signal", 0, numbers[name]) for name in SIGNALS]
        body += [(JEQ_K, "enosys", 0, numbers["clone3"]), (JEQ_K, "clone", 0, numbers["clone"]),
                 (JEQ_K, "prctl", 0, numbers["prctl"])]
    body.append((RET_K, 0, 0, RET_ALLOW))
    labels = {"clone": len(body)}
    body += [(LD_W_ABS, 0, 0, ARG0), (JSET_K, "allow", "eperm", CLONE_THREAD)]
    labels["prctl"] = len(body)
    body += [(LD_W_ABS, 0, 0, ARG0), (JEQ_K, "eperm", "allow", PR_SET_PDEATHSIG)]
    labels["signal"] = len(body)
    body += [(LD_W_ABS, 0, 0, ARG0), (JEQ_K, "allow", "eperm", pid or 0)]
    labels.update(allow=len(body), eperm=len(body) + 1, enosys=len(body) + 2)
    body += [(RET_K, 0, 0, RET_ALLOW), (RET_K, 0, 0, RET_ERRNO | errno.EPERM), (RET_K, 0, 0, RET_ERRNO | errno.ENOSYS)]

    def offset(target, i):  # jumps are relative to the next instruction
        return target if isinstance(target, int) else labels[target] - i - 1

    return [(code, offset(jt, i), offset(jf, i), k) for i, (code, jt, jf, k) in enumerate(body)]


def unsupported() -> str | None:
    """Why the filter cannot go on here, or None (checked without installing it)."""
    if platform.system() != "Linux":
        return f"seccomp is Linux's ({platform.system()} here)"
    if platform.machine() not in ARCHITECTURES:
        return f"no filter written for {platform.machine()} (only {', '.join(ARCHITECTURES)})"
    try:
        status = open("/proc/self/status").read()
    except OSError:
        return "/proc/self/status is not readable"
    if "Seccomp:" not in status:
        return "this kernel has no seccomp (CONFIG_SECCOMP)"
    return None


def install(server: bool = False) -> str | None:
    """Put the worker's filter (a fork server's with `server`) on this process and all its threads, for good.
    Returns None, or why it could not."""
    why = unsupported()
    if why:
        return why
    _, seccomp_nr, _ = ARCHITECTURES[platform.machine()]
    rules = program(platform.machine(), None if server else os.getpid())
    code = b"".join(struct.pack("HBBI", *instruction) for instruction in rules)
    filters = ctypes.create_string_buffer(code, len(code))
    fprog = struct.pack("HxxxxxxP", len(code) // 8, ctypes.addressof(filters))
    fprog_buffer = ctypes.create_string_buffer(fprog, len(fprog))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"prctl(PR_SET_NO_NEW_PRIVS) failed: {os.strerror(ctypes.get_errno())}"
    result = libc.syscall(ctypes.c_long(seccomp_nr), ctypes.c_ulong(SECCOMP_SET_MODE_FILTER),
                          ctypes.c_ulong(SECCOMP_FILTER_FLAG_TSYNC), fprog_buffer)
    if result != 0:
        return (f"seccomp(SECCOMP_SET_MODE_FILTER) failed: {os.strerror(ctypes.get_errno())}" if result < 0
                else f"thread {result} could not take the filter")
    return None


def fresh_session_keyring() -> None:
    """Leave the session keyring this process inherited (the grader's: its keys are reachable to every process
    that possesses it, whatever its uid) for a new one of its own, gone with the last process that holds it.
    Called before the filter, which then refuses every keyring call; where there is no filter, the keyrings of
    the sandbox's uid are cleared at each teardown (grader/harness/sandbox.py `clear_keyrings`)."""
    if number("keyctl") is not None:
        ctypes.CDLL(None).syscall(ctypes.c_long(number("keyctl")), KEYCTL_JOIN_SESSION_KEYRING, None)


def selftest() -> str | None:
    """In a child process: install the filter, then check that a fork and a keyring are refused and a thread is
    not. None where all of that holds, else what did not (for `resource-grader doctor`)."""
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read)
        why = install()
        if why is None:
            import threading

            try:
                pid = os.fork()
                if pid == 0:
                    os._exit(0)
                why = "a fork was not refused"
            except PermissionError:
                ran = []
                thread = threading.Thread(target=ran.append, args=(1,))
                thread.start()
                thread.join()
                why = None if ran else "a thread did not run"
            libc = ctypes.CDLL(None, use_errno=True)
            found = libc.syscall(ctypes.c_long(number("keyctl")), KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0)
            if why is None and (found != -1 or ctypes.get_errno() != errno.EPERM):
                why = "a keyring call was not refused"
        os.write(write, (why or "").encode())
        os._exit(0)
    os.close(write)
    answer = os.read(read, 4096).decode()
    os.close(read)
    os.waitpid(child, 0)
    return answer or None


if __name__ == "__main__":
    print(selftest() or "ok")
