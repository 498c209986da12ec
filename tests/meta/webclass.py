"""The class whose web report the browser opens: tests/meta/test_web_report.py's slow test, and the screenshots of
docs/tas.md (tests/meta/report_screenshots.py).

tests/meta/test_class_report.py's class (the reference, the stubs, two submissions of the reference with catalogued
flops mistakes planted: a cluster of three copies, each flagged as a copy of the reference), and three more: the
hostile corpus' case tests/meta/hostile/report_planted_markup.py (markup and script in its source and in every
message its failures earn) with code of its own, under a name of markup; a classmate who copied it (the pair shows
its source side by side); and a submission whose only file is named with markup (nothing uploaded: the feedback
names the files it holds).
"""

import random
import subprocess
import sys
import time
from pathlib import Path

from tests.meta import classmates
from tests.meta.suite import ROOT, grader_env
from tests.meta.test_class_report import PLANTED, make_class
from tests.meta.test_hostile import case_source

CASE = "report_planted_markup"
HOSTILE = '<svg onload="window.raPlanted = \'name\'"> & <b>co'  # a name holds no "/"
COPIER = "copied-the-markup"
FILE = '<img src=x onerror="window.raPlanted = \'file\'">.py'
NOTHING = "nothing-uploaded"
STUDENTS = ["reference", "stubs", *PLANTED, HOSTILE, COPIER, NOTHING]


def build(folder: Path, listener: str) -> None:
    """The class's submissions in `folder`; `listener`: the loopback address the planted scripts would ask."""
    make_class(folder)
    own = "\n\n".join(classmates.own_code(random.Random(55), functions=6))
    source = case_source(CASE, listener) + "\n\n" + own
    for name in (HOSTILE, COPIER):
        (folder / name).mkdir()
        (folder / name / "flops.py").write_text(source)
    (folder / NOTHING).mkdir()
    (folder / NOTHING / FILE).write_text("print('not a problem module')\n")


def graded(tmp: Path, listener: str) -> Path:
    """The class built in tmp/submissions and graded by `batch` into tmp/grades (flops alone, two at a time, the
    catalogued mistakes fingerprinted); the grades folder. --no-sandbox: the submissions are the reference, the
    catalogue's code and a case that attacks only the report's pages, nothing that acts on the machine (the sandbox
    is proven by tests/meta/test_hostile.py)."""
    build(tmp / "submissions", listener)
    out = tmp / "grades"
    command = [sys.executable, "-m", "grader", "batch", str(tmp / "submissions"), "--out", str(out), "--problem",
               "flops", "--jobs", "2", "--no-sandbox"]
    start = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env=grader_env(), capture_output=True, text=True, timeout=850)
    print(f"\nbatch of {len(STUDENTS)} submissions (flops): {time.monotonic() - start:.0f} s", file=sys.stderr)
    if done.returncode:
        raise AssertionError(f"batch failed ({done.returncode}): {done.stderr[-3000:]}")
    return out
