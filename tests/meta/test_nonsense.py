"""Points follow the work: nonsense earns (almost) nothing (tests/mistakes/nonsense.py).

Each nonsense implementation is swapped into the reference as `--mutant` swaps a catalogued mistake, the
problem's tests run as the student release runs them (no differential tests, whose points the others then
share: the stricter case), and the run is scored by the grader's own scoring (grader/scoring.py). The shares
are the handout's ("How points are computed"):

- a whole module of nonsense earns at most NONSENSE_SHARE of the problem's points;
- the reference with only its core made nonsense earns at most CORE_SHARE: the core carries most of the points.

All are run and scored in one subprocess (`python -m tests.meta.mutation --nonsense`), whose runs share the
examples drawn and the oracles' answers, as the catalogue's do.

    pytest --meta tests/meta/test_nonsense.py -k memory
"""

import pytest

from grader.registry import BY_ID
from tests.meta.catalogue import run_mutation
from tests.meta.suite import problems_selected, problems_with_tests
from tests.mistakes.nonsense import CORE, nonsense

pytestmark = [pytest.mark.meta, pytest.mark.timeout(1800)]  # all the nonsense's runs: a backstop

NONSENSE_SHARE = 0.05
CORE_SHARE = 0.5

CASES = [m for p in problems_with_tests() for m in nonsense(p)]


@pytest.fixture(scope="module")
def scored(request, tmp_path_factory) -> dict[tuple[str, str], dict]:
    """(problem, nonsense id) -> its run, scored (tests/meta/mutation.py); `-k <problem>`: that problem's alone."""
    only = [f"--problem={p}" for p in problems_selected(request, "scored") or ()]
    results = run_mutation(["--nonsense", *only], tmp_path_factory.mktemp("nonsense") / "scored.json")
    return {(r["problem"], r["id"]): r for r in results}


@pytest.mark.parametrize("mistake", CASES, ids=lambda m: f"{m.problem}:{m.id}")
def test_nonsense_earns_little(scored, mistake):
    result = scored[(mistake.problem, mistake.id)]
    assert "behaviours" in result and not result["report_faults"], (
        f"{mistake.problem}:{mistake.id}: its run did not finish as it should: {result.get('report_faults')}")
    points = BY_ID[mistake.problem].points
    share = CORE_SHARE if mistake.description.startswith(CORE) else NONSENSE_SHARE
    earned = [f"{name}: {b['score']:.2f} of {b['points']:.2f}" for name, b in result["behaviours"].items()
              if b["score"] > 0]
    assert result["score"] <= share * points + 1e-9, (
        f"{mistake.problem}:{mistake.id} ({mistake.description}) earns {result['score']:.2f} of {points} points, "
        f"more than {share:.0%}; from:\n  " + "\n  ".join(earned))
