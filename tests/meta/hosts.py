"""Separate hosts inside this machine, for the cluster tests: each host a network namespace of its own, with its own
loopback and one address on a bridge that joins them (and this machine, the coordinator's host, at GATEWAY), and a
mount namespace in which the folders given as another host's are hidden (a tmpfs over each). So a process on one
host reaches another only by its address, and reads no file the others keep: what a cluster of machines would
give. Needs root and iproute2 (`ip`); `Hosts.why_not()` says what is missing.

    with Hosts(["scheduler", "w1", "w2"], tmp) as hosts:
        hosts.address("w1")                  # 198.18.7.3
        hosts.run("w1", ["dask", "worker", ...])  # the command line that runs it on w1
        hosts.folder_of("w1")                # a folder w1 alone sees (its secret, say)
"""

import os
import shutil
import subprocess
from pathlib import Path

NETWORK = "198.18.7"  # RFC 2544's benchmarking range: never routed beyond this machine
GATEWAY = f"{NETWORK}.1"
# the mount namespace of a host: every hidden folder under a tmpfs, then the command itself
HIDE = 'for folder in $RA_HIDDEN; do mount -t tmpfs ra-hidden "$folder" || exit 1; done; exec "$@"'


class Hosts:
    def __init__(self, names: list[str], folder: Path, hidden: list[Path] = ()):
        """`names`: the hosts; `folder`: where each keeps a folder of its own (hidden from the others); `hidden`:
        folders of the coordinator's that no host sees."""
        self.names, self.folder, self.hidden = list(names), folder, list(hidden)
        self.namespaces = {name: f"ra-host-{os.getpid()}-{i}" for i, name in enumerate(self.names)}
        self.bridge = f"ra-hb{os.getpid() % 100000}"  # interface names have 15 characters at most

    @staticmethod
    def why_not() -> str | None:
        if os.geteuid() != 0:
            return "network namespaces as hosts need root"
        if shutil.which("ip") is None:
            return "network namespaces as hosts need iproute2 (`ip`)"
        return None

    def address(self, name: str) -> str:
        return f"{NETWORK}.{self.names.index(name) + 2}"

    def folder_of(self, name: str) -> Path:
        return self.folder / name

    def run(self, name: str, argv: list[str]) -> list[str]:
        """The command line that runs `argv` on host `name` (its pid is argv's: every step execs the next).
        Its environment must carry RA_HIDDEN = hidden_from(name)."""
        return ["ip", "netns", "exec", self.namespaces[name], "unshare", "--mount", "--propagation", "private",
                "--", "sh", "-c", HIDE, "sh", *argv]

    def hidden_from(self, name: str) -> str:
        """RA_HIDDEN for host `name`: the coordinator's hidden folders and the other hosts' own."""
        others = [self.folder_of(other) for other in self.names if other != name]
        return " ".join(str(path) for path in [*self.hidden, *others])

    def __enter__(self) -> "Hosts":
        try:
            _ip("link", "add", self.bridge, "type", "bridge")
            _ip("addr", "add", f"{GATEWAY}/24", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
            for i, (name, namespace) in enumerate(self.namespaces.items()):
                self.folder_of(name).mkdir(parents=True, exist_ok=True)
                self.folder_of(name).chmod(0o711)
                veth = f"ra-hv{os.getpid() % 10000}-{i}"
                _ip("netns", "add", namespace)
                _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", namespace)
                _ip("link", "set", veth, "master", self.bridge)
                _ip("link", "set", veth, "up")
                inside = ["ip", "netns", "exec", namespace, "ip"]
                _run([*inside, "addr", "add", f"{self.address(name)}/24", "dev", "eth0"])
                _run([*inside, "link", "set", "eth0", "up"])
                _run([*inside, "link", "set", "lo", "up"])
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Remove the namespaces and the bridge (a veth goes with its namespace, which the kernel frees a few seconds
        later)."""
        for namespace in self.namespaces.values():
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True, check=False)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True, check=False)

    def __exit__(self, *exc) -> None:
        self.close()


def _ip(*args: str) -> None:
    _run(["ip", *args])


def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip()}")
