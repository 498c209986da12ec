"""Helpers for the meta-tests: which problems have tests, running the suite in a subprocess, submissions
that carry catalogued mistakes."""

import ast
import os
import subprocess
import sys
from pathlib import Path

from tests.mistakes import find_mistake
from tests.registry import PROBLEMS
from tests.report import read_test_records

ROOT = Path(__file__).resolve().parents[2]
# The course secret of these tests. It is public, so it protects nothing: a course sets its own (grader/seed.py).
GRADING_SECRET = "the meta-tests' course secret, public"


def grader_env() -> dict[str, str]:
    """The environment the meta-tests run the grader in: none of this pytest's settings, the tests' secret."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "HYPOTHESIS", "RA_GRADING"))}
    return {**env, "RA_GRADING_SECRET": GRADING_SECRET}


def problems_with_tests() -> list[str]:
    return [p.id for p in PROBLEMS if (ROOT / p.test_file).exists()]


def run_suite(tmp_path: Path, *args: str, timeout: float = 900) -> list[dict]:
    """Run pytest in a subprocess with the report plugin; the per-test records."""
    report = tmp_path / "report.jsonl"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "--tb=no", "--hypothesis-profile=ci", f"--report={report}",
                    *args], cwd=ROOT, check=False, timeout=timeout, capture_output=True)
    if not report.exists():
        return []
    return read_test_records(report)


def planted_source(problem: str, mistake_ids: list[str]) -> str:
    """The source of a `problem` module that is the reference with the mistakes `mistake_ids` swapped in: the
    reference's source; `ref`, a snapshot of its names (what the catalogue's `ref.` means); the catalogue's
    imports and top-level definitions (not MISTAKES, not the reference's own names); then each replaced name
    bound to its mistake."""
    reference = (ROOT / "reference" / f"{problem}.py").read_text()
    defined = {n.name for n in ast.parse(reference).body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    catalogue = (ROOT / "tests" / "mistakes" / f"{problem}.py").read_text()
    lines = catalogue.splitlines()
    kept = []
    for node in ast.parse(catalogue).body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("reference", "tests"):
            continue
        if isinstance(node, ast.Assign | ast.Expr | ast.AnnAssign):  # MISTAKES, the docstring
            continue
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name in defined:
            continue
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        kept.append("\n".join(lines[start - 1:node.end_lineno]))
    bindings = []
    for mistake_id in mistake_ids:
        mistake = find_mistake(f"{problem}:{mistake_id}")
        for name, wrong in mistake.replaces.items():
            assert wrong.__name__ not in defined, f"{problem}:{mistake_id}: {wrong.__name__} is a reference name"
            bindings.append(f"{name} = {wrong.__name__}  # planted: {problem}:{mistake_id}")
    return "\n".join([reference, "", "# -- planted mistakes (tests/meta/test_class_report.py) --",
                      "import types as _planted_types", "",
                      "ref = _planted_types.SimpleNamespace(**dict(globals()))", "", *kept, "", *bindings, ""])
