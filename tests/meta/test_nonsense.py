"""Points follow the work: nonsense earns (almost) nothing (tests/mistakes/nonsense.py).

Each nonsense implementation is swapped into the reference as `--mutant` swaps a catalogued mistake, the
problem's tests run as the student release runs them (no differential tests, whose points the others then
share: the stricter case), and the run is scored by the grader's own scoring (grader/scoring.py). The shares
are the handout's ("How points are computed"):

- a whole module of nonsense earns at most NONSENSE_SHARE of the problem's points;
- the reference with only its core made nonsense earns at most CORE_SHARE: the core carries most of the points.

    pytest --meta tests/meta/test_nonsense.py -k memory
"""

import contextlib
import io
import tempfile
from pathlib import Path

import pytest

from grader import scoring
from grader.registry import BY_ID
from grader.runner import RunResult, read_report
from tests.meta.answers import forget_oracle_answers, keep_oracle_answers
from tests.meta.replay import ReplayExamples
from tests.meta.suite import ROOT, problems_with_tests
from tests.mistakes.nonsense import CORE, nonsense

pytestmark = [pytest.mark.meta, pytest.mark.timeout(900)]

NONSENSE_SHARE = 0.05
CORE_SHARE = 0.5

CASES = [m for p in problems_with_tests() for m in nonsense(p)]


@pytest.fixture(scope="module")
def shared_work():
    """The cases of a problem draw the same examples: hypothesis draws them once (tests/meta/replay.py) and the
    oracles answer each question once (tests/meta/answers.py), which changes no score."""
    before = keep_oracle_answers()
    yield [ReplayExamples()]
    forget_oracle_answers(before)


def score(mistake, plugins=()) -> tuple[float, list[str]]:
    """The problem's score with `mistake` swapped into the reference, and the behaviours that earned points."""
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as report:
        args = [f"tests/test_{mistake.problem}.py", "--impl", "reference", "--mutant",
                f"{mistake.problem}:{mistake.id}", "-m", f"{mistake.problem} and not differential", "-q",
                "--tb=no", "--no-header", "-p", "no:cacheprovider", "--hypothesis-profile=mutation",
                f"--report={report.name}", f"--rootdir={ROOT}"]
        with contextlib.redirect_stdout(io.StringIO()):
            code = pytest.main(args, plugins=list(plugins))
        run = RunResult(exit_code=int(code))
        read_report(Path(report.name), run)
    assert not run.report_faults, run.report_faults
    [problem] = scoring.score_run(run, [BY_ID[mistake.problem]])
    earned = [f"{b.name}: {b.score:.2f} of {b.points:.2f}" for b in problem.behaviours if b.score > 0]
    return problem.score, earned


@pytest.mark.parametrize("mistake", CASES, ids=lambda m: f"{m.problem}:{m.id}")
def test_nonsense_earns_little(mistake, shared_work):
    points = BY_ID[mistake.problem].points
    share = CORE_SHARE if mistake.description.startswith(CORE) else NONSENSE_SHARE
    got, earned = score(mistake, shared_work)
    assert got <= share * points + 1e-9, (
        f"{mistake.problem}:{mistake.id} ({mistake.description}) earns {got:.2f} of {points} points, more than "
        f"{share:.0%}; from:\n  " + "\n  ".join(earned))
