"""The public hostile corpus (tests/meta/hostile/, see its README) through the grader's sandbox.

Every case is appended to the untouched flops stub and graded in one `batch` with a copy of the reference,
twice: with every layer this machine allows (`--sandbox auto`; in CI, as root: a uid per slot and bwrap's
namespaces) and with the separate-user layer alone (`--sandbox user`, as on Gradescope, where namespaces
are not allowed). A last test runs the grader as an ordinary user, as a student grading their own work.
"""

import csv
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from grader import sandbox
from tests.meta.suite import ROOT

pytestmark = [pytest.mark.meta, pytest.mark.timeout(1800)]

HOSTILE = Path(__file__).parent / "hostile"
CASES = sorted(p.stem for p in HOSTILE.glob("*.py"))
REFERENCE = "reference-copy"
FLOPS_POINTS = 15
JOBS = 2
MARK = "ra-hostile"
CACHES = ("__pycache__", ".hypothesis", ".ruff_cache", ".pytest_cache", ".git")


def tree_digest(root: Path, *, contents: bool) -> dict[str, str]:
    """Path -> a digest of the file (its bytes, or its size and modification time for the large venv)."""
    digest = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in CACHES and not d.endswith(".egg-info") and
                   (contents is False or Path(folder, d) != ROOT / ".venv")]
        for name in files:
            path = Path(folder, name)
            if path.is_symlink() or name.endswith(".pyc"):
                continue
            stat = path.stat()
            digest[str(path)] = (hashlib.sha256(path.read_bytes()).hexdigest() if contents
                                 else f"{stat.st_size}:{stat.st_mtime_ns}")
    return digest


def snapshot() -> tuple[dict, dict]:
    return tree_digest(ROOT, contents=True), tree_digest(Path(sys.prefix), contents=False)


def leftovers() -> list[str]:
    """Files of a grading anywhere they could be left: the shared temporary folders, by name and by owner."""
    uids = {sandbox.UID_BASE + slot for slot in range(JOBS)}
    found = []
    for folder in sandbox.SHARED_TMP:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if MARK in entry.name or entry.name.startswith("ra-grade-") or \
                    entry.stat(follow_symlinks=False).st_uid in uids:
                found.append(entry.path)
    for kind in ("shm", "sem", "msg"):
        header, *rows = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
        for row in rows:
            values = dict(zip(header.split(), row.split(), strict=False))
            if int(values["uid"]) in uids:
                found.append(f"System V {kind}: {row.split()[:3]}")
    return found


class Listener:
    """A loopback listener that records whoever connects (the network bomb's target)."""

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.2)
        self.address = f"127.0.0.1:{self.server.getsockname()[1]}"
        self.connections = 0
        self.stopped = False
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while not self.stopped:
            try:
                connection, _ = self.server.accept()
            except OSError:
                continue
            self.connections += 1
            connection.close()

    def close(self):
        self.stopped = True
        self.server.close()


def build_corpus(folder: Path, listener: str) -> None:
    stub = (ROOT / "assignment" / "flops.py").read_text()
    for case in CASES:
        (folder / case).mkdir(parents=True)
        attack = (HOSTILE / f"{case}.py").read_text().replace("__LISTENER__", listener)
        (folder / case / "flops.py").write_text(stub + "\n\n# -- the attack --\n" + attack)
    (folder / REFERENCE).mkdir()
    shutil.copy(ROOT / "reference" / "flops.py", folder / REFERENCE / "flops.py")


def machine_view(installation: list[Path]) -> list[str]:
    """bwrap options (run as root) for a view of this machine as a Gradescope container would be: the
    system, the shared temporary folders and this installation, readable by any user, and nothing else (no
    other checkout of the project, no home folders). Folders on the way to the installation that others
    cannot cross are made crossable in the view. Same pid namespace, the real /tmp, so the test sees what
    the grader leaves."""
    options = ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc", "--dev-bind", "/dev", "/dev",
               "--proc", "/proc", "--bind", "/tmp", "/tmp", "--bind", "/var/tmp", "/var/tmp", "--bind", "/run", "/run"]
    for link in ("/bin", "/lib", "/lib64", "/sbin"):
        if os.path.islink(link):
            options += ["--symlink", os.readlink(link), link]
    paths = [str(p) for p in installation if not str(p).startswith(("/usr/", "/tmp/"))]
    options += sandbox.open_folders(paths, below=["/"], except_in=paths)
    for path in paths:
        options += ["--bind", path, path]
    return options


def installation() -> list[Path]:
    return [ROOT, Path(sys.prefix), Path(sys.base_prefix), Path(os.path.realpath(sys.executable)).parent.parent]


def run_grader(args: list[str], *, as_uid: int | None = None, view: bool = False, timeout: float = 1500):
    command = [sys.executable, "-m", "grader", *args]
    if as_uid is not None:
        command = ["setpriv", f"--reuid={as_uid}", f"--regid={as_uid}", "--clear-groups", "--", *command]
    if view:
        command = ["bwrap", *machine_view(installation()), "--", *command]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "HYPOTHESIS"))}
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, timeout=timeout, check=False)


def run_corpus(tmp: Path, mode: str) -> dict:
    before = snapshot()
    listener = Listener()
    build_corpus(tmp / "submissions", listener.address)
    out = tmp / "grades"
    done = run_grader(["batch", str(tmp / "submissions"), "--out", str(out), "--problem", "flops",
                       "--jobs", str(JOBS), "--time-limit", "240", "--sandbox", mode], view=mode == "user")
    results = {p.parent.name: p.read_text() for p in out.glob("*/results.json")}
    time.sleep(3)  # whatever outlived the run would act now
    listener.close()
    return {
        "returncode": done.returncode, "stderr": done.stderr.decode(errors="replace"),
        "rows": {r["submission"]: r for r in csv.DictReader(open(out / "grades.csv"))} if done.returncode == 0 else {},
        "results": results, "results_later": {p.parent.name: p.read_text() for p in out.glob("*/results.json")},
        "alive": {slot: sandbox.processes_of(sandbox.UID_BASE + slot) for slot in range(JOBS)},
        "leftovers": leftovers(), "before": before, "after": snapshot(), "connections": listener.connections,
    }


def available(mode: str) -> str | None:
    """Why the corpus cannot run in this mode here, or None."""
    if os.geteuid() != 0:
        return "the corpus runs the grader as root, as Gradescope and CI do"
    if mode == "user":
        if shutil.which("bwrap") is None:
            return "bwrap is needed to give the user layer a clean view of this machine"
        probe = run_grader(["doctor", "--sandbox", "user"], view=True, timeout=120)
        doctor = probe.stdout.decode(errors="replace")
        return None if "sandbox: limits + user" in doctor else doctor + probe.stderr.decode(errors="replace")
    layers = sandbox.detect(mode)
    return None if layers.sandboxed else layers.describe()


@pytest.fixture(scope="module", params=["auto", "user"])
def corpus(request, tmp_path_factory):
    why = available(request.param)
    if why:
        pytest.skip(f"--sandbox {request.param} is not available here: {why}")
    tmp = Path(tempfile.mkdtemp(prefix="ra-corpus-"))  # outside pytest's private tmp: the view shows it
    os.chmod(tmp, 0o755)
    try:
        run = run_corpus(tmp, request.param)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    run["mode"] = request.param
    assert run["returncode"] == 0, run["stderr"][-3000:]
    return run


REFERENCE_LINES = [line.strip() for line in (ROOT / "reference" / "flops.py").read_text().splitlines()
                   if len(line.strip()) > 30 and line.strip() not in (ROOT / "assignment" / "flops.py").read_text()]


@pytest.mark.parametrize("case", CASES)
def test_no_attack_earns_a_point_or_leaks(corpus, case):
    row = corpus["rows"][case]
    assert row["status"] == "ok", f"{case}: status {row['status']}\n{corpus['stderr'][-3000:]}"
    results = json.loads(corpus["results"][case])
    assert results["score"] == 0 and float(row["total"]) == 0, f"{case} gained points: {results['score']}"
    assert results["tests"] and all(t["status"] == "failed" and t["score"] == 0 for t in results["tests"])
    assert corpus["results_later"][case] == corpus["results"][case], f"{case}: results.json changed afterwards"
    text = corpus["results"][case]
    leaked = [line for line in REFERENCE_LINES if line in text]
    assert not leaked, f"{case}: the reference's text reached results.json: {leaked[:3]}"
    assert "PYTEST_ADDOPTS" not in text and "hypothesis-profile" not in text, f"{case}: the grader's settings leaked"


def test_the_reference_keeps_full_marks_beside_the_attacks(corpus):
    assert corpus["rows"][REFERENCE]["status"] == "ok"
    assert json.loads(corpus["results"][REFERENCE])["score"] == FLOPS_POINTS, corpus["results"][REFERENCE][-3000:]


def test_nothing_of_the_run_is_alive_or_left_behind(corpus):
    assert not any(corpus["alive"].values()), f"processes of the sandbox outlived the batch: {corpus['alive']}"
    assert not corpus["leftovers"], f"files left behind: {corpus['leftovers'][:20]}"


def test_the_official_tree_and_the_environment_are_unchanged(corpus):
    for before, after, what in zip(corpus["before"], corpus["after"], ("the official tree", "the venv"), strict=True):
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        assert not changed, f"{what} changed: {changed[:20]}"


def test_no_network_inside_the_namespaces(corpus):
    if "namespaces" not in sandbox.detect(corpus["mode"]).active:
        pytest.skip("no network namespace in this mode: the network is reachable (the case gains nothing)")
    assert corpus["connections"] == 0


# -- an ordinary user grading their own work ------------------------------------------------------------

ORDINARY_UID = sandbox.UID_BASE + 100


@pytest.fixture(scope="module")
def ordinary_user():
    why = available("user")
    if why:
        pytest.skip(f"cannot drop to an ordinary user with a readable installation here: {why}")
    tmp = Path(tempfile.mkdtemp(prefix="ra-ordinary-"))
    os.chmod(tmp, 0o755)
    (tmp / "submission").mkdir()
    shutil.copy(ROOT / "reference" / "flops.py", tmp / "submission" / "flops.py")
    os.chown(tmp, ORDINARY_UID, ORDINARY_UID)
    yield tmp
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.parametrize("mode", ["auto", "none"])
def test_an_ordinary_user_grades_their_own_work(ordinary_user, mode):
    out = ordinary_user / f"results-{mode}.json"
    done = run_grader(["grade", str(ordinary_user / "submission"), "--problem", "flops", "--out", str(out),
                       "--sandbox", mode], as_uid=ORDINARY_UID, view=True)
    stdout = done.stdout.decode(errors="replace")
    assert json.loads(out.read_text())["score"] == FLOPS_POINTS, stdout[-3000:] + done.stderr.decode()[-3000:]
    if mode == "none":
        assert stdout.startswith("no sandbox: "), "grading without a sandbox says so, in one line"


def test_batch_refuses_to_run_without_a_sandbox(tmp_path, monkeypatch, capsys):
    from grader import cli

    monkeypatch.setattr(sandbox, "detect", lambda mode: sandbox.Layers((), {"user": "not root", "namespaces": "no"}))
    (tmp_path / "alice").mkdir()
    assert cli.main(["batch", str(tmp_path), "--out", str(tmp_path / "grades")]) == 2
    assert "--no-sandbox" in capsys.readouterr().err
    assert not (tmp_path / "grades").exists(), "nothing was graded"
