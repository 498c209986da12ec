"""The student release (grader/staff/release.py), built into a temporary folder and used the way a student would.

It is the packaging and the tree under test, not pip's download: the release gets a virtual environment of
its own whose only link to the installed dependencies is a .pth line naming this interpreter's
site-packages (whose own .pth files, this project's editable install among them, are not read: the
reference stays out of reach), then `make venv` runs in it offline (`pip install -e . --no-deps
--no-build-isolation --no-index`). The suite runs with the `mutation` profile (10 derandomized examples):
what is checked is which tests fail, pass or skip, not how hard they try.
"""

import ast
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from grader.harness import boundary
from grader.harness.report import read_test_records
from grader.messages import LOCAL_TESTS_ONLY
from grader.registry import BY_ID, PROBLEMS
from grader.staff import release
from tests.meta import processes
from tests.meta.suite import ROOT, problems_with_tests, profile_env

# These build a tree and run suites in subprocesses: past the per-test default of 120 s on a loaded machine.
pytestmark = [pytest.mark.meta, pytest.mark.timeout(1200)]

PROFILE = "mutation"  # the hypothesis profile, in the environment (suite.profile_env)


def student_env() -> dict[str, str]:
    """A student's environment: none of this pytest's settings, and no course secret."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "HYPOTHESIS", "RA_GRADING"))}


def run(command: list[str], cwd: Path, timeout: float = 600, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, env=kw.pop("env", student_env()), capture_output=True, text=True,
                          timeout=timeout, check=False, **kw)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The release, written by the command, with its .venv made by its own `make venv` (offline)."""
    out = tmp_path_factory.mktemp("release") / "student-repo"
    done = run([sys.executable, "-m", "grader", "release", str(out)], cwd=ROOT)
    assert done.returncode == 0, done.stderr
    venv = out / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = Path(subprocess.run([venv / "bin/python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "_installed_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return out


@pytest.fixture(scope="module")
def installed(built):
    """The release after `make venv`: its Makefile's own install, offline."""
    make = run(["make", "venv", f"PYTHON={sys.executable}",
                "PIP_OPTIONS=--quiet --no-deps --no-build-isolation --no-index"], cwd=built)
    assert make.returncode == 0, make.stdout + make.stderr
    return built


@pytest.fixture(scope="module")
def solved(installed, tmp_path_factory):
    """A copy of the release with the reference's modules dropped into its assignment/."""
    tree = tmp_path_factory.mktemp("solved") / "student-repo"
    shutil.copytree(installed, tree, ignore=shutil.ignore_patterns(".venv"))
    for problem in PROBLEMS:
        shutil.copy(ROOT / "reference" / f"{problem.module}.py", tree / "assignment")
    return tree


def python_of(release_root: Path) -> str:
    return str(release_root / ".venv" / "bin" / "python")


def run_suite(tree: Path, python: str, tmp_path: Path) -> list[dict]:
    report = tmp_path / "report.jsonl"
    env = profile_env(PROFILE, {**student_env(), "PYTHONPATH": str(tree)})  # this tree first, whichever release
    done = run([python, "-m", "pytest", "-q", "--tb=line", f"--report={report}"], cwd=tree, env=env)
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    return read_test_records(report)


# -- what it holds ----------------------------------------------------------------------------------

def test_the_release_holds_the_student_files_and_no_solution(built):
    for entry in ("assignment/flops.py", "assignment/given.py", "tests/test_flops.py", "grader/harness/plugin.py",
                  "grader/cli.py", "grader/grading.py", "grader/harness/worker.py", "handout.md", "README.md",
                  "Makefile", "pyproject.toml", "conftest.py"):
        assert (built / entry).is_file(), f"{entry} is missing from the release"
    for withheld in release.WITHHELD:
        assert not (built / withheld).exists(), f"{withheld} must not be in the release"
    assert release.check(built) == []
    sources = {p: p.read_text() for p in built.rglob("*.py") if ".venv" not in p.parts}
    for path, source in sources.items():  # the same, said independently of release.check
        imported = {n.module for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom) and n.module} | \
                   {a.name for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Import) for a in n.names}
        # the catalogue, only where it runs where present (inside functions: test_layering.py)
        catalogue = path.relative_to(built).as_posix() not in boundary.RUN_WHERE_PRESENT
        assert not {m for m in imported if m.split(".")[0] == "reference" or
                    (catalogue and m.startswith("tests.mistakes"))}, path
    assert "grading-secret" not in {p.name for p in built.rglob("*")}
    pyproject = (built / "pyproject.toml").read_text()
    assert '"reference"' not in pyproject and "samples" not in pyproject


def test_the_check_finds_a_copied_reference_function_renamed_and_redocumented(built, tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(built, tree, ignore=shutil.ignore_patterns(".venv"))
    reference = ast.parse((ROOT / "reference" / "flops.py").read_text())
    function = next(n for n in reference.body if isinstance(n, ast.FunctionDef) and len(n.body) > 2)
    function.name = "helper_of_my_own"
    if ast.get_docstring(function) is not None:
        function.body.pop(0)
    function.body.insert(0, ast.Expr(ast.Constant("A docstring of my own.")))
    (tree / "tests" / "helpers_of_mine.py").write_text(ast.unparse(function) + "\n")
    found = release.check(tree)
    assert any("helpers_of_mine.py:helper_of_my_own" in p and "reference/flops.py" in p for p in found), found


def test_trivial_bodies_are_exempt_and_computations_are_not():
    exempt = ["raise NotImplementedError", "raise NotImplementedError('matmul_flops')", "pass", "return self.inner",
              "return matmul_flops(tokens, d_in, d_out)", "return None"]
    compared = ["return 2 * b * d * k", "return f(x + 1)", "x = 1\nreturn x", "return [a, b]",
                "if a:\n    return 1"]
    for body in exempt:
        assert release.is_trivial(ast.parse(body).body), body
    for body in compared:
        assert not release.is_trivial(ast.parse(body).body), body


def test_release_refuses_a_folder_that_is_not_empty(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine")
    done = run([sys.executable, "-m", "grader", "release", str(tmp_path / "out")], cwd=ROOT)
    assert done.returncode == 2 and "not an empty folder" in done.stderr
    assert (tmp_path / "out" / "notes.txt").read_text() == "mine"


# -- it installs ------------------------------------------------------------------------------------

def test_make_venv_installs_the_release_itself(installed):
    python = python_of(installed)
    probe = "import assignment, grader, importlib.util; print(assignment.__file__, grader.__file__, " \
            "importlib.util.find_spec('reference'))"
    where = run([python, "-c", probe], cwd=installed.parent).stdout.split()
    assert where == [str(installed / "assignment" / "__init__.py"), str(installed / "grader" / "__init__.py"),
                     "None"], where
    helped = run([str(installed / ".venv" / "bin" / "resource-grader"), "--help"], cwd=installed)
    assert helped.returncode == 0 and "grade" in helped.stdout
    assert "gradescope" not in helped.stdout and "release OUT" not in helped.stdout, helped.stdout
    demo = run([python, "-m", "tests.roofline_demo", "--impl", "reference"], cwd=installed)
    assert demo.returncode == 2 and "invalid choice: 'reference'" in demo.stderr, demo.stderr
    dry = run(["make", "-n", "venv", "-B"], cwd=installed)
    assert "-m pip install" in dry.stdout and "-e ." in dry.stdout and "download.pytorch.org/whl/cpu" in dry.stdout


# -- its tests --------------------------------------------------------------------------------------

def test_every_graded_test_fails_on_the_stubs_and_differential_ones_skip(installed, tmp_path):
    records = run_suite(installed, python_of(installed), tmp_path)
    graded = [r for r in records if r["problem"] and not r["gpu"]]
    assert {r["problem"] for r in graded} == set(problems_with_tests())
    local = [r for r in graded if not r["differential"]]
    assert local and [r["nodeid"] for r in local if r["outcome"] != "failed"] == []
    differential = [r for r in graded if r["differential"]]
    assert differential, "the differential tests must stay in the release (and skip)"
    assert all(r["outcome"] == "skipped" and "needs the reference solution" in r["message"] for r in differential)
    assert not [r["nodeid"] for r in records if r["outcome"] == "error"]


def test_the_reference_dropped_in_passes_every_local_test(installed, solved, tmp_path):
    records = run_suite(solved, python_of(installed), tmp_path)
    graded = [r for r in records if r["problem"] and not r["gpu"]]
    assert {r["problem"] for r in graded} == set(problems_with_tests())
    failing = [f"{r['nodeid']}: {r['message'][:300]}" for r in graded
               if not r["differential"] and r["outcome"] != "passed"]
    assert not failing, "\n".join(failing)


def test_plain_pytest_ends_a_loop_by_itself_naming_the_limit(installed, solved, tmp_path):
    """A student's infinite loop in a generated test, under plain `pytest`: the test fails at its time limit (set to
    5 s here) with a message that names it and `--isolated`, and the run goes on. pytest-timeout's own failure was
    caught by hypothesis, which ran the looping example again with no alarm left: the run never ended."""
    tree = tmp_path / "student-repo"
    shutil.copytree(solved, tree)
    module = tree / "assignment" / "roofline.py"
    header = "def relu_cost(n: int, dtype: torch.dtype) -> OpCost:\n"
    module.write_text(module.read_text().replace(header, header + "    while True:\n        pass\n", 1))
    env = {**student_env(), "PYTHONPATH": str(tree)}
    # the run ends within a minute of CPU time, its loop's 5 s and its start included (a replayed loop ran forever)
    done = processes.run([python_of(installed), "-m", "pytest", "-q", "-m", "roofline", "-k",
                          "test_relu_cost or test_dot_cost", "-o", "timeout=5"], cwd=tree, env=env, cpu_seconds=60,
                         capture_output=True, text=True)
    assert "used more than 5 s of CPU time and was stopped" in done.stdout and "--isolated" in done.stdout, \
        done.stdout[-3000:]
    assert "1 failed, 1 passed" in done.stdout, done.stdout[-3000:]  # the next test ran


# -- its grader -------------------------------------------------------------------------------------

def grade_in(tree: Path, python: str, tmp_path: Path, *options: str) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / "results.json"
    # --no-sandbox: a student's own machine has none (not root), and the sandbox's read-only view would lack the
    # installed dependencies that this venv reaches through its .pth line (the sandbox has meta-tests of its own)
    done = run([python, "-m", "grader", "grade", "--problem", "tensors", "--no-sandbox", "--out", str(out), *options],
               cwd=tree,
               env={**student_env(), "PYTHONPATH": str(tree)})
    assert out.exists(), done.stdout + done.stderr
    return done, json.loads(out.read_text())


@pytest.mark.parametrize("options", [(), ("--local",)], ids=["grade", "grade-local"])
def test_grade_runs_the_local_tests_and_says_so(installed, tmp_path, options):
    done, results = grade_in(installed, python_of(installed), tmp_path, *options)
    assert done.returncode == 0, done.stderr
    assert "total" in done.stdout and LOCAL_TESTS_ONLY in done.stdout
    assert results["score"] == 0 and results["tests"]
    assert not [t["name"] for t in results["tests"] if t["status"] != "failed"]


def test_grade_gives_the_dropped_in_reference_every_local_point(installed, solved, tmp_path):
    done, results = grade_in(solved, python_of(installed), tmp_path)
    assert done.returncode == 0, done.stderr
    assert results["score"] == BY_ID["tensors"].points, [t for t in results["tests"] if t["status"] != "passed"]
    assert LOCAL_TESTS_ONLY in results["output"]
