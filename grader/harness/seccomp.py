"""The kernel's rules for the grading worker, its fork server and the grader's own analyses: a seccomp filter,
installed before the code under test is imported (or the submission's source read), that nothing can remove
(filters only ever add up, and no_new_privs is for life).

An allowlist. A worker is allowed, by category, the calls a CPython + torch process makes on its own behalf
(measured on the reference, the honest corpus and ordinary habits: threads, temporary files, `statistics`,
clocks, getrandom):

    memory         brk, mmap, munmap, mremap, mprotect, membarrier, mlock; madvise but MADV_COLD and MADV_PAGEOUT
    descriptors    read, write and their vector and positional forms (preadv2 and pwritev2 without RWF_NOWAIT),
                   lseek, close, dup, pipes, poll, select, epoll, eventfd, fstat, getdents, fsync, sendfile;
                   fcntl but locks, leases, dnotify, F_SETOWN_EX and F_SETOWN to any process but itself; ioctl's
                   terminal queries and close-on-exec; fadvise but DONTNEED and NOREUSE
    files          open, stat, access, readlink, getcwd, chdir, mkdir, rmdir, unlink, rename, chmod, truncate,
                   statfs, utimensat: what the kernel lets its uid do with its files
    threads        clone with CLONE_THREAD (clone3 answers ENOSYS, so that libc falls back to clone, whose flags a
                   classic filter can read), futex, rseq, robust lists, sched_yield, exit
    signals        handlers, masks, alarms and timers; kill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo to itself
    clocks         clock_gettime, clock_getres, gettimeofday, nanosleep, clock_nanosleep, times, getrusage
    itself         its ids, uname, sysinfo, getcpu, getrandom, umask, rlimits; prlimit, setpriority, affinity and
                   scheduling of itself only; prctl but PR_SET_PDEATHSIG (the sandbox asks the kernel to kill the
                   worker when the process that started it dies: grader/harness/sandbox.py), PR_SET_PTRACER, PR_SET_MM

Refused with EPERM (the call fails with PermissionError, "Operation not permitted", and the student's test fails
with that error): what reaches another process or state other gradings share,

    new processes          fork, vfork, clone without CLONE_THREAD, execve, execveat
    other processes        ptrace, process_vm_readv/writev, pidfd_*, process_madvise, kcmp, tkill, get_robust_list,
                           ioprio_set; the calls above with another pid
    kernel state that      add_key, request_key, keyctl (a uid's keyrings outlive its processes, and the session
    outlives a process     keyring is inherited), POSIX message queues, memfd_create, memfd_secret (memory no rlimit
                           counts), io_uring, userfaultfd
    the page cache         mincore, cachestat, readahead, preadv2(RWF_NOWAIT), fadvise(DONTNEED, NOREUSE),
                           madvise(COLD, PAGEOUT): every sandbox binds the same files, so their cached pages are a
                           channel between gradings (the grader also reads the sandbox's view into the cache before
                           any worker runs: grader/harness/pagecache.py)
    shared state           sockets (the network, other processes' sockets), flock and fcntl's locks, leases and
                           dnotify, inotify, fanotify, perf_event_open, bpf
    namespaces, identity   unshare, setns; setuid and every other call that changes an id or a capability

and ENOSYS to anything unlisted, as an old kernel would answer, so that libc's and CPython's fallbacks still work.
Any call of another architecture (i386's int 0x80 on x86-64) or of the x32 ABI is refused.

A fork server (grader/harness/forkserver.py) holds a filter of its own (`install(server=True)`): the worker's
categories, the rules on arguments that name no process, and what it needs to fork its workers (new processes but
no exec, waiting for them, its control socket, the kill-with-its-starter request, and the calls that give a child
the worker's uid where the grader is root). Its children inherit it and add the worker's. The grader's analyses of
a submission (grader/harness/box.py) hold a third, smaller one (`install(kind="box")`): memory, reading and writing
the descriptors they were given, signals, clocks, exit.

A thread is the same process, holding nothing the main thread does not (no oracle is in the worker:
grader/harness/absent.py). Writing to /proc/self/mem is not refused (a filter cannot read a path): the memory is
the student's own process, which ctypes reaches anyway; another process's memory needs ptrace access, which the
kernel refuses to another uid and, with no_new_privs, to everything but the worker itself.

The program is classic BPF, assembled here (`program`), for x86-64 and aarch64; elsewhere, or where the kernel has
no seccomp, `install` says why and the worker runs without it (`resource-grader doctor` reports it:
grader/harness/sandbox.py).
"""

import ctypes
import errno
import os
import platform
import struct
from dataclasses import dataclass

PR_SET_PDEATHSIG, PR_SET_MM, PR_SET_NO_NEW_PRIVS, PR_SET_PTRACER = 1, 35, 38, 0x59616D61
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_TSYNC = 1  # every thread of the process, those torch already started included
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
X32_BIT = 0x40000000
KEYCTL_GET_KEYRING_ID, KEYCTL_JOIN_SESSION_KEYRING = 0, 1
KEY_SPEC_SESSION_KEYRING = -3

# BPF opcodes: load a word of seccomp_data, compare, jump, return
LD_W_ABS, JEQ_K, JGE_K, JSET_K, JA, RET_K = 0x20, 0x15, 0x35, 0x45, 0x05, 0x06
NR, ARCH, ARG0 = 0, 4, 16  # offsets in struct seccomp_data (an argument's low 32 bits at ARG0 + 8 * index)

ALLOW, EPERM, ENOSYS = "allow", "eperm", "enosys"
RETURNS = {ALLOW: RET_ALLOW, EPERM: RET_ERRNO | errno.EPERM, ENOSYS: RET_ERRNO | errno.ENOSYS}
OWN = -1  # in a Check: the process's own pid, filled in when the filter is made

RULE = ("where it was a new process, ptrace, another process (a signal, its limits or priority), kernel state that "
        "outlives a process (keyrings, message queues, memfd), the page cache's state, a socket or a lock: the "
        "grading worker's kernel filter refuses them (grader/harness/seccomp.py); threads are allowed")


@dataclass(frozen=True)
class Check:
    """Where the low 32 bits of argument `arg` equal `value` (`test` "eq"), differ from it ("ne"), or share a bit
    with it ("any"): `action`. A rule's checks are tried in order; the first that holds decides."""

    arg: int
    value: int
    action: str
    test: str = "eq"


MEMORY = ("brk", "mmap", "munmap", "mremap", "mprotect", "membarrier", "mlock", "munlock")
DESCRIPTORS = ("read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "lseek", "close",
               "close_range", "dup", "dup2", "dup3", "pipe", "pipe2", "poll", "ppoll", "select", "pselect6",
               "epoll_create", "epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait", "epoll_pwait2", "eventfd2",
               "fstat", "fstatfs", "ftruncate", "fsync", "fdatasync", "getdents64", "sendfile", "copy_file_range",
               "fchmod", "fchdir", "fallocate")
FILES = ("open", "openat", "stat", "lstat", "newfstatat", "statx", "access", "faccessat", "faccessat2", "readlink",
         "readlinkat", "getcwd", "chdir", "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename", "renameat",
         "renameat2", "chmod", "fchmodat", "truncate", "statfs", "utimensat")
THREADS = ("set_robust_list", "rseq", "set_tid_address", "futex", "futex_waitv", "sched_yield", "exit", "exit_group",
           "arch_prctl", "gettid")
SIGNALS = ("rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigtimedwait", "rt_sigsuspend",
           "sigaltstack", "alarm", "setitimer", "getitimer", "pause", "restart_syscall")
CLOCKS = ("clock_gettime", "clock_getres", "gettimeofday", "time", "nanosleep", "clock_nanosleep", "times",
          "getrusage")
ITSELF = ("getpid", "getppid", "getuid", "geteuid", "getgid", "getegid", "getgroups", "getresuid", "getresgid",
          "getpgrp", "getpgid", "getsid", "uname", "sysinfo", "getcpu", "getrandom", "umask", "getrlimit", "setrlimit",
          "capget", "getpriority", "sched_getaffinity", "sched_getparam", "sched_getscheduler",
          "sched_get_priority_max", "sched_get_priority_min", "sched_getattr")
REFUSED = {  # EPERM, and why
    "a new process": ("fork", "vfork", "execve", "execveat"),
    "another process": ("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "pidfd_open",
                        "pidfd_send_signal", "process_madvise", "kcmp", "tkill", "get_robust_list", "ioprio_set"),
    "kernel state that outlives a process": ("add_key", "request_key", "keyctl", "mq_open", "mq_unlink",
                                             "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
                                             "memfd_create", "memfd_secret", "io_uring_setup", "io_uring_enter",
                                             "io_uring_register", "userfaultfd"),
    "the page cache": ("mincore", "cachestat", "readahead"),
    "shared state": ("socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "sendto", "recvfrom",
                     "sendmsg", "recvmsg", "sendmmsg", "recvmmsg", "shutdown", "getsockname", "getpeername",
                     "setsockopt", "getsockopt", "flock", "inotify_init", "inotify_init1", "inotify_add_watch",
                     "inotify_rm_watch", "fanotify_init", "fanotify_mark", "perf_event_open", "bpf"),
    "namespaces and identity": ("unshare", "setns", "setuid", "setgid", "setreuid", "setregid", "setresuid",
                                "setresgid", "setgroups", "setfsuid", "setfsgid", "capset"),
}
# the constants the rules read (Linux's, the same on both architectures)
CLONE_THREAD = 0x00010000
RWF_NOWAIT = 0x00000008
POSIX_FADV_DONTNEED, POSIX_FADV_NOREUSE = 4, 5
MADV_COLD, MADV_PAGEOUT = 20, 21
F_GETLK, F_SETLK, F_SETLKW, F_SETOWN, F_SETOWN_EX = 5, 6, 7, 8, 15
F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW, F_SETLEASE, F_GETLEASE, F_NOTIFY = 36, 37, 38, 1024, 1025, 1026
TERMINAL_IOCTLS = (0x5401, 0x5413, 0x541B, 0x5421, 0x5450, 0x5451)  # TCGETS, TIOCGWINSZ, FIONREAD, FIONBIO, FIONCLEX,
# FIOCLEX (the owner-setting FIOSETOWN and SIOCSPGRP, and everything else, refused)
PRIO_PROCESS = 0


def worker_rules() -> dict[str, tuple[tuple[Check, ...], str]]:
    """System call -> (its checks, what it gets where none holds), for the calls whose arguments decide."""
    locks = (F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW, F_SETLEASE, F_GETLEASE, F_NOTIFY,
             F_SETOWN_EX)
    return {
        "clone": ((Check(0, CLONE_THREAD, ALLOW, "any"),), EPERM),
        "clone3": ((), ENOSYS),
        "madvise": ((Check(2, MADV_COLD, EPERM), Check(2, MADV_PAGEOUT, EPERM)), ALLOW),
        "fadvise64": ((Check(3, POSIX_FADV_DONTNEED, EPERM), Check(3, POSIX_FADV_NOREUSE, EPERM)), ALLOW),
        "preadv2": ((Check(5, RWF_NOWAIT, EPERM, "any"),), ALLOW),
        "pwritev2": ((Check(5, RWF_NOWAIT, EPERM, "any"),), ALLOW),
        "fcntl": (tuple(Check(1, cmd, EPERM) for cmd in locks) + (Check(1, F_SETOWN, ALLOW, "ne"),
                                                                  Check(2, OWN, ALLOW), Check(2, 0, ALLOW)), EPERM),
        "ioctl": (tuple(Check(1, cmd, ALLOW) for cmd in TERMINAL_IOCTLS), EPERM),
        "prctl": ((Check(0, PR_SET_PDEATHSIG, EPERM), Check(0, PR_SET_PTRACER, EPERM), Check(0, PR_SET_MM, EPERM)),
                  ALLOW),
        "kill": ((Check(0, OWN, ALLOW),), EPERM),
        "tgkill": ((Check(0, OWN, ALLOW),), EPERM),
        "rt_sigqueueinfo": ((Check(0, OWN, ALLOW),), EPERM),
        "rt_tgsigqueueinfo": ((Check(0, OWN, ALLOW),), EPERM),
        "prlimit64": ((Check(0, 0, ALLOW), Check(0, OWN, ALLOW)), EPERM),
        "setpriority": ((Check(0, PRIO_PROCESS, EPERM, "ne"), Check(1, 0, ALLOW), Check(1, OWN, ALLOW)), EPERM),
        **{name: ((Check(0, 0, ALLOW), Check(0, OWN, ALLOW)), EPERM)
           for name in ("sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr")},
    }


SERVER_NEEDS = ("fork", "vfork", "wait4", "waitid", "setsid", "sendmsg", "recvmsg", "sendto", "recvfrom",
                "setresuid", "setresgid", "setgroups", "capset", "seccomp")  # to fork a worker and give it the
# worker's uid and filter
BOX = (*MEMORY, "read", "write", "readv", "writev", "lseek", "close", "fstat", "newfstatat", "futex", "exit",
       "exit_group", "gettid", "getpid", "getrandom", "sched_yield", "getrlimit", *SIGNALS, *CLOCKS)


def policy(kind: str) -> dict[str, tuple[tuple[Check, ...], str]]:
    """System call -> (checks, otherwise) for a filter of `kind`: "worker", "server" (a fork server) or "box" (the
    grader's analyses). Anything not named answers ENOSYS."""
    if kind == "box":
        return {name: ((), ALLOW) for name in BOX}
    rules: dict[str, tuple[tuple[Check, ...], str]] = {}
    for names in REFUSED.values():
        rules.update({name: ((), EPERM) for name in names})
    for names in (MEMORY, DESCRIPTORS, FILES, THREADS, SIGNALS, CLOCKS, ITSELF):
        rules.update({name: ((), ALLOW) for name in names})
    rules.update(worker_rules())
    if kind == "server":  # its children's own filter decides what names a process; the server runs no student code
        for name, (checks, _) in list(rules.items()):
            if any(c.value == OWN for c in checks) or name in ("clone", "prctl"):
                rules[name] = ((), ALLOW)
        rules.update({name: ((), ALLOW) for name in SERVER_NEEDS})
    return rules


ARCHITECTURES = {  # machine -> (AUDIT_ARCH_*, the seccomp syscall, the syscall numbers)
    "x86_64": (0xC000003E, 317, {
        "read": 0, "write": 1, "open": 2, "close": 3, "stat": 4, "fstat": 5, "lstat": 6, "poll": 7, "lseek": 8,
        "mmap": 9, "mprotect": 10, "munmap": 11, "brk": 12, "rt_sigaction": 13, "rt_sigprocmask": 14,
        "rt_sigreturn": 15, "ioctl": 16, "pread64": 17, "pwrite64": 18, "readv": 19, "writev": 20, "access": 21,
        "pipe": 22, "select": 23, "sched_yield": 24, "mremap": 25, "mincore": 27, "madvise": 28, "dup": 32, "dup2": 33,
        "pause": 34, "nanosleep": 35, "getitimer": 36, "alarm": 37, "setitimer": 38, "getpid": 39, "sendfile": 40,
        "socket": 41, "connect": 42, "accept": 43, "sendto": 44, "recvfrom": 45, "sendmsg": 46, "recvmsg": 47,
        "shutdown": 48, "bind": 49, "listen": 50, "getsockname": 51, "getpeername": 52, "socketpair": 53,
        "setsockopt": 54, "getsockopt": 55, "clone": 56, "fork": 57, "vfork": 58, "execve": 59, "exit": 60,
        "wait4": 61, "kill": 62, "uname": 63, "fcntl": 72, "flock": 73, "fsync": 74, "fdatasync": 75, "truncate": 76,
        "ftruncate": 77, "getcwd": 79, "chdir": 80, "fchdir": 81, "rename": 82, "mkdir": 83, "rmdir": 84, "unlink": 87,
        "readlink": 89, "chmod": 90, "fchmod": 91, "umask": 95, "gettimeofday": 96, "getrlimit": 97, "getrusage": 98,
        "sysinfo": 99, "times": 100, "ptrace": 101, "getuid": 102, "getgid": 104, "setuid": 105, "setgid": 106,
        "geteuid": 107, "getegid": 108, "getppid": 110, "getpgrp": 111, "setsid": 112, "setreuid": 113,
        "setregid": 114, "getgroups": 115, "setgroups": 116, "setresuid": 117, "getresuid": 118, "setresgid": 119,
        "getresgid": 120, "getpgid": 121, "setfsuid": 122, "setfsgid": 123, "getsid": 124, "capget": 125,
        "capset": 126, "rt_sigpending": 127, "rt_sigtimedwait": 128, "rt_sigqueueinfo": 129, "rt_sigsuspend": 130,
        "sigaltstack": 131, "statfs": 137, "fstatfs": 138, "getpriority": 140, "setpriority": 141,
        "sched_setparam": 142, "sched_getparam": 143, "sched_setscheduler": 144, "sched_getscheduler": 145,
        "sched_get_priority_max": 146, "sched_get_priority_min": 147, "mlock": 149, "munlock": 150, "prctl": 157,
        "arch_prctl": 158, "setrlimit": 160, "gettid": 186, "readahead": 187, "tkill": 200, "time": 201, "futex": 202,
        "sched_setaffinity": 203, "sched_getaffinity": 204, "epoll_create": 213, "getdents64": 217,
        "set_tid_address": 218, "restart_syscall": 219, "fadvise64": 221, "clock_gettime": 228, "clock_getres": 229,
        "clock_nanosleep": 230, "exit_group": 231, "epoll_wait": 232, "epoll_ctl": 233, "tgkill": 234, "mq_open": 240,
        "mq_unlink": 241, "mq_timedsend": 242, "mq_timedreceive": 243, "mq_notify": 244, "mq_getsetattr": 245,
        "waitid": 247, "add_key": 248, "request_key": 249, "keyctl": 250, "ioprio_set": 251, "inotify_init": 253,
        "inotify_add_watch": 254, "inotify_rm_watch": 255, "openat": 257, "mkdirat": 258, "newfstatat": 262,
        "unlinkat": 263, "renameat": 264, "readlinkat": 267, "fchmodat": 268, "faccessat": 269, "pselect6": 270,
        "ppoll": 271, "unshare": 272, "set_robust_list": 273, "get_robust_list": 274, "utimensat": 280,
        "epoll_pwait": 281, "fallocate": 285, "accept4": 288, "eventfd2": 290, "epoll_create1": 291, "dup3": 292,
        "pipe2": 293, "inotify_init1": 294, "preadv": 295, "pwritev": 296, "rt_tgsigqueueinfo": 297,
        "perf_event_open": 298, "recvmmsg": 299, "fanotify_init": 300, "fanotify_mark": 301, "prlimit64": 302,
        "sendmmsg": 307, "setns": 308, "getcpu": 309, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312,
        "sched_setattr": 314, "sched_getattr": 315, "renameat2": 316, "seccomp": 317, "getrandom": 318,
        "memfd_create": 319, "bpf": 321, "execveat": 322, "userfaultfd": 323, "membarrier": 324,
        "copy_file_range": 326, "preadv2": 327, "pwritev2": 328, "statx": 332, "rseq": 334, "pidfd_send_signal": 424,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "pidfd_open": 434, "clone3": 435,
        "close_range": 436, "pidfd_getfd": 438, "faccessat2": 439, "process_madvise": 440, "epoll_pwait2": 441,
        "memfd_secret": 447, "futex_waitv": 449, "cachestat": 451}),
    "aarch64": (0xC00000B7, 277, {
        "getcwd": 17, "eventfd2": 19, "epoll_create1": 20, "epoll_ctl": 21, "epoll_pwait": 22, "dup": 23, "dup3": 24,
        "fcntl": 25, "inotify_init1": 26, "inotify_add_watch": 27, "inotify_rm_watch": 28, "ioctl": 29,
        "ioprio_set": 30, "flock": 32, "mkdirat": 34, "unlinkat": 35, "renameat": 38, "statfs": 43, "fstatfs": 44,
        "truncate": 45, "ftruncate": 46, "fallocate": 47, "faccessat": 48, "chdir": 49, "fchdir": 50, "fchmod": 52,
        "fchmodat": 53, "openat": 56, "close": 57, "pipe2": 59, "getdents64": 61, "lseek": 62, "read": 63, "write": 64,
        "readv": 65, "writev": 66, "pread64": 67, "pwrite64": 68, "preadv": 69, "pwritev": 70, "sendfile": 71,
        "pselect6": 72, "ppoll": 73, "readlinkat": 78, "newfstatat": 79, "fstat": 80, "fsync": 82, "fdatasync": 83,
        "utimensat": 88, "capget": 90, "capset": 91, "exit": 93, "exit_group": 94, "waitid": 95, "set_tid_address": 96,
        "unshare": 97, "futex": 98, "set_robust_list": 99, "get_robust_list": 100, "nanosleep": 101, "getitimer": 102,
        "setitimer": 103, "clock_gettime": 113, "clock_getres": 114, "clock_nanosleep": 115, "ptrace": 117,
        "sched_setparam": 118, "sched_setscheduler": 119, "sched_getscheduler": 120, "sched_getparam": 121,
        "sched_setaffinity": 122, "sched_getaffinity": 123, "sched_yield": 124, "sched_get_priority_max": 125,
        "sched_get_priority_min": 126, "restart_syscall": 128, "kill": 129, "tkill": 130, "tgkill": 131,
        "sigaltstack": 132, "rt_sigsuspend": 133, "rt_sigaction": 134, "rt_sigprocmask": 135, "rt_sigpending": 136,
        "rt_sigtimedwait": 137, "rt_sigqueueinfo": 138, "rt_sigreturn": 139, "setpriority": 140, "getpriority": 141,
        "setregid": 143, "setgid": 144, "setreuid": 145, "setuid": 146, "setresuid": 147, "getresuid": 148,
        "setresgid": 149, "getresgid": 150, "setfsuid": 151, "setfsgid": 152, "times": 153, "setpgid": 154,
        "getpgid": 155, "getsid": 156, "setsid": 157, "getgroups": 158, "setgroups": 159, "uname": 160,
        "getrlimit": 163, "setrlimit": 164, "getrusage": 165, "umask": 166, "prctl": 167, "getcpu": 168,
        "gettimeofday": 169, "getpid": 172, "getppid": 173, "getuid": 174, "geteuid": 175, "getgid": 176,
        "getegid": 177, "gettid": 178, "sysinfo": 179, "mq_open": 180, "mq_unlink": 181, "mq_timedsend": 182,
        "mq_timedreceive": 183, "mq_notify": 184, "mq_getsetattr": 185, "socket": 198, "socketpair": 199, "bind": 200,
        "listen": 201, "accept": 202, "connect": 203, "getsockname": 204, "getpeername": 205, "sendto": 206,
        "recvfrom": 207, "setsockopt": 208, "getsockopt": 209, "shutdown": 210, "sendmsg": 211, "recvmsg": 212,
        "readahead": 213, "brk": 214, "munmap": 215, "mremap": 216, "add_key": 217, "request_key": 218, "keyctl": 219,
        "clone": 220, "execve": 221, "mmap": 222, "fadvise64": 223, "mprotect": 226, "mlock": 228, "munlock": 229,
        "mincore": 232, "madvise": 233, "rt_tgsigqueueinfo": 240, "perf_event_open": 241, "accept4": 242,
        "recvmmsg": 243, "wait4": 260, "prlimit64": 261, "fanotify_init": 262, "fanotify_mark": 263, "setns": 268,
        "sendmmsg": 269, "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272, "sched_setattr": 274,
        "sched_getattr": 275, "renameat2": 276, "seccomp": 277, "getrandom": 278, "memfd_create": 279, "bpf": 280,
        "execveat": 281, "userfaultfd": 282, "membarrier": 283, "copy_file_range": 285, "preadv2": 286,
        "pwritev2": 287, "statx": 291, "rseq": 293, "pidfd_send_signal": 424, "io_uring_setup": 425,
        "io_uring_enter": 426, "io_uring_register": 427, "pidfd_open": 434, "clone3": 435, "close_range": 436,
        "pidfd_getfd": 438, "faccessat2": 439, "process_madvise": 440, "epoll_pwait2": 441, "memfd_secret": 447,
        "futex_waitv": 449, "cachestat": 451}),
}


def number(name: str) -> int | None:
    """The number of system call `name` on this machine, where a filter is written for it."""
    return ARCHITECTURES.get(platform.machine(), (0, 0, {}))[2].get(name)


def program(machine: str, pid: int | None = None, kind: str | None = None) -> list[tuple[int, int, int, int]]:
    """The filter for `machine` as (code, jt, jf, k) instructions: a worker's whose calls that name a process may
    name its own `pid` alone, or (`pid` None) a fork server's, or `kind`'s ("box": the grader's analyses)."""
    arch, _, numbers = ARCHITECTURES[machine]
    kind = kind or ("server" if pid is None else "worker")
    rules = {numbers[name]: rule for name, rule in policy(kind).items() if name in numbers}
    body: list[tuple] = [(LD_W_ABS, 0, 0, ARCH), (JEQ_K, 1, 0, arch), (JA, 0, 0, EPERM), (LD_W_ABS, 0, 0, NR)]
    if machine == "x86_64":
        body += [(JGE_K, 0, 1, X32_BIT), (JA, 0, 0, EPERM)]
    tails: list[tuple] = []  # each rule's checks, after the dispatch on the number, reached by a long jump
    labels: dict[str, int] = {}
    for nr, (checks, otherwise) in sorted(rules.items()):
        if not checks:
            body += [(JEQ_K, 0, 1, nr), (JA, 0, 0, otherwise)]
            continue
        label = f"rule{nr}"
        body += [(JEQ_K, 0, 1, nr), (JA, 0, 0, label)]
        tails.append(("label", label))
        for check in checks:
            value = (pid or 0) if check.value == OWN else check.value
            tails.append((LD_W_ABS, 0, 0, ARG0 + 8 * check.arg))
            if check.test == "any":
                tails += [(JSET_K, 0, 1, value & 0xFFFFFFFF), (JA, 0, 0, check.action)]
            elif check.test == "ne":
                tails += [(JEQ_K, 1, 0, value & 0xFFFFFFFF), (JA, 0, 0, check.action)]
            else:
                tails += [(JEQ_K, 0, 1, value & 0xFFFFFFFF), (JA, 0, 0, check.action)]
        tails.append((JA, 0, 0, otherwise))
    body.append((JA, 0, 0, ENOSYS))
    out: list[tuple] = []
    for instruction in body + tails:
        if instruction[0] == "label":
            labels[instruction[1]] = len(out)
        else:
            out.append(instruction)
    for action in (ALLOW, EPERM, ENOSYS):
        labels[action] = len(out)
        out.append((RET_K, 0, 0, RETURNS[action]))

    def offset(target, i, short):
        if isinstance(target, int):
            return target
        jump = labels[target] - i - 1
        if short and not 0 <= jump < 256:
            raise ValueError(f"a conditional jump of {jump} in the filter: make it a long one")
        return jump

    assembled = []
    for i, (code, jt, jf, k) in enumerate(out):
        if code == JA:
            assembled.append((JA, 0, 0, offset(k, i, short=False)))
        else:
            assembled.append((code, offset(jt, i, short=True), offset(jf, i, short=True), k))
    return assembled


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


def install(server: bool = False, kind: str | None = None) -> str | None:
    """Put the worker's filter (a fork server's with `server`; `kind` "box": the grader's analyses') on this
    process and all its threads, for good. Returns None, or why it could not."""
    why = unsupported()
    if why:
        return why
    _, seccomp_nr, _ = ARCHITECTURES[platform.machine()]
    kind = kind or ("server" if server else "worker")
    rules = program(platform.machine(), None if kind == "server" else os.getpid(), kind)
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
    """In a child process: install the filter, then check that a fork, a keyring and a page-cache query are refused
    and a thread is not. None where all of that holds, else what did not (for `resource-grader doctor`)."""
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
            found = libc.syscall(ctypes.c_long(number("mincore")), None, 0, None)
            if why is None and (found != -1 or ctypes.get_errno() != errno.EPERM):
                why = "a page-cache query (mincore) was not refused"
        os.write(write, (why or "").encode())
        os._exit(0)
    os.close(write)
    answer = os.read(read, 4096).decode()
    os.close(read)
    os.waitpid(child, 0)
    return answer or None


if __name__ == "__main__":
    print(selftest() or "ok")
