"""Run the official tests on a workspace, isolated, and read back what each test did."""

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Limits:
    submission_seconds: float = 600.0  # the whole run
    test_seconds: float = 60.0  # one test (pytest-timeout)
    call_seconds: float = 10.0  # one call into the code under test
    worker_memory_mb: int = 3072  # address space of the worker (torch alone maps ~0.6 GiB)


@dataclass
class RunResult:
    collected: list[dict] = field(default_factory=list)
    records: dict[str, dict] = field(default_factory=dict)
    seconds: float = 0.0
    timed_out: bool = False
    exit_code: int | None = None
    log: str = ""


def run_tests(workspace: Path, limits: Limits, *, markers: str | None = None, profile: str = "grade") -> RunResult:
    """pytest on the workspace's official tests against its `assignment/`, in isolated mode."""
    report = workspace / "report.jsonl"
    command = [sys.executable, "-m", "pytest", "--impl", "assignment", "--isolated", f"--hypothesis-profile={profile}",
               f"--report={report}", "-q", "--tb=no", "--no-header", "-p", "no:cacheprovider",
               f"--timeout={limits.test_seconds:g}", f"--call-timeout={limits.call_seconds:g}",
               f"--worker-memory-mb={limits.worker_memory_mb}", "tests"]
    if markers:
        command += ["-m", markers]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "HYPOTHESIS"))}
    env.update(PYTHONPATH=str(workspace), PYTHONDONTWRITEBYTECODE="1")
    result = RunResult()
    start = time.monotonic()
    process = subprocess.Popen(command, cwd=workspace, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               start_new_session=True)
    try:
        output, _ = process.communicate(timeout=limits.submission_seconds)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        result.timed_out = True
    result.seconds = time.monotonic() - start
    result.exit_code = process.returncode
    result.log = output.decode(errors="replace")[-20_000:]
    if report.exists():
        for line in report.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if "collected" in record:
                result.collected = record["collected"]
            else:
                result.records[record["nodeid"]] = record
    return result
