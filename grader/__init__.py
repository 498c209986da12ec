"""The grading CLI: `resource-grader grade SUBMISSION` (see `resource-grader --help`)."""

from pathlib import Path

OFFICIAL_ROOT = Path(__file__).resolve().parent.parent  # the official assignment, tests and reference
