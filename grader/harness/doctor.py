"""`resource-grader doctor`: which sandbox layers this machine allows and why not the others (grader/harness/sandbox.py
`doctor`), and what stands in their way on a node where the grader is not root (`non_root`: a Slurm job, a pod
without privileges), where a cluster's workers often run."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from grader.harness import sandbox


def report(mode: str = "auto") -> str:
    """Everything `doctor` says, for the sandbox `mode` (auto, user, none)."""
    return sandbox.doctor(mode) + "\n" + non_root()


NOBODY = 65534


def non_root() -> str:
    """What `resource-grader doctor` adds about a node where the grader runs as an ordinary user (a Slurm job, a
    pod without privileges): there the user layer is off (it needs root) and the limits are on; the namespaces
    layer needs bubblewrap, unprivileged user namespaces from the kernel, and an interpreter that other users can
    reach. Run as root, it tries the namespaces layer as the unprivileged user `nobody`; run as an ordinary user,
    `doctor`'s own lines above are that user's answer, and this adds what stands in its way."""
    lines = ["", "On a node where the grader is not root (a Slurm job, a pod without privileges):",
             "  limits      on   (rlimits need no privilege)",
             "  user        off  (a uid of its own per grading needs root)"]
    private = sandbox._private_ancestor()
    if shutil.which("bwrap") is None:
        namespaces = "off  bwrap not found (Debian/Ubuntu package bubblewrap)"
    elif os.geteuid() == 0:
        with tempfile.TemporaryDirectory(prefix="ra-probe-") as tmp:
            os.chmod(tmp, 0o777)
            spec = sandbox.Spec(["namespaces"], home=tmp, tree=tmp, binds=sandbox._interpreter_paths())
            command = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                       *spec.command([sys.executable, "-c", sandbox.PROBE])]
            try:
                done = subprocess.run(command, env=spec.env(), cwd=tmp, capture_output=True, timeout=60)
                why = (done.stderr.decode(errors="replace").strip().splitlines() or [f"exit {done.returncode}"])[-1]
                failed = done.returncode != 0
            except (OSError, subprocess.TimeoutExpired) as exc:
                failed, why = True, str(exc)
        namespaces = f"off  tried as user nobody: {why}" if failed else "on   (tried as user nobody)"
    else:
        namespaces = "see above (this user)"
    lines.append(f"  namespaces  {namespaces}")
    userns = Path("/proc/sys/user/max_user_namespaces")
    if userns.exists() and userns.read_text().strip() == "0":
        lines.append("  the kernel allows no user namespaces (sysctl user.max_user_namespaces=0)")
    restricted = Path("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
    if restricted.exists() and restricted.read_text().strip() == "1":
        lines.append("  AppArmor restricts unprivileged user namespaces (Ubuntu 24.04: bwrap needs a profile)")
    if private:
        lines.append(f"  {private} is closed to other users: an ordinary user's grader needs its own Python "
                     "installation (a venv on a path all users can cross)")
    lines.append("  With neither user nor namespaces, batch on such a node refuses other people's code unless "
                 "--no-sandbox (its gradings would run as the job's user, with its files and network).")
    return "\n".join(lines)
