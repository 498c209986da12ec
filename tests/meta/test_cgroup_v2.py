"""The grader's cgroups on cgroup v2 (grader/harness/cgroups.py), where this machine has v1 alone: tried in a virtual
machine booted with v2 alone (qemu, emulated, so that it runs where KVM is missing or nested; Debian's kernel; this
machine's root shared read-only over 9p and cached as a disk's pages are (cache=loose: with no cache each process
reads a library afresh and its memory group is charged with the pages), with its own /tmp (the checkout kept in
sight where it is under /tmp, as a CI clone may be), /run, /proc and /sys, so the VM runs this checkout and this
interpreter).
Inside, as the grader would find v2 on a machine of its own:

- `doctor` in a group that holds a process that is not the grader's says it makes no memory group, and why;
- in a group of its own, `doctor` says it makes one, and the memory tests of tests/meta/test_grader.py pass
  (none may skip): a grading's memory group charged with the files its workers hold, made inside its CPU share.

What the VM needs (qemu, Debian's kernel with its 9p modules, a static busybox) is installed with apt-get when
missing, as root; where that cannot be done the test is skipped with its reason. About 3 minutes of a core.
"""

import base64
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.meta.suite import ROOT

pytestmark = [pytest.mark.meta, pytest.mark.slow, pytest.mark.timeout(1500)]

PACKAGES = ["qemu-system-x86", "linux-image-amd64", "busybox-static"]
MODULES = ["drivers/virtio/virtio_ring", "drivers/virtio/virtio", "drivers/virtio/virtio_pci_modern_dev",
           "drivers/virtio/virtio_pci_legacy_dev", "drivers/virtio/virtio_pci", "fs/netfs/netfs",
           "fs/fscache/fscache", "net/9p/9pnet", "net/9p/9pnet_virtio", "fs/9p/9p"]  # in the order they load
VM_SECONDS = 1200
MARK = "@@ra-vm@@"  # the script's section markers: what pytest's own "=== FAILURES ===" lines never are
TESTS = "memory_a_grading_holds or memory_group_inside"  # of tests/meta/test_grader.py

# The VM's first process: this machine's root read-only as its root, then the base64 command of `vmcmd=`.
INIT = """#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in /modules/*.ko; do insmod "$m"; done
for i in 1 2 3 4 5 6 7 8 9 10; do
  mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=512000 host /root && break; sleep 1
done
mount -t proc proc /root/proc; mount -t sysfs sys /root/sys; mount -t devtmpfs dev /root/dev
mount -t tmpfs run /root/run; mount -t cgroup2 cgroup2 /root/sys/fs/cgroup
checkout=$(sed -n 's/.* vmroot=\\([^ ]*\\).*/\\1/p' /proc/cmdline)  # kept in sight where it is under /tmp
mkdir /root/run/host-tmp; mount -o bind /root/tmp /root/run/host-tmp; mount -t tmpfs tmp /root/tmp
case "$checkout" in
  /tmp/*) mkdir -p "/root$checkout"; mount -o bind "/root/run/host-tmp${checkout#/tmp}" "/root$checkout";;
esac
chroot /root /bin/sh -c "$(sed -n 's/.* vmcmd=\\([^ ]*\\).*/\\1/p' /proc/cmdline | base64 -d)"
echo "vm: exit $?"
poweroff -f
"""

# Run in the VM, as root, in this checkout: `shared` holds a process of no grader's; `doctor` and `tests` each hold
# one grader alone (a group of its own each: once a grader has made groups in one, it holds no process itself).
SCRIPT = """
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp LANG=C.UTF-8
export PYTHONDONTWRITEBYTECODE=1 HYPOTHESIS_PROFILE=ci
cd {root}
cg=/sys/fs/cgroup
echo "+cpu +memory" > $cg/cgroup.subtree_control
mkdir $cg/shared $cg/doctor $cg/tests
sleep 3600 & echo $! > $cg/shared/cgroup.procs
echo "{mark} doctor, shared"
sh -c "echo \\$\\$ > $cg/shared/cgroup.procs && exec {python} -m grader doctor" 2>&1
echo "{mark} doctor, alone"
sh -c "echo \\$\\$ > $cg/doctor/cgroup.procs && exec {python} -m grader doctor" 2>&1
echo "{mark} tests"
sh -c "echo \\$\\$ > $cg/tests/cgroup.procs && exec {python} -m pytest --meta -p no:cacheprovider -q -rs --color=no \\
  tests/meta/test_grader.py -k '{tests}'" 2>&1
echo "{mark} end"
"""


def _kernel() -> tuple[Path, Path] | None:
    """Debian's kernel image and its modules folder, where one with the 9p modules is installed."""
    for image in sorted(Path("/boot").glob("vmlinuz-*-amd64"), reverse=True):
        modules = Path("/lib/modules") / image.name.removeprefix("vmlinuz-") / "kernel"
        if all((modules / f"{m}.ko").is_file() for m in MODULES):
            return image, modules
    return None


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "needs root (cgroup v2's files in the VM are root's, and apt-get)"
    if _kernel() and shutil.which("qemu-system-x86_64") and shutil.which("busybox"):
        return None
    if shutil.which("apt-get") is None:
        return f"needs {', '.join(PACKAGES)} and no apt-get here to install them"
    install = "apt-get update -qq && apt-get install -y -qq --no-install-recommends " + " ".join(PACKAGES)
    done = subprocess.run(install, shell=True, capture_output=True, text=True, timeout=900,
                          env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    if done.returncode != 0 or _kernel() is None:
        return f"could not install {', '.join(PACKAGES)}: {(done.stdout + done.stderr)[-1500:]}"
    return None


def _initramfs(folder: Path, modules: Path) -> Path:
    """A gzipped cpio archive (newc) of busybox, the 9p modules and INIT."""
    tree = folder / "initramfs"
    for sub in ("bin", "modules", "proc", "sys", "dev", "root"):
        (tree / sub).mkdir(parents=True)
    shutil.copy(shutil.which("busybox"), tree / "bin" / "busybox")
    for i, module in enumerate(MODULES):
        shutil.copy(modules / f"{module}.ko", tree / "modules" / f"{i:02}-{Path(module).name}.ko")
    (tree / "init").write_text(INIT)
    (tree / "init").chmod(0o755)
    archive = subprocess.run("find . | cpio -o -H newc", shell=True, cwd=tree, capture_output=True, check=True)
    path = folder / "initramfs.gz"
    path.write_bytes(gzip.compress(archive.stdout))
    return path


def run_in_vm(script: str) -> str:
    """What the VM's console printed while it ran `script`."""
    image, modules = _kernel()
    with tempfile.TemporaryDirectory(prefix="ra-vm-") as folder:
        initramfs = _initramfs(Path(folder), modules)
        command = base64.b64encode(script.encode()).decode()
        done = subprocess.run(
            ["qemu-system-x86_64", "-accel", "tcg", "-cpu", "max", "-smp", "2", "-m", "6144", "-nographic",
             "-no-reboot", "-kernel", str(image), "-initrd", str(initramfs),
             "-append", f"console=ttyS0 quiet panic=-1 cgroup_no_v1=all vmroot={ROOT} vmcmd={command}",
             "-virtfs", "local,path=/,mount_tag=host,security_model=passthrough,readonly=on,multidevs=remap"],
            capture_output=True, text=True, errors="replace", timeout=VM_SECONDS, stdin=subprocess.DEVNULL)
    return done.stdout.replace("\r", "")


@pytest.fixture(scope="module")
def console():
    why = _why_not()
    if why:
        pytest.skip(why)
    return run_in_vm(SCRIPT.format(root=ROOT, python=sys.executable, tests=TESTS, mark=MARK))


def section(console: str, name: str) -> str:
    match = re.search(rf"{MARK} {name}\n(.*?)\n{MARK} ", console, re.S)
    assert match, f"no section {name!r} in the VM's console:\n{console[-4000:]}"
    return match.group(1)


def test_a_group_shared_with_other_processes_gets_no_memory_group_and_doctor_says_why(console):
    doctor = section(console, "doctor, shared")
    assert "memory: address space only" in doctor and "holds processes other than the grader's" in doctor, doctor


def test_a_grader_alone_in_its_group_makes_a_memory_group_per_grading(console):
    doctor = section(console, "doctor, alone")
    assert "memory: a memory cgroup per grading" in doctor, doctor


def test_the_memory_tests_pass_on_cgroup_v2(console):
    tests = section(console, "tests")
    assert re.search(r"\b2 passed\b", tests) and "skipped" not in tests and "failed" not in tests, tests[-4000:]
