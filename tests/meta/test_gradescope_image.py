"""Gradescope's image, simulated: setup.sh builds it in a bare root and its interpreter grades.

A Debian bookworm minbase root (debootstrap, cached under BASE_CACHE: built when missing, copied for each
run) gets the autograder zip unpacked at /autograder/source and run_autograder at /autograder, as
Gradescope lays them out; setup.sh runs inside it with chroot, as root, and installs Python, the venv and
bubblewrap itself. Here PyTorch's index cannot be reached: setup.sh falls back to torch's CPU wheel in
WHEELS (bound read-only into the root, passed as RA_TORCH_FIND_LINKS); everything else comes from PyPI and
Debian's mirror, as on Gradescope. setup.sh ends by grading the packaged reference with run_autograder
and refuses to finish below full marks; the tests then grade the stubs with the same interpreter. Bookworm
stands in for Ubuntu 22.04 (whose mirror and the deadsnakes PPA are out of reach here): the route through
the distribution's python3.11 is run, the PPA's is not; the interpreter check is
(tests/meta/test_gradescope.py, against fake release candidates).

Needs root (chroot, mount) and the network; skipped, with the reason, without them. About 10 minutes
the first time on a machine (debootstrap), then the time setup.sh takes (docs/graders.md has the figures).
"""

import json
import math
import os
import shutil
import subprocess
import tempfile
import time
import zipfile
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from grader.batch.cpushare import CpuShare
from grader.harness import uids
from grader.registry import BY_ID, PROBLEMS
from grader.runner import Limits
from tests.meta.slips import LOOP, UNFINISHED, planted
from tests.meta.suite import ROOT
from tests.meta.test_gradescope import build, validate
from tests.meta.test_hostile import MARK, case_source

pytestmark = [pytest.mark.meta, pytest.mark.slow, pytest.mark.timeout(3600)]

BASE_CACHE = Path("/var/cache/resource-accounting/bookworm-minbase")
MIRROR = "http://deb.debian.org/debian"
WHEELS = Path("/opt/wheels")
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
DEBOOTSTRAP_SECONDS, SETUP_SECONDS, GRADE_SECONDS = 1200, 1500, 600
CHROOT_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root",
              "LANG": "C.UTF-8"}


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "needs root (debootstrap, chroot, mount)"
    if not list(WHEELS.glob("torch-*+cpu-cp311-*.whl")):
        return f"needs torch's CPU wheel in {WHEELS} (PyTorch's index is out of reach here)"
    return None


def base_root() -> Path:
    """The cached bare bookworm root, built with debootstrap when missing (into a new folder, then renamed:
    a run cut short leaves no half-built cache)."""
    if (BASE_CACHE / "etc" / "debian_version").is_file():
        return BASE_CACHE
    if shutil.which("debootstrap") is None:
        subprocess.run(["apt-get", "install", "-y", "-qq", "debootstrap"], check=True, capture_output=True,
                       timeout=300)
    BASE_CACHE.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=BASE_CACHE.name + ".partial-", dir=BASE_CACHE.parent))
    done = subprocess.run(["debootstrap", "--variant=minbase", "bookworm", str(partial), MIRROR],
                          capture_output=True, text=True, timeout=DEBOOTSTRAP_SECONDS)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    try:
        partial.rename(BASE_CACHE)
    except OSError:  # another run built it meanwhile
        shutil.rmtree(partial)
    return BASE_CACHE


def mounts_under(folder: Path) -> list[str]:
    prefix = str(folder.resolve()) + "/"
    with open("/proc/self/mounts") as f:
        return [line.split()[1] for line in f if line.split()[1].startswith(prefix)]


@contextmanager
def mounted(fs: Path):
    """What a chroot needs of the host (/proc, /dev, /sys), a private /dev/shm, the torch wheel read-only and
    the sandbox's uid locks (so that this grader and any other on the machine never take the same uid);
    everything unmounted on the way out."""
    uid_locks = uids.UID_LOCKS
    uid_locks.mkdir(parents=True, exist_ok=True)
    plan = [(["-t", "proc", "proc"], "proc"), (["--bind", "/dev"], "dev"), (["--bind", "/dev/pts"], "dev/pts"),
            (["-t", "tmpfs", "tmpfs"], "dev/shm"),
            (["-t", "sysfs", "sysfs"], "sys"), (["--bind", str(WHEELS)], WHEELS.relative_to("/")),
            (["-o", "remount,bind,ro"], WHEELS.relative_to("/")),
            (["--bind", str(uid_locks)], Path("run", uid_locks.name))]
    done = []
    try:
        for options, target in plan:
            (fs / target).mkdir(parents=True, exist_ok=True)
            subprocess.run(["mount", *options, str(fs / target)], check=True, capture_output=True)
            if "remount" not in options[-1]:
                done.append(fs / target)
        yield
    finally:
        for target in reversed(done):
            if subprocess.run(["umount", str(target)], capture_output=True).returncode:
                subprocess.run(["umount", "-l", str(target)], capture_output=True)


def chroot(fs: Path, command: str, timeout: float, cpu: CpuShare | None = None,
           **env: str) -> subprocess.CompletedProcess:
    """`command` in the root, as root; with `cpu`, in that CPU share (Gradescope gives a grading half a CPU)."""
    return subprocess.run(["chroot", str(fs), "/bin/bash", "-c", command], env={**CHROOT_ENV, **env},
                          capture_output=True, text=True, timeout=timeout,
                          preexec_fn=(lambda: cpu.add(os.getpid())) if cpu else None)


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    """A bare root with the autograder unpacked and setup.sh run in it: (the root, setup.sh's run, seconds)."""
    why = _why_not()
    if why:
        pytest.skip(why)
    started = time.monotonic()
    base = base_root()
    debootstrapped = time.monotonic() - started
    tmp = tmp_path_factory.mktemp("gradescope-image")
    assert build(tmp).returncode == 0
    # outside pytest's temporary folders, which pytest removes on its own: never while something is mounted
    holder = Path(tempfile.mkdtemp(prefix="ra-gradescope-image-", dir="/var/tmp"))
    fs = holder / "root"
    with ExitStack() as stack:
        stack.callback(_remove, holder)
        started = time.monotonic()
        subprocess.run(["cp", "-a", "--reflink=auto", str(base), str(fs)], check=True, timeout=600)
        copied = time.monotonic() - started
        # a root's / is open to every user, as in Gradescope's container; debootstrap's folder was 0700, which kept
        # the sandbox's uid out of everything, so the user layer could not start and the gradings ran unsandboxed
        os.chmod(fs, 0o755)
        shutil.copy("/etc/resolv.conf", fs / "etc" / "resolv.conf")
        pip_env = {}
        if HOST_CA.is_file():  # this machine may reach PyPI through a proxy that signs with a CA of its own
            shutil.copy(HOST_CA, fs / "etc" / "host-ca-certificates.crt")
            pip_env["PIP_CERT"] = "/etc/host-ca-certificates.crt"
        source = fs / "autograder" / "source"
        with zipfile.ZipFile(tmp / "autograder.zip") as z:
            z.extractall(source)
            for info in z.infolist():  # zipfile drops the modes; Gradescope's unzip keeps them
                os.chmod(source / info.filename, info.external_attr >> 16 & 0o777)
        shutil.copy2(source / "run_autograder", fs / "autograder" / "run_autograder")
        stack.enter_context(mounted(fs))
        started = time.monotonic()
        setup = chroot(fs, "cd /autograder/source && bash ./setup.sh", SETUP_SECONDS,
                       RA_TORCH_FIND_LINKS=str(WHEELS), **pip_env)
        seconds = time.monotonic() - started
        print(f"\n[gradescope image] debootstrap (or the cache) {debootstrapped:.0f} s, copy {copied:.0f} s, "
              f"setup.sh {seconds:.0f} s (rc {setup.returncode})")
        yield fs, setup, seconds


def _remove(holder: Path) -> None:
    left = mounts_under(holder)
    assert not left, f"still mounted, {holder} left in place: {left}"
    shutil.rmtree(holder)


def run_autograder(fs: Path, upload: dict[str, str], *options: str, cpu: CpuShare | None = None) -> dict:
    """Gradescope's per-submission step in the root: the upload in /autograder/submission, run_autograder (in the
    CPU share `cpu`), and results.json (validated)."""
    for folder in ("submission", "results"):
        shutil.rmtree(fs / "autograder" / folder, ignore_errors=True)
    (fs / "autograder" / "submission").mkdir()
    for name, text in upload.items():
        (fs / "autograder" / "submission" / name).write_text(text)
    done = chroot(fs, "/autograder/run_autograder " + " ".join(options), GRADE_SECONDS, cpu)
    results_file = fs / "autograder" / "results" / "results.json"
    assert results_file.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads(results_file.read_text())
    validate(results)
    return results


def test_setup_builds_the_image_on_a_bare_root_and_the_reference_scores_100(image):
    fs, setup, seconds = image
    assert setup.returncode == 0, setup.stdout[-4000:] + setup.stderr[-6000:]
    assert "the packaged reference scored 100/100 on this image" in setup.stderr, setup.stderr[-3000:]
    checked = json.loads((fs / "autograder" / "source" / "setup-check-results.json").read_text())
    validate(checked)
    assert checked["score"] == 100 and all(t["status"] == "passed" for t in checked["tests"])
    # compare's answers, kept in the image for the fingerprints of every grading (grader/fingerprints/cache.py)
    assert "compare's inputs and answers kept in /root/.cache/resource-accounting/compare" in setup.stdout, \
        setup.stdout[-3000:] + setup.stderr[-3000:]
    assert len(list((fs / "root" / ".cache" / "resource-accounting" / "compare").glob("*.pickle"))) >= 9
    # the interpreter setup.sh installed, not this machine's
    probe = chroot(fs, "/autograder/source/.venv/bin/python -c 'import sys, torch; "
                       "print(sys._base_executable, sys.version_info.releaselevel, torch.__version__)'", 60)
    assert probe.stdout.split() == ["/usr/bin/python3.11", "final", "2.13.0+cpu"], probe.stdout + probe.stderr
    doctor = chroot(fs, "/autograder/source/.venv/bin/resource-grader doctor", 60)
    print(f"[gradescope image] doctor in the root:\n{doctor.stdout}")
    # Gradescope's container: root, no namespaces for bwrap (a chroot has none either), so a uid of its own
    assert "sandbox: limits + user" in doctor.stdout, doctor.stdout


def test_the_stubs_score_0_with_the_interpreter_setup_installed(image):
    fs, setup, _ = image
    if setup.returncode:
        pytest.fail("setup.sh failed (the test above says why)")
    stubs = {f"{p.module}.py": (ROOT / "assignment" / f"{p.module}.py").read_text() for p in PROBLEMS}
    started = time.monotonic()
    results = run_autograder(fs, stubs)
    print(f"[gradescope image] the stubs graded in {time.monotonic() - started:.0f} s")
    assert results["score"] == 0 and results["tests"] and all(t["status"] == "failed" for t in results["tests"])
    assert "review" not in results.get("extra_data", {})



def test_an_attack_on_the_kept_answers_in_the_image_changes_nothing(image):
    """The hostile corpus's tamper_answers_cache, graded as Gradescope grades it: the image's kept answers
    (root's, in /root, which the submission's uid cannot enter) are as setup.sh made them, the attack's file
    is not among them, and no pickle of the attack's was loaded (which would have left its mark in /tmp)."""
    fs, setup, _ = image
    if setup.returncode:
        pytest.fail("setup.sh failed (the first test says why)")
    kept = fs / "root" / ".cache" / "resource-accounting" / "compare"
    before = {p.name: p.read_bytes() for p in kept.iterdir()}
    attack = case_source("tamper_answers_cache", "127.0.0.1:9")
    results = run_autograder(fs, {"flops.py": attack}, "--problem", "flops")
    assert {p.name: p.read_bytes() for p in kept.iterdir()} == before
    assert not list((fs / "tmp").glob(f"*{MARK}*")), "a pickle of the attack's was loaded"
    flops = [t for t in results["tests"] if t["name"].startswith("flops: ")]
    assert flops and all(t["status"] == "failed" for t in flops), "the attack sits in the flops stub: nothing passes"


def per_problem(results: dict) -> dict[str, float]:
    scores: dict[str, float] = {}
    for test in results["tests"]:
        problem = test["name"].split(":")[0]
        scores[problem] = scores.get(problem, 0.0) + test["score"]
    return scores


def test_a_loop_costs_at_half_a_cpu_what_leaving_the_function_unfinished_costs(image):
    """At Gradescope's half a CPU: a reference copy whose view_result alone loops loses what it loses with
    view_result unfinished, within half a point, and every other problem is graded in full; one whose every
    tensors function loops loses tensors alone. Both inside the time limit, results written."""
    fs, setup, _ = image
    if setup.returncode:
        pytest.fail("setup.sh failed (the first test says why)")
    reference = {f"{p.module}.py": (ROOT / "reference" / f"{p.module}.py").read_text() for p in PROBLEMS}
    tensors = reference["tensors.py"]
    with CpuShare(0.5) as cpu:
        if cpu.kind not in ("cgroup v1", "cgroup v2"):
            pytest.skip(f"no CPU cgroup to give half a CPU ({cpu.describe()})")
        graded = {}
        for name, upload, options in [
                ("view_result loops", {**reference, "tensors.py": planted(tensors, LOOP, {"view_result"})}, ()),
                ("view_result unfinished", {"tensors.py": planted(tensors, UNFINISHED, {"view_result"})},
                 ("--problem", "tensors")),
                ("every tensors function loops", {**reference, "tensors.py": planted(tensors, LOOP)}, ())]:
            started = time.monotonic()
            graded[name] = run_autograder(fs, upload, *options, cpu=cpu)
            scores = per_problem(graded[name])
            print(f"[gradescope image, half a CPU] {name}: {graded[name]['score']:g}/100 (tensors "
                  f"{scores['tensors']:g}) in {time.monotonic() - started:.0f} s, execution_time "
                  f"{graded[name]['execution_time']:.0f} s")
            assert graded[name]["execution_time"] < Limits().submission_seconds, name
    looped, unfinished, everything = (per_problem(graded[name]) for name in graded)
    assert abs(looped.pop("tensors") - unfinished["tensors"]) <= 0.5, (looped, unfinished)
    assert everything.pop("tensors") == 0
    for scores in (looped, everything):
        assert all(math.isclose(score, BY_ID[p].points) for p, score in scores.items()), scores
