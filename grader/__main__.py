import sys
from pathlib import Path

from grader import OFFICIAL_ROOT

# `python -m grader` puts the current folder first on sys.path. Run in a submission's folder (grade's default
# SUBMISSION is "."), a student's json.py or torch.py there would be imported by the grader's own process,
# outside the sandbox: the current folder stays on the path only where it is the official tree.
here = Path.cwd().resolve()
if here != OFFICIAL_ROOT:
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]

from grader.cli import main  # noqa: E402 - once the path is safe

sys.exit(main())
