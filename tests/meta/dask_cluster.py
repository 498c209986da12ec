"""A real Dask cluster on 127.0.0.1 for the meta-tests and the benchmark: `dask scheduler` and `dask worker`
processes (each `--nworkers 1 --nthreads 1`, under a nanny, as a cluster runs them), stopped with everything
they started.

Every process is started in a session of its own and stopped by its process group; a grading whose worker was
killed leaves its test process running (it is in a session of its own, grader/runner.py), so the workers get
a TMPDIR of their own (in /tmp: a sandbox's user must be able to cross the folders above its own) and `stop`
also kills every process whose current folder is in it, unmounts what a killed grading left mounted in it
(its home's tmpfs), then removes it.
"""

import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.meta.processes import stop_group
from tests.meta.suite import ROOT, grader_env

DASK = str(Path(sys.executable).with_name("dask"))
LOOPBACK = "127.0.0.1:0"  # the HTTP servers' address: loopback, any free port


class DaskCluster:
    """`with DaskCluster(tmp) as c: c.add_worker(); ... c.address`. `allowed_failures`: the scheduler's
    distributed.scheduler.allowed-failures (how often a task is given to another worker after its worker died).
    `hosts` (tests/meta/hosts.py): the scheduler on the host named "scheduler" and each worker on the host of its
    name, each listening on its host's address, instead of all on 127.0.0.1. `tls`: Dask's TLS settings as
    environment variables (DASK_DISTRIBUTED__COMM__...), given to every process of the cluster and to this one's
    client: the scheduler then listens on tls:// alone."""

    def __init__(self, folder: Path, allowed_failures: int = 2, hosts=None, tls: dict[str, str] | None = None):
        self.folder, self.hosts = folder, hosts
        folder.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix="ra-dask-"))
        os.chmod(self.tmp, 0o711)  # gradings' folders sit in it: others may cross, not list
        self.processes: list[subprocess.Popen] = []
        self.env = {**grader_env(), "TMPDIR": str(self.tmp),
                    "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": str(allowed_failures), **(tls or {})}
        self.tls = tls or {}
        self.address = ""

    def _start(self, argv: list[str], log: str, env: dict, cwd: Path = ROOT, host: str = "") -> subprocess.Popen:
        if self.hosts is not None:
            argv, env = self.hosts.run(host, argv), {**env, "RA_HIDDEN": self.hosts.hidden_from(host)}
        with open(self.folder / log, "ab") as out:
            process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        self.processes.append(process)
        return process

    def __enter__(self) -> "DaskCluster":
        scheduler_file = self.folder / "scheduler.json"
        # --no-dashboard still serves HTTP on 0.0.0.0:8787 (distributed 2026.8); an address keeps it on loopback
        protocol = ["--protocol", "tls"] if self.tls else []
        self._start([DASK, "scheduler", *protocol, "--host", self._address("scheduler"), "--port", "0",
                     "--dashboard-address", LOOPBACK, "--scheduler-file", str(scheduler_file)], "scheduler.log",
                    self.env, host="scheduler")
        deadline = time.monotonic() + 120
        while not scheduler_file.exists() or not scheduler_file.read_text().strip():
            if time.monotonic() > deadline or self.processes[0].poll() is not None:
                self.stop()
                raise RuntimeError("the scheduler did not start: " + (self.folder / "scheduler.log").read_text())
            time.sleep(0.2)
        self.address = json.loads(scheduler_file.read_text())["address"]
        return self

    def add_worker(self, name: str, *, tree: Path | None = None, command: list[str] | None = None,
                   uid: int | None = None, env: dict | None = None) -> subprocess.Popen:
        """A worker (its nanny's process); `tree`: a copy of the official tree it imports the grader from;
        `command`: what starts `dask worker` (default: this installation's `dask`), which runs as `uid` (default:
        this process's) with a temporary folder of that user's, in the cluster's; `env`: what else changes in its
        environment (a variable None: removed)."""
        changed = {**self.env, **({"PYTHONPATH": str(tree)} if tree is not None else {})}
        if uid is not None:
            own = self.tmp / f"user-{uid}"
            own.mkdir(mode=0o700, exist_ok=True)
            os.chown(own, uid, -1)
            changed.update(TMPDIR=str(own), HOME=str(own))
        changed.update(env or {})
        return self._start([*(command or [DASK]), "worker", self.address, "--nworkers", "1", "--nthreads", "1",
                            "--host", self._address(name), "--dashboard-address", LOOPBACK, "--name", name],
                           f"{name}.log", {k: v for k, v in changed.items() if v is not None}, tree or ROOT, host=name)

    def _address(self, host: str) -> str:
        return "127.0.0.1" if self.hosts is None else self.hosts.address(host)

    def wait_for_workers(self, n: int, timeout: float = 180) -> None:
        from distributed import Client
        from distributed.security import Security

        security = Security(require_encryption=True, tls_ca_file=self.tls["DASK_DISTRIBUTED__COMM__TLS__CA_FILE"],
                            tls_client_cert=self.tls["DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT"],
                            tls_client_key=self.tls["DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY"]) if self.tls else None
        with Client(self.address, timeout=60, security=security) as client:
            client.wait_for_workers(n, timeout=timeout)

    def logs(self) -> str:
        return "\n".join(f"== {p.name}\n{p.read_text()[-3000:]}" for p in sorted(self.folder.glob("*.log")))

    def stop(self) -> None:
        """Each process group asked to stop first (processes.stop_group): a nanny then ends its worker, and the
        resource tracker they share unlinks the worker's semaphores (killed outright, it left six `sem.mp-*` in
        /dev/shm per worker); then everything of the cluster killed."""
        for process in reversed(self.processes):  # the workers before the scheduler they would reconnect to
            stop_group(process.pid)
        for process in self.processes:
            process.wait(timeout=30)
        for pid in processes_in(self.tmp):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for mount in mounts_in(self.tmp):  # a killed grading's home (a tmpfs the sandbox never unmounted)
            subprocess.run(["umount", "--lazy", mount], check=False, capture_output=True)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __exit__(self, *exc) -> None:
        self.stop()


def processes_in(folder: Path) -> list[int]:
    """Processes whose current folder is inside `folder`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cwd = Path(os.readlink(entry / "cwd"))
            except OSError:
                continue
            if cwd.is_relative_to(folder):
                found.append(int(entry.name))
    return found


def mounts_in(folder: Path) -> list[str]:
    """Mount points inside `folder`, deepest first."""
    points = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
    return sorted((p for p in points if Path(p).is_relative_to(folder)), key=len, reverse=True)


def children(pid: int) -> list[int]:
    """The direct children of a process."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def listening(pids: list[int]) -> list[str]:
    """The addresses ("HOST:PORT", IPv4 and IPv6) that any of the processes `pids` listens on for TCP."""
    inodes = set()
    for pid in pids:
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    found = []
    for table, size in (("tcp", 4), ("tcp6", 16)):
        try:
            rows = Path(f"/proc/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                host, port = fields[1].split(":")
                raw = bytes.fromhex(host)
                words = [raw[i:i + 4][::-1] for i in range(0, size, 4)]  # each 32-bit word little-endian
                address = ipaddress.ip_address(b"".join(words))
                found.append(f"{address}:{int(port, 16)}")
    return found
