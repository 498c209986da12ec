"""Helpers for the meta-tests: which problems have tests, running the suite in a subprocess."""

import os
import sys
from pathlib import Path

from grader.harness.report import read_test_records
from grader.registry import PROBLEMS
from tests.meta import processes

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "grader" / "staff" / "samples" / "partial"  # a partial submission: make grade, the staff tools
# The course secret of these tests. It is public, so it protects nothing: a course sets its own (grader/seed.py).
GRADING_SECRET = "the meta-tests' course secret, public"


def grader_env() -> dict[str, str]:
    """The environment the meta-tests run the grader in: none of this pytest's settings, the tests' secret."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "HYPOTHESIS", "RA_GRADING"))}
    return {**env, "RA_GRADING_SECRET": GRADING_SECRET}


def problems_selected(request, fixture: str) -> list[str] | None:
    """The problems of the tests this session runs that use `fixture`, each parametrized by a catalogued `mistake`:
    `-k <problem>` makes the fixture's work one problem's. None (all) where such a test is of no one mistake."""
    problems = set()
    for item in request.session.items:
        if fixture in getattr(item, "fixturenames", ()):
            mistake = item.callspec.params.get("mistake") if hasattr(item, "callspec") else None
            if mistake is None:
                return None
            problems.add(mistake.problem)
    return sorted(problems)


def problems_with_tests() -> list[str]:
    return [p.id for p in PROBLEMS if (ROOT / p.test_file).exists()]


def profile_env(profile: str, env: dict | None = None) -> dict:
    """`env` (default: this process's) with pytest's hypothesis profile in PYTEST_ADDOPTS, as the grader passes its
    options (grader/runner.py): an environment only its own uid reads, where a command line is anyone's to read. A
    sandboxed worker with the user layer alone sees the machine's processes, and the hostile corpus's
    reach_environ_cmdline must not find a neighbouring meta-test's settings there."""
    return {**(os.environ if env is None else env), "PYTEST_ADDOPTS": f"--hypothesis-profile={profile}"}


def run_suite(tmp_path: Path, *args: str, cpu_seconds: float = 900) -> list[dict]:
    """Run pytest in a subprocess with the report plugin, within `cpu_seconds` of its whole tree
    (tests/meta/processes.py); the per-test records."""
    report = tmp_path / "report.jsonl"
    processes.run([sys.executable, "-m", "pytest", "-q", "--tb=no", f"--report={report}", *args], cwd=ROOT,
                  cpu_seconds=cpu_seconds, capture_output=True, env=profile_env("ci"))
    if not report.exists():
        return []
    return read_test_records(report)
