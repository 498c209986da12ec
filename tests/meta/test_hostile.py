"""The public hostile corpus (tests/meta/hostile/, see its README) through the grader's sandbox.

Every case is appended to the untouched flops stub and graded in one `batch` with a copy of the reference,
twice: with every layer this machine allows (`--sandbox auto`; in CI, as root: a uid per grading and bwrap's
namespaces) and with the separate-user layer alone (`--sandbox user`, as on Gradescope, where namespaces
are not allowed). A last test runs the grader as an ordinary user, as a student grading their own work.
"""

import base64
import csv
import ctypes
import hashlib
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
import zlib
from pathlib import Path

import pytest

from grader import kept, messages
from grader.batch import webreport
from grader.fingerprints import cache as answers_cache
from grader.grading import FINGERPRINT_MIN_SECONDS, reserved
from grader.harness import sandbox, seccomp, uids
from grader.registry import BY_ID
from grader.sources import not_started
from tests.meta import bombs, rewrites, webpages
from tests.meta.suite import ROOT, grader_env

pytestmark = [pytest.mark.meta, pytest.mark.timeout(1800)]

HOSTILE = Path(__file__).parent / "hostile"
CASES = sorted(p.stem for p in HOSTILE.glob("*.py"))
REFERENCE = "reference-copy"
HONEST = "reference-with-honest-habits"
# An honest solution's unusual habits, appended to a copy of the reference: standard-library helpers that look
# at the platform or build classes, a thread pool, a cache, a finalizer and logging, in the calls graded; and (issue
# 53) a formula kept as a short string and evaluated without builtins, a frozen copy of a dict of ints through pickle,
# a ContextVar whose name holds the oracle's ("flop_counter"): none of them evidence.
HONEST_HABITS = """
import collections, contextvars, functools, logging, pickle, platform, typing, weakref
from concurrent.futures import ThreadPoolExecutor

_AS_TEXT = {"matmul": "2 * b * d * k"}  # a formula kept as text
_WIDTHS = pickle.loads(pickle.dumps({"mm": 2, "bmm": 3}))
_DEPTH = contextvars.ContextVar("flop_counter_depth", default=0)


def matmul_flops(b, d, k):
    depth = _DEPTH.set(_DEPTH.get() + 1)
    try:
        return eval(_AS_TEXT["matmul"], {"__builtins__": {}}, {"b": b, "d": d, "k": k}) * _WIDTHS["mm"] // 2
    finally:
        _DEPTH.reset(depth)

Number = typing.TypeVar("Number", int, float)
Layer = collections.namedtuple("Layer", "index fan_in fan_out")
_MACHINE = platform.processor()
_log = logging.getLogger("flops")


class _Record:
    pass


@functools.lru_cache(maxsize=1024)
def _cached_linear_flops(tokens, d_in, d_out):
    return linear_flops(tokens, d_in, d_out)


def mlp_training_flops(batch, dims):
    layers = [Layer(i, a, b) for i, (a, b) in enumerate(zip(dims, dims[1:]))]
    with ThreadPoolExecutor(2) as pool:
        per_layer = list(pool.map(
            lambda layer: (2 if layer.index == 0 else 3) * _cached_linear_flops(batch, layer.fan_in, layer.fan_out),
            layers))
    weakref.finalize(_Record(), _log.debug, "mlp_training_flops on %s: %s", _MACHINE, per_layer)
    return sum(per_layer)
"""
FLOPS_POINTS = BY_ID["flops"].points
JOBS = 2
TIME_LIMIT = 240  # seconds a case's grading may take, its results.json written within them
TIME_LIMIT_REACHED = messages.TIME_LIMIT_REACHED.format(seconds=TIME_LIMIT)
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


def leftovers(scratch: Path, tmp: Path) -> list[str]:
    """Files of a grading anywhere they could be left, by name and by owner: the grader's own temporary folder
    (`scratch`, its TMPDIR: a sandbox's folder, or a file of the submissions' uids or an attack's), and the
    shared temporary folders (`tmp` for /tmp: a file of the submissions' uids or an attack's). Other gradings
    may run beside this one (the meta-tests run in parallel): their folders and uids are not this run's."""
    ours = set(uids.sandbox_uids())  # every uid a grading of this run may have taken
    found = []
    for folder in [str(scratch), str(tmp), *sandbox.SHARED_TMP[1:]]:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if MARK in entry.name or entry.stat(follow_symlinks=False).st_uid in ours or \
                    (folder == str(scratch) and entry.name.startswith(sandbox.PREFIX)):
                found.append(entry.path)
    found += [f"System V {kind} {ipc_id}" for kind, ipc_id in uids.ipc_objects(ours)]
    found += kernel_leftovers()
    # what the grader keeps (pickles it loads, hypothesis' tables: grader/kept.py), as this machine's root has them
    for folder in (answers_cache.folder(), kept.folder("copycheck"), kept.folder("hypothesis")):
        found += [str(p) for p in folder.rglob("*")
                  if MARK in p.name or p.is_file() and MARK.encode() in p.read_bytes()]
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


def case_source(case: str, listener: str) -> str:
    """The case's submission: the flops stub with the attack appended, its placeholders filled in (the oracle's
    code is made from the installed torch here, never kept in the repository)."""
    attack = (HOSTILE / f"{case}.py").read_text().replace("__LISTENER__", listener)
    if '"__ENCODED_ORACLE__"' in attack:
        oracle = Path(rewrites.installed("torch/utils/flop_counter.py")).read_bytes()
        attack = attack.replace('"__ENCODED_ORACLE__"', repr(base64.b85encode(zlib.compress(oracle)).decode()))
    if "# __PADDED_ORACLE__" in attack:
        attack = attack.replace("# __PADDED_ORACLE__", rewrites.padded(rewrites.pasted_part("flops")))
    if "# __DISGUISED_ORACLE__" in attack:
        attack = attack.replace("# __DISGUISED_ORACLE__", rewrites.carriage_returns(rewrites.pasted_part("flops")))
    if '"__ZIPPED_ORACLE__"' in attack:
        oracle = Path(rewrites.installed("torch/utils/flop_counter.py")).read_bytes()
        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as packed:
            packed.writestr("ra_hostile_counter.py", oracle)
        attack = attack.replace('"__ZIPPED_ORACLE__"', repr(tuple(archive.getvalue())))
    return bombs.case((ROOT / "assignment" / "flops.py").read_text(), attack)  # its bombs made (tests/meta/bombs.py)


def build_corpus(folder: Path, listener: str) -> None:
    for case in CASES:
        (folder / case).mkdir(parents=True)
        (folder / case / "flops.py").write_text(case_source(case, listener))
    (folder / REFERENCE).mkdir()
    shutil.copy(ROOT / "reference" / "flops.py", folder / REFERENCE / "flops.py")
    (folder / HONEST).mkdir()
    (folder / HONEST / "flops.py").write_text((ROOT / "reference" / "flops.py").read_text() + HONEST_HABITS)


class MachineView:
    """A view of this machine as a Gradescope container is (bwrap options, run as root): the system, this
    installation, readable by any user, a /tmp of its own (the host folder `tmp`, so the test sees what the
    grader leaves there) and nothing else: no other copy of the project, no home folders. The folders on
    the way to the installation that others cannot cross are made crossable. Same pid namespace."""

    def __init__(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="ra-machine-"))
        os.chmod(self.tmp, 0o1777)

    def inside(self, path: Path) -> str:
        return str(Path("/tmp") / path.relative_to(self.tmp))

    def options(self) -> list[str]:
        return machine_view(installation(), self.tmp)

    def close(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


def machine_view(installation: list[Path], tmp: Path) -> list[str]:
    options = ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc", "--dev-bind", "/dev", "/dev",
               "--proc", "/proc", "--bind", str(tmp), "/tmp", "--bind", "/var/tmp", "/var/tmp",
               "--bind", "/run", "/run", *sandbox.system_links()]
    paths = [str(p) for p in installation if not str(p).startswith("/usr/")]
    opened = sandbox.open_folders(paths, below=["/"], except_in=paths)
    for i in range(0, len(opened), 4):  # ["--perms", "0755", "--dir", folder]: all but the view's own /tmp
        if opened[i + 3] != "/tmp":
            options += opened[i : i + 4]
    for path in paths:
        options += ["--bind", path, path]
    return options


def installation() -> list[Path]:
    return [ROOT, Path(sys.prefix), Path(sys.base_prefix), Path(os.path.realpath(sys.executable)).parent.parent]


def run_grader(args: list[str], *, as_uid: int | None = None, view: MachineView | None = None,
               timeout: float = 1500, cwd: Path = ROOT, tmpdir: str | None = None):
    """The grader's command line, as `as_uid`, in `view`, with `tmpdir` (as the grader sees it) as its TMPDIR."""
    env = grader_env() | ({"TMPDIR": tmpdir} if tmpdir else {})
    command = [sys.executable, "-m", "grader", *args]
    if as_uid is not None:
        command = ["setpriv", f"--reuid={as_uid}", f"--regid={as_uid}", "--clear-groups", "--", *command]
    if view:
        inside = view.inside(cwd) if cwd.is_relative_to(view.tmp) else str(cwd)
        command = ["bwrap", *view.options(), "--chdir", inside, "--", *command]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, timeout=timeout, check=False)


def run_corpus(tmp: Path, mode: str, view: MachineView | None) -> dict:
    before = snapshot()
    listener = Listener()
    build_corpus(tmp / "submissions", listener.address)
    out, scratch = tmp / "grades", tmp / "scratch"
    scratch.mkdir(mode=0o711)  # the sandbox's users cross it to their folders, and list nothing
    where = view.inside if view else str
    done = run_grader(["batch", where(tmp / "submissions"), "--out", where(out), "--problem", "flops",
                       "--jobs", str(JOBS), "--time-limit", str(TIME_LIMIT), "--sandbox", mode],
                      view=view, tmpdir=where(scratch))
    results = {p.parent.name: p.read_text() for p in out.glob("*/results.json")}
    time.sleep(3)  # whatever outlived the run would act now
    listener.close()
    return {
        "returncode": done.returncode, "stderr": done.stderr.decode(errors="replace"),
        "rows": {r["submission"]: r for r in csv.DictReader(open(out / "grades.csv"))} if done.returncode == 0 else {},
        "results": results, "results_later": {p.parent.name: p.read_text() for p in out.glob("*/results.json")},
        "report": (out / "report.md").read_text() if (out / "report.md").exists() else "",
        "alive": [described(pid) for pid in uids.processes_of(uids.sandbox_uids())],
        "leftovers": leftovers(scratch, view.tmp if view else Path("/tmp")), "before": before, "after": snapshot(),
        "connections": listener.connections, "web": web_report(out),
    }


def web_report(out: Path) -> dict:
    """What the class report's web pages (grader/batch/webreport.py) show of the corpus: markup that is not the
    writer's, links that lead nowhere, and whether report_planted_markup's message reads as text on a page."""
    if not (out / webreport.INDEX).exists():
        return {"missing": f"no {webreport.INDEX}"}
    shown = "\n".join(page.text for page in webpages.pages(out))
    return {"unexpected": webpages.unexpected_markup(out), "broken": webpages.broken_links(out),
            "planted": '<script>window.raPlanted = "message"' in shown}


def kernel_leftovers() -> list[str]:
    """What an attack left in the kernel rather than in a file (tests/meta/hostile/leave_kernel_state.py), looked
    for as the next grading would, without its filter: a key in the session keyring every worker inherits, or
    in the user or user-session keyring of a sandbox uid that has keys (/proc/key-users), searched by a child
    that takes the uid; a POSIX message queue of the attack's name."""
    libc = ctypes.CDLL(None, use_errno=True)
    keyctl = seccomp.number("keyctl")

    def search(keyring: int) -> bool:  # KEYCTL_SEARCH: the keyring and what it links
        return libc.syscall(keyctl, 10, keyring, b"user", f"{MARK}-channel".encode(), 0) > 0

    found = ["a key in the grader's session keyring"] if search(-3) else []
    with_keys = [int(line.split(":")[0]) for line in Path("/proc/key-users").read_text().splitlines()]
    for uid in set(with_keys) & set(uids.sandbox_uids()):
        child = os.fork()
        if child == 0:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            os._exit(1 if search(-4) or search(-5) else 0)
        if os.waitpid(child, 0)[1]:
            found.append(f"a key in the keyrings of uid {uid}")
    queue = libc.mq_open(f"/{MARK}-channel".encode(), os.O_RDONLY)
    if queue >= 0:
        os.close(queue)
        libc.mq_unlink(f"/{MARK}-channel".encode())  # gone, so that the next run starts clean
        found.append(f"the message queue /{MARK}-channel")
    return found


def described(pid: int) -> str:
    """A process as "pid: command line", so that a failure says what outlived the run."""
    try:
        return f"{pid}: " + Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return f"{pid}: (gone)"


def available(mode: str, view: MachineView | None = None) -> str | None:
    """Why the corpus cannot run in this mode here, or None."""
    if os.geteuid() != 0:
        return "the corpus runs the grader as root, as Gradescope and CI do"
    if mode == "user":
        if shutil.which("bwrap") is None:
            return "bwrap is needed to give the user layer a clean view of this machine"
        probe = run_grader(["doctor", "--sandbox", "user"], view=view, timeout=120)
        doctor = probe.stdout.decode(errors="replace")
        return None if "sandbox: limits + user" in doctor else doctor + probe.stderr.decode(errors="replace")
    layers = sandbox.detect(mode)
    return None if layers.sandboxed else layers.describe()


@pytest.fixture(scope="module")
def view():
    view = MachineView()
    yield view
    view.close()


REFERENCE_LINES = [line.strip() for line in (ROOT / "reference" / "flops.py").read_text().splitlines()
                   if len(line.strip()) > 30 and line.strip() not in (ROOT / "assignment" / "flops.py").read_text()]


class CorpusGraded:
    """What one grading of the corpus must show: a subclass per sandbox mode. Each mode is a class of its own so
    that the meta-tests' parallel workers (`--dist loadscope`: a module or a class to a worker) grade the two
    side by side. The slow tier (`make slow`, CI): about six minutes of a core per mode."""

    pytestmark = [pytest.mark.slow]
    mode = ""

    @pytest.fixture(scope="class")
    @classmethod
    def corpus(cls, view):
        why = available(cls.mode, view)
        if why:
            pytest.skip(f"--sandbox {cls.mode} is not available here: {why}")
        in_view = view if cls.mode == "user" else None
        tmp = Path(tempfile.mkdtemp(prefix="ra-corpus-", dir=view.tmp if in_view else None))
        os.chmod(tmp, 0o755)
        try:
            run = run_corpus(tmp, cls.mode, in_view)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        run["mode"] = cls.mode
        assert run["returncode"] == 0, run["stderr"][-3000:]
        return run

    @pytest.mark.parametrize("case", CASES)
    def test_no_attack_earns_a_point_or_leaks(self, corpus, case):
        row = corpus["rows"][case]
        flagged = "# expect: review" in (HOSTILE / f"{case}.py").read_text()  # the guard must report the case
        allowed = ("review",) if flagged else ("ok", "review")
        assert row["status"] in allowed, f"{case}: status {row['status']}\n{corpus['stderr'][-3000:]}"
        results = json.loads(corpus["results"][case])
        assert results["score"] == 0 and float(row["total"]) == 0, f"{case} gained points: {results['score']}"
        assert results["execution_time"] <= TIME_LIMIT, f"{case}: results.json after {results['execution_time']} s"
        assert results["tests"] and all(t["status"] == "failed" and t["score"] == 0 for t in results["tests"])
        assert corpus["results_later"][case] == corpus["results"][case], f"{case}: results.json changed afterwards"
        text = corpus["results"][case]
        leaked = [line for line in REFERENCE_LINES if line in text]
        assert not leaked, f"{case}: the reference's text reached results.json: {leaked[:3]}"
        assert "PYTEST_ADDOPTS" not in text and "hypothesis-profile" not in text, \
            f"{case}: the grader's settings leaked"

    @pytest.mark.parametrize("honest", [REFERENCE, HONEST])
    def test_the_reference_keeps_full_marks_beside_the_attacks(self, corpus, honest):
        # a copy of the reference, alone and with an honest solution's unusual habits: the copy check
        # (grader/copycheck.py) flags it, and nothing else does (the guard sees no evidence in the habits)
        assert corpus["rows"][honest]["status"] == "review"
        review = json.loads(corpus["results"][honest])["extra_data"]["review"]
        assert review and all(line.startswith("[copy] flops.py: ") and "reference/flops.py" in line for line in review)
        assert json.loads(corpus["results"][honest])["score"] == FLOPS_POINTS, corpus["results"][honest][-3000:]

    def test_the_attacks_ran_a_second_time_for_the_fingerprints(self, corpus):
        # the fingerprints run the functions of each problem a scored submission failed again, in a sandbox of
        # their own (grader/fingerprints/): every check of this corpus covers that second run too. An attack whose
        # functions are all the stub's (it acts at import) is graded as not started, and one whose module does not
        # import (it kills its own worker at import) as broken: neither is run again.
        assert "Fingerprints took" in corpus["report"], corpus["report"][-2000:]
        rerun = []
        for case in CASES:
            results = json.loads(corpus["results"][case])
            ran = results.get("extra_data", {}).get("fingerprints", {})
            broken = any(t["output"].count("Does not import: ") for t in results["tests"])
            # nothing left to run them again in: the limit reached, or its tests ended too near it (grader/grading.py
            # FINGERPRINT_MIN_SECONDS: a case whose calls sleep to their backstops ends where the machine's load says)
            out_of_time = TIME_LIMIT_REACHED in results["output"] or not ran and results["execution_time"] > \
                TIME_LIMIT - reserved(TIME_LIMIT) - FINGERPRINT_MIN_SECONDS
            expected = None if not_started(case_source(case, "")) or broken or out_of_time else ["flops"]
            assert ran.get("problems") == expected, f"{case}: fingerprints {ran or 'did not run'}, expected {expected}"
            assert not ran.get("error"), \
                f"{case}: the fingerprints failed on the grader's side\n{corpus['stderr'][-3000:]}"
            rerun += [case] * bool(expected)
        assert len(rerun) >= len(CASES) // 2, f"only {rerun} ran again"

    def test_the_class_reports_pages_show_what_was_planted_as_text(self, corpus):
        # every case's messages, and report_planted_markup's markup and script in them, on the pages of the class
        # report; in a browser: tests/meta/test_web_report.py
        web = corpus["web"]
        assert web.get("unexpected") == [] and web.get("broken") == [], web
        assert web["planted"], "report_planted_markup's message is not on its page"

    def test_nothing_of_the_run_is_alive_or_left_behind(self, corpus):
        assert not corpus["alive"], f"processes of the sandbox outlived the batch: {corpus['alive']}"
        assert not corpus["leftovers"], f"files left behind: {corpus['leftovers'][:20]}"

    def test_the_official_tree_and_the_environment_are_unchanged(self, corpus):
        for before, after, what in zip(corpus["before"], corpus["after"], ("the official tree", "the venv"),
                                       strict=True):
            changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
            assert not changed, f"{what} changed: {changed[:20]}"

    def test_no_network_inside_the_namespaces(self, corpus):
        if "namespaces" not in sandbox.detect(corpus["mode"]).active:
            pytest.skip("no network namespace in this mode: the network is reachable (the case gains nothing)")
        assert corpus["connections"] == 0


class TestWithEveryLayer(CorpusGraded):
    """The corpus graded with every layer this machine has."""

    mode = "auto"


class TestWithTheUserLayerAlone(CorpusGraded):
    """The corpus graded with the user layer alone, in a clean view of the machine (as in a container that
    refuses namespaces)."""

    mode = "user"


# -- an honest solution with unusual habits --------------------------------------------------------------

HONEST_SOLUTIONS = Path(__file__).parent / "honest"


def grade_in(view: MachineView, mode: str, fill, problems: list[str]) -> tuple[str, str, int]:
    """`grade` a submission that `fill(folder)` writes, on `problems`, in sandbox `mode` (user: in the machine
    view); skipped where the mode is not available. Returns the results.json text, what the grader printed, and
    its exit code."""
    why = available(mode, view)
    if why:
        pytest.skip(f"--sandbox {mode} is not available here: {why}")
    in_view = view if mode == "user" else None
    tmp = Path(tempfile.mkdtemp(prefix="ra-grade-in-", dir=view.tmp if in_view else None))
    os.chmod(tmp, 0o755)
    try:
        fill(tmp / "submission")
        where = view.inside if in_view else str
        done = run_grader(["grade", where(tmp / "submission"), *[a for p in problems for a in ("--problem", p)],
                           "--out", where(tmp / "results.json"), "--sandbox", mode], view=in_view)
        text = (tmp / "results.json").read_text()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    told = done.stdout.decode(errors="replace")[-3000:] + done.stderr.decode(errors="replace")[-3000:]
    return text, told, done.returncode


@pytest.mark.parametrize("mode", ["auto", "user"])
def test_an_honest_solution_with_unusual_habits_is_graded_in_full_and_not_flagged(view, mode):
    # written from the spec, not from the reference (the copy check finds nothing): status ok, not review
    text, told, returncode = grade_in(view, mode, lambda folder: shutil.copytree(HONEST_SOLUTIONS, folder), ["adamw"])
    results = json.loads(text)
    assert results["score"] == BY_ID["adamw"].points, told
    assert not results["extra_data"].get("review"), results["extra_data"]["review"]
    assert returncode == 0, told


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "user"])
def test_nothing_one_grading_leaves_reaches_the_next(view, mode):
    """Two gradings of leave_kernel_state in a row on this machine (the second would answer through whatever the
    first left in the kernel): neither earns a point, and nothing of either is left to find."""
    def fill(folder: Path) -> None:
        folder.mkdir()
        (folder / "flops.py").write_text(case_source("leave_kernel_state", "127.0.0.1:9"))

    for grading in ("first", "second"):
        text, told, _ = grade_in(view, mode, fill, ["flops"])  # flagged for review (ctypes): exit 4
        assert json.loads(text)["score"] == 0, f"the {grading} grading earned points: {told}"
    assert not kernel_leftovers()


# -- the fork server (grader/harness/forkserver.py) -------------------------------------------------------

# The problems' workers are forked in their group's order (grader/harness/client.py FORK_GROUPS): an attacker, an
# honest problem, the server's killer, an honest problem.
FORK_ORDER = ["einops_practice", "memory", "roofline", "gradient_accumulation"]
# Appended to the einops_practice stub, run in a worker forked from the grading's fork server: the server (its
# parent) must refuse its memory and its channel, and the next problem's worker must not see what this one
# changed in torch.
FORKED_ATTACK = """
import os as _os
import torch as _torch


def _outcome(action):
    try:
        action()
        return "done"
    except OSError as exc:
        return f"refused (errno {exc.errno})"


_SERVER = _os.getppid()
OUTCOMES = {"server memory": _outcome(lambda: open(f"/proc/{_SERVER}/mem", "r+b").close()),
            "server channel": _outcome(lambda: _os.listdir(f"/proc/{_SERVER}/fd"))}
_torch.Tensor.backward = lambda self, *args, **kwargs: None  # no gradients: inherited, memory's training step fails
_torch.set_default_dtype(_torch.float64)


def matmul(a, b):
    raise RuntimeError(f"forked worker's attack: {OUTCOMES}")
"""
# Appended to the roofline stub: the server killed, the problems after it are graded all the same.
SERVER_KILLED = """
import os as _os
import signal as _signal

_os.kill(_os.getppid(), _signal.SIGKILL)
"""


def attacks_on_the_fork_server(folder: Path) -> None:
    from grader.harness.client import FORK_GROUPS

    assert sorted(FORK_ORDER, key=FORK_GROUPS[0].index) == FORK_ORDER, "the roles follow the order of the forks"
    folder.mkdir()
    for problem in FORK_ORDER:
        shutil.copy(ROOT / "reference" / f"{problem}.py", folder / f"{problem}.py")
    for problem, attack in (("einops_practice", FORKED_ATTACK), ("roofline", SERVER_KILLED)):
        (folder / f"{problem}.py").write_text((ROOT / "assignment" / f"{problem}.py").read_text() + attack)


@pytest.mark.parametrize("mode", ["auto", "user"])
def test_a_forked_worker_cannot_reach_its_server_nor_the_next_problem(view, mode):
    text, told, _ = grade_in(view, mode, attacks_on_the_fork_server, FORK_ORDER)
    assert "'server memory': 'refused (errno 13)'" in text, told
    assert "'server channel': 'refused (errno 13)'" in text, told
    assert "'server memory': 'done'" not in text and "'server channel': 'done'" not in text, told
    results = json.loads(text)
    for problem in ("memory", "gradient_accumulation"):  # after each attack: the reference's full marks
        earned = sum(t["score"] for t in results["tests"] if t["name"].startswith(problem + ":"))
        assert earned == BY_ID[problem].points, (problem, told)


# Appended to the adamw stub, the first problem of the shared world (grader/registry.py
# SHARED_WORLD), whose workers are forked from one server: the oracles of the other two are absent from it too,
# files and all, though neither is its own.
SHARED_WORLD_ATTACK = """
import os as _os
import torch as _torch


def _read(*parts):  # through libc, below the guard's hooks: what the kernel allows
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.open(_os.path.join(_os.path.dirname(_torch.__file__), *parts).encode(), _os.O_RDONLY)
    if fd < 0:
        return f"refused (errno {ctypes.get_errno()})"
    buffer = ctypes.create_string_buffer(1 << 16)
    return f"read {libc.read(fd, buffer, len(buffer))} bytes"


def _use(action):
    try:
        action()
        return "ran"
    except RuntimeError as exc:
        return "absent" if "not available to the code under test" in str(exc) else repr(exc)


READS = {"checkpoint": _read("utils", "checkpoint.py"), "flop_counter": _read("utils", "flop_counter.py"),
         "checkpoint()": _use(lambda: _torch.utils.checkpoint.checkpoint(_torch.sin, _torch.zeros(1),
                                                                          use_reentrant=False))}


class AdamW:
    def __init__(self, *args, **kwargs):
        raise RuntimeError(f"shared world's attack: {READS}")
"""


def attack_from_the_shared_world(folder: Path) -> None:
    folder.mkdir()
    for problem in ("flops", "activation_checkpointing"):
        shutil.copy(ROOT / "reference" / f"{problem}.py", folder / f"{problem}.py")
    stub = (ROOT / "assignment" / "adamw.py").read_text()
    (folder / "adamw.py").write_text(stub + SHARED_WORLD_ATTACK)


@pytest.mark.parametrize("mode", ["auto", "user"])
def test_the_shared_world_keeps_every_oracle_of_its_problems_out(view, mode):
    from grader.harness.client import FORK_GROUPS

    assert FORK_GROUPS[1][0] == "adamw", "the attack is made by the first problem the shared world's server forks"
    text, told, _ = grade_in(view, mode, attack_from_the_shared_world, ["adamw", "flops", "activation_checkpointing"])
    assert "shared world's attack" in text, told
    for oracle in ("checkpoint", "flop_counter"):  # masked (/dev/null) or denied by an ACL entry (user layer)
        assert f"'{oracle}': 'read 0 bytes'" in text or f"'{oracle}': 'refused (errno 13)'" in text, told
    assert "'checkpoint()': 'absent'" in text, told
    results = json.loads(text)
    for problem in ("flops", "activation_checkpointing"):  # graded after it, in the same world: full marks
        earned = sum(t["score"] for t in results["tests"] if t["name"].startswith(problem + ":"))
        assert earned == BY_ID[problem].points, (problem, told)


# -- an ordinary user grading their own work ------------------------------------------------------------

ORDINARY_UID = uids.UID_BASE + uids.UID_RANGE + 100  # no grading's uid


@pytest.fixture(scope="module")
def ordinary_user(view):
    why = available("user", view)
    if why:
        pytest.skip(f"cannot drop to an ordinary user with a readable installation here: {why}")
    tmp = Path(tempfile.mkdtemp(prefix="ra-ordinary-", dir=view.tmp))
    os.chmod(tmp, 0o755)
    # their own checkout (the grader is run from it), using this virtual environment
    shutil.copytree(ROOT, tmp / "checkout", ignore=shutil.ignore_patterns(".venv", ".git", *CACHES))
    (tmp / "submission").mkdir()
    shutil.copy(ROOT / "reference" / "flops.py", tmp / "submission" / "flops.py")
    for folder, dirs, files in os.walk(tmp):
        for name in [folder, *[os.path.join(folder, n) for n in dirs + files]]:
            os.chown(name, ORDINARY_UID, ORDINARY_UID)
    yield tmp
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.parametrize("mode", ["auto", "none"])
def test_an_ordinary_user_grades_their_own_work(view, ordinary_user, mode):
    out = ordinary_user / f"results-{mode}.json"
    done = run_grader(["grade", view.inside(ordinary_user / "submission"), "--problem", "flops",
                       "--out", view.inside(out), "--sandbox", mode, "--local"], as_uid=ORDINARY_UID, view=view,
                      cwd=ordinary_user / "checkout")
    stdout = done.stdout.decode(errors="replace")
    assert json.loads(out.read_text())["score"] == FLOPS_POINTS, stdout[-3000:] + done.stderr.decode()[-3000:]
    if mode == "none":
        assert stdout.startswith("no sandbox: "), "grading without a sandbox says so, in one line"
    assert f"{ordinary_user.name}/checkout/assignment" not in done.stderr.decode(), "graded with its own checkout"


def test_batch_refuses_to_run_without_a_sandbox(tmp_path, monkeypatch, capsys):
    from grader import cli

    monkeypatch.setattr(sandbox, "detect", lambda mode: sandbox.Layers((), {"user": "not root", "namespaces": "no"}))
    monkeypatch.setenv("RA_GRADING_SECRET", grader_env()["RA_GRADING_SECRET"])
    (tmp_path / "alice").mkdir()
    assert cli.main(["batch", str(tmp_path), "--out", str(tmp_path / "grades")]) == 2
    assert "--no-sandbox" in capsys.readouterr().err
    assert not (tmp_path / "grades").exists(), "nothing was graded"


# -- channels between two gradings (issue 53) ---------------------------------------------------------------------

# Files every sandbox binds and no grading reads: the page cache's bits. Both sides find them under torch's folder.
CHANNEL_FILES = """
import os as _os
import torch as _torch

_FOLDER = _os.path.join(_os.path.dirname(_torch.__file__), "include", "c10", "util")
_FILES = sorted(_os.path.join(_FOLDER, name) for name in _os.listdir(_FOLDER)
                if name.endswith(".h") and _os.path.getsize(_os.path.join(_FOLDER, name)) > 8192)[:16]
_PATTERN = [1, 0, 1, 1, 0, 0, 1, 0, 1, 0, 0, 1, 1, 1, 0, 1]
"""
# The probe: a first read of each file timed (a cached page is read in microseconds, one from the disk in many
# more), against reads of a file that is certainly cached; and preadv2(RWF_NOWAIT), which fails where a page is not.
PROBE_TRIES = 5  # the control's tries: the probe in the test process must read a planted pattern once
PROBE = """
import ctypes as _ctypes
import time as _time


def _first_read_ns(path):
    fd = _os.open(path, _os.O_RDONLY)
    try:
        start = _time.perf_counter_ns()
        _os.pread(fd, 4096, 0)
        return _time.perf_counter_ns() - start
    finally:
        _os.close(fd)


def _probe(files):
    cached = sorted(_first_read_ns(_os.__file__) for _ in range(15))[7]
    threshold = max(20_000, 4 * cached)
    bits = [int(_first_read_ns(path) < threshold) for path in files]
    libc = _ctypes.CDLL(None, use_errno=True)
    buffer = _ctypes.create_string_buffer(4096)
    iov = (_ctypes.c_void_p * 2)(_ctypes.addressof(buffer), 4096)
    fd = _os.open(files[0], _os.O_RDONLY)
    nowait = libc.syscall(__PREADV2__, fd, iov, 1, 0, 0, 8)
    _os.close(fd)
    return bits, "refused" if nowait == -1 and _ctypes.get_errno() == 1 else "answered"
"""
# One grading's worker plants every kind of channel it can: pages of the channel's files evicted where the bit is 0
# (fadvise, madvise: refused) and read where it is 1; its fork server's limits, priority and signals by a pipe's
# owner (refused: another uid, and the filter); a key in each keyring it has (refused).
PLANT = """
import fcntl as _fcntl
import mmap as _mmap
import signal as _signal


def _outcome(action):
    try:
        result = action()
        return "done" if result in (None, 0) or result is True else f"returned {result}"
    except OSError as exc:
        return f"errno {exc.errno}"


def _plant():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long

    def call(*args):
        return 0 if libc.syscall(*args) == 0 else f"errno {ctypes.get_errno()}"

    found = {}
    for bit, path in zip(_PATTERN, _FILES):
        fd = _os.open(path, _os.O_RDONLY)
        if bit:
            _os.pread(fd, 1 << 20, 0)
        else:
            found.setdefault("fadvise", _outcome(lambda: _os.posix_fadvise(fd, 0, 0, _os.POSIX_FADV_DONTNEED)))
            view = _mmap.mmap(fd, 0, prot=_mmap.PROT_READ)
            found.setdefault("madvise", _outcome(lambda: view.madvise(21)))  # MADV_PAGEOUT
            view.close()
        _os.close(fd)
    server = _os.getppid()
    read, write = _os.pipe()
    found["F_SETOWN server"] = _outcome(lambda: _fcntl.fcntl(read, _fcntl.F_SETOWN, server))
    found["F_SETSIG"] = _outcome(lambda: _fcntl.fcntl(read, 10, _signal.SIGSTOP))
    found["prlimit server"] = call(__PRLIMIT__, server, 7, ctypes.create_string_buffer(b"\\0" * 16), None)
    found["setpriority server"] = _outcome(lambda: _os.setpriority(_os.PRIO_PROCESS, server, 19))
    found["kill server"] = _outcome(lambda: _os.kill(server, _signal.SIGSTOP))
    found["add_key"] = call(__ADD_KEY__, b"user", b"ra-hostile-channel", b"1", 1, -4)
    found["uids"] = [_os.getuid(), int(open(f"/proc/{server}/status").read().split("Uid:")[1].split()[0])]
    return found


PLANTED = _plant()


def matmul_flops(b, d, k):
    raise RuntimeError(f"channel planted: {PLANTED}")
"""
# The next grading's worker: what it finds of each.
FIND = """
import resource as _resource


def _find():
    bits, nowait = _probe(_FILES)
    server = _os.getppid()
    return {"bits": bits, "RWF_NOWAIT": nowait, "nofile": _resource.getrlimit(_resource.RLIMIT_NOFILE)[0],
            "nice": _os.getpriority(_os.PRIO_PROCESS, 0),
            "server state": open(f"/proc/{server}/stat").read().rsplit(")", 1)[1].split()[0]}


FOUND = _find()


def matmul_flops(b, d, k):
    raise RuntimeError(f"channel found: {FOUND}")
"""


def channel_case(part: str) -> str:
    from grader.harness import seccomp

    code = CHANNEL_FILES + PROBE + part
    for name in ("preadv2", "prlimit64", "add_key"):
        code = code.replace(f"__{name.upper().removesuffix('64')}__", str(seccomp.number(name)))
    return (ROOT / "assignment" / "flops.py").read_text() + code


def reported(text: str, marker: str) -> dict:
    """The dict a case's error message reports after `marker`, from its results.json."""
    import ast as _ast

    outputs = " ".join(t["output"] for t in json.loads(text)["tests"])
    tail = outputs.split(marker, 1)[1]
    return _ast.literal_eval(tail[: tail.index("}") + 1])


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["auto", "user"])
def test_no_channel_reaches_the_next_grading(view, mode):
    """Each kind of channel planted under one grading and probed from the next (issue 53): the page cache (pages of
    files no grading reads, evicted or read by the bits of a pattern), signals by a pipe's owner, limits and
    priority of another process, keyrings (a key, and the two empty keyrings each sandbox uid kept): each finds
    nothing. The page cache is probed by RWF_NOWAIT (refused) and by timing first reads, which would read the pattern
    if the grader did not read every file of the view into the cache before any worker runs: the same probe in this
    process, after this process evicts the files of the pattern's zeros, reads it."""
    namespace: dict = {}
    exec(CHANNEL_FILES + PROBE.replace("__PREADV2__", str(seccomp.number("preadv2"))), namespace)  # noqa: S102
    files, pattern = namespace["_FILES"], namespace["_PATTERN"]
    for path in files:  # every bit at 0, as if evicted: the sender could only ever set ones
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)

    def fill(part):
        def write(folder: Path) -> None:
            folder.mkdir()
            (folder / "flops.py").write_text(channel_case(part))
        return write

    planted_text, told, _ = grade_in(view, mode, fill(PLANT), ["flops"])
    planted = reported(planted_text, "channel planted: ")
    worker_uid, server_uid = planted.pop("uids")
    assert planted.pop("F_SETSIG") == "done", planted  # which signal the owner gets: the owner can only be itself
    assert all(outcome == "errno 1" for outcome in planted.values()), planted  # the kernel refused each
    assert worker_uid != server_uid, "the fork server runs as a uid of its own"
    for uid in (worker_uid, server_uid):  # no keyring kept, not even the two empty ones the kernel makes for a uid:
        token = uids.uid_token(uid)  # held while it is looked at, so that no other grading takes the uid meanwhile
        if token is not None:
            try:
                assert not uids.key_users().get(uid), f"uid {uid} keeps {uids.key_users()[uid]} keys"
            finally:
                os.close(token)
    found_text, told, _ = grade_in(view, mode, fill(FIND), ["flops"])
    found = reported(found_text, "channel found: ")
    assert found["RWF_NOWAIT"] == "refused", found
    # every page read into the cache before the worker ran: all ones (a machine that reclaims the cache under
    # pressure of its own may have dropped some since, at random: never the pattern, nor its complement)
    assert found["bits"] not in (pattern, [1 - bit for bit in pattern]), "the first reads found the pattern"
    assert found["nofile"] == sandbox.OPEN_FILES and found["nice"] == 0 and found["server state"] in "RS", found
    # the probe itself reads a pattern wherever the cache holds one: once in a few tries, as a timing on a busy
    # machine can take a cached read for a slow one (what it proves is that the probe can read, once is enough)
    read = []
    for _ in range(PROBE_TRIES):
        for bit, path in zip(pattern, files, strict=True):
            fd = os.open(path, os.O_RDONLY)
            if bit:
                os.pread(fd, 1 << 20, 0)
            else:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
        read.append(namespace["_probe"](files)[0])
        if read[-1] == pattern:
            break
    assert read[-1] == pattern, f"the timing probe reads what the cache holds: {pattern} planted, {read} read"
