"""The honest corpus (tests/meta/honest/): solutions written in the styles real code is written in (training
loops, course benchmarking scripts, optimizer libraries, diffusion codebases' checkpoints, dispatch-mode FLOP
counters, einops-style parsers, c10's rounding), each with the score it must reach, and natural one-line slips,
each with the rows it may cost. Graded as `grade` grades them (tests/meta/fairness.py): a case loses points only
in the rows it says, and reaches its score; so does each slip (a gate that held back a row of another region, a
test that checked more than its row, would show here).

    pytest --meta tests/meta/test_honest.py -k benchmarking
    python -m tests.meta.fairness --honest benchmarking    # the same, printed
"""

import pytest

from tests.meta.fairness import grade, honest_cases, report, unfair

pytestmark = [pytest.mark.meta, pytest.mark.slow, pytest.mark.timeout(900)]

CASES = honest_cases()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_an_honest_case_loses_only_the_rows_it_may_lose(case):
    rows = grade(case.problem, case.source)
    faults = unfair(case, rows)
    assert not faults, f"{case.name}: " + "; ".join(faults) + "\n" + report(rows)


def test_the_corpus_covers_its_styles():
    problems = {c.problem for c in CASES}
    assert len(CASES) >= 12 and len(problems) >= 5, (len(CASES), sorted(problems))
