"""A one-node Slurm cluster on this machine for the meta-tests: `munged`, `slurmctld` and `slurmd` (Debian's
munge and slurm-wlm, installed with apt-get when missing and this is root), run in the foreground from a
temporary folder with a munge key and a slurm.conf generated here, and stopped with every job they ran.

No systemd, no cgroup: processes are tracked by their parent (proctrack/linuxproc), tasks are not bound
(task/none), no accounting. The node is this machine (`hostname -s`, at 127.0.0.1) with its cores, in one
partition, `grading`; the daemons listen on free ports. Slurm's commands reach this cluster through `env`
(SLURM_CONF); slurm.conf names the munge socket (AuthInfo), so munge clients need no setting of their own.
"""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

PACKAGES = ("slurm-wlm", "munge")
TOOLS = ("munged", "slurmctld", "slurmd", "sbatch", "sinfo", "squeue", "scancel")  # the daemons, the commands used here
PARTITION = "grading"


def missing() -> str | None:
    """Why a Slurm cluster cannot run here (None: it can), after installing the packages where that is allowed."""
    if all(shutil.which(tool, path=_path()) for tool in TOOLS):
        return None
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return f"Slurm is not installed and cannot be here (not root, or no apt-get): {' '.join(PACKAGES)}"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *PACKAGES]):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            return f"{' '.join(command)} failed: {(done.stderr or done.stdout).strip()[-500:]}"
    stop_started_services()
    absent = [tool for tool in TOOLS if not shutil.which(tool, path=_path())]
    return f"installed {' '.join(PACKAGES)}, yet {absent} not found" if absent else None


def stop_started_services() -> None:
    """Where the install started the packages' own services (a machine with an init system), stop them: this
    cluster runs its own daemons, and the machine is left as it was."""
    for service in ("slurmctld", "slurmd", "munge"):
        if shutil.which("service"):
            subprocess.run(["service", service, "stop"], capture_output=True, timeout=60)


def _path() -> str:
    return os.environ.get("PATH", "") + ":/usr/sbin:/sbin"


def _memory_mb() -> int:
    """This machine's memory in MB, as the node offers it to jobs (Slurm's default is 1 MB: no job would fit)."""
    total_kb = int(Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0])
    return total_kb // 1024 * 9 // 10


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SlurmCluster:
    """`with SlurmCluster() as slurm: subprocess.run(["sbatch", ...], env=slurm.env)` (or any environment
    with `slurm.env_extra`). Its folder (mode 0755,
    in the temporary folder) holds the key, the configuration, the state and the logs."""

    def __init__(self):
        self.folder = Path(tempfile.mkdtemp(prefix="ra-slurm-"))
        os.chmod(self.folder, 0o755)  # the jobs' user reads slurm.conf and reaches the munge socket
        self.node = socket.gethostname().split(".")[0]
        self.processes: list[subprocess.Popen] = []
        self.env_extra = {"PATH": _path(), "SLURM_CONF": str(self.folder / "slurm.conf")}  # what Slurm's commands need
        self.env = {**os.environ, **self.env_extra}

    def configuration(self) -> str:
        folder, cpus = self.folder, os.cpu_count()
        return "\n".join([
            "ClusterName=ra-test", f"SlurmctldHost={self.node}(127.0.0.1)",
            f"SlurmctldPort={_free_port()}", f"SlurmdPort={_free_port()}",
            "SlurmUser=root", "SlurmdUser=root",
            "AuthType=auth/munge", "CredType=cred/munge", f"AuthInfo=socket={folder}/munge/socket",
            f"StateSaveLocation={folder}/state", f"SlurmdSpoolDir={folder}/spool",
            f"SlurmctldPidFile={folder}/slurmctld.pid", f"SlurmdPidFile={folder}/slurmd.pid",
            f"SlurmctldLogFile={folder}/slurmctld.log", f"SlurmdLogFile={folder}/slurmd.log",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none", "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU", "MpiDefault=none", "SwitchType=switch/none", "ReturnToService=2",
            f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={_memory_mb()} State=UNKNOWN",
            f"PartitionName={PARTITION} Nodes={self.node} Default=YES MaxTime=INFINITE State=UP", ""])

    def _start(self, argv: list[str], log: str) -> None:
        with open(self.folder / log, "ab") as out:
            self.processes.append(subprocess.Popen(argv, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                                   start_new_session=True))

    def __enter__(self) -> "SlurmCluster":
        folder = self.folder
        for sub in ("munge", "state", "spool"):
            (folder / sub).mkdir(mode=0o755)
        key = folder / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        (folder / "slurm.conf").write_text(self.configuration())
        try:
            self._start(["munged", "--foreground", "--force", f"--key-file={key}",
                         f"--socket={folder}/munge/socket", f"--pid-file={folder}/munge/munged.pid",
                         f"--log-file={folder}/munged.log", f"--seed-file={folder}/munge/seed"], "munged.out")
            self._wait_for(lambda: (folder / "munge" / "socket").exists(), "munged")
            self._start(["slurmctld", "-D", "-f", str(folder / "slurm.conf")], "slurmctld.out")
            self._start(["slurmd", "-D", "-f", str(folder / "slurm.conf"), "-N", self.node], "slurmd.out")
            self._wait_for(self._node_idle, "slurmctld and slurmd")
        except BaseException:
            self.stop()
            raise
        return self

    def _node_idle(self) -> bool:
        done = subprocess.run(["sinfo", "--noheader", "--format=%t", "--partition", PARTITION], env=self.env,
                              capture_output=True, text=True, timeout=30)
        return done.returncode == 0 and done.stdout.strip() == "idle"

    def _wait_for(self, ready, what: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.processes):
                raise RuntimeError(f"{what} did not start:\n{self.logs()}")
            time.sleep(0.5)

    def jobs(self) -> list[str]:
        """The cluster's jobs, each as squeue's `ID STATE USER`."""
        done = subprocess.run(["squeue", "--noheader", "--format=%i %T %u"], env=self.env, capture_output=True,
                              text=True, timeout=30)
        return done.stdout.split("\n")[:-1]

    def logs(self) -> str:
        return "\n".join(f"== {p.name}\n{p.read_text(errors='replace')[-3000:]}"
                         for p in sorted(self.folder.glob("*.log")) + sorted(self.folder.glob("*.out")))

    def stop(self) -> None:
        """Cancel every job, stop the daemons, remove the folder."""
        if self.processes:
            subprocess.run(["scancel", "--partition", PARTITION], env=self.env, capture_output=True, timeout=30)
            deadline = time.monotonic() + 60
            while self.jobs() and time.monotonic() < deadline:
                time.sleep(0.5)
        for process in reversed(self.processes):  # slurmd first: it kills what its jobs left
            try:
                os.killpg(process.pid, signal.SIGTERM)
                process.wait(timeout=30)
            except ProcessLookupError:
                pass
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
        shutil.rmtree(self.folder, ignore_errors=True)

    def __exit__(self, *exc) -> None:
        self.stop()
