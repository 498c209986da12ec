"""tests/meta/replay.py: a run that replays a test's recorded examples hands its body what hypothesis handed it,
and ends each example as it ended, without drawing again."""

import pytest

from tests.meta.replay import REJECTED, ReplayExamples

pytestmark = pytest.mark.meta

# A draw whose strategy rejects some values (`reject()` in a composite, as tests/strategies/tensors.py's single_op
# does): those examples end inside the draw, not valid
REJECTING = """
from hypothesis import HealthCheck, given, reject, settings, strategies as st

@st.composite
def multiples_of_five(draw):
    n = draw(st.integers(0, 10**6))
    if n % 5:
        reject()
    return n

@settings(max_examples=30, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_rare_values(data):
    value = data.draw(multiples_of_five())
    assert value % 5 == 0
"""


def run_twice(folder, source: str) -> tuple[ReplayExamples, list, list[int]]:
    """The test file `source` run twice in one process with one ReplayExamples: the plugin, what the first run
    recorded, and each run's exit code."""
    (folder / "test_drawn.py").write_text(source)
    plugin, codes, first = ReplayExamples(), [], None
    for _ in range(2):
        codes.append(pytest.main([str(folder / "test_drawn.py"), "-q", "-p", "no:cacheprovider", f"--rootdir={folder}",
                                  "-p", "no:randomly"], plugins=[plugin]))
        first = first or dict(plugin.recorded)
    return plugin, next(iter(first.values())), codes


def test_a_draw_that_a_filter_rejects_is_replayed_without_drawing_again(tmp_path):
    plugin, recorded, codes = run_twice(tmp_path, REJECTING)
    assert codes == [0, 0]
    assert any(value == REJECTED for example in recorded for _, value in example.draws), \
        "no draw was rejected: the test no longer reaches the case"
    # a replay that diverged would have run hypothesis again and recorded a new list
    assert next(iter(plugin.recorded.values())) is recorded
