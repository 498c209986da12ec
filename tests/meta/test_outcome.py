"""One grading's outcome as one type (grader/outcome.py) and a batch's record of it (grader/batch/records.py):
what it renders (the table, results.json, grades.csv's row) from its data alone, its data read back whole, and data
of another form refused with the reason: a record written before records had a version told apart from one that
is corrupt, and either graded again, never misread."""

import json

import pytest

from grader import messages, scoring
from grader.batch import records, run
from grader.matches import FunctionMatch, Matches
from grader.outcome import VERSION, Figures, Outcome, OutcomeError
from grader.scoring import BehaviourScore, ProblemScore, known_mistakes, results_json, table

pytestmark = pytest.mark.meta


def scores() -> list[ProblemScore]:
    counts = "test_matmul_flops_matches_flopcountermode"
    grows = "test_attention_share_grows_with_context_and_six_n_d_falls_behind"
    passed = scoring.TestScore(f"tests/test_flops.py::{counts}[2]", "flops", 1.5, True, "passed", behaviour="counts")
    failed = scoring.TestScore(f"tests/test_flops.py::{counts}[3]", "flops", 1.5, False, "failed",
                               "AssertionError: matmul_flops(2, 3, 4) = 24, expected 48", "counts", "check")
    held = scoring.TestScore(f"tests/test_flops.py::{grows}", "flops", 2.0, True, "passed", behaviour="grows")
    return [ProblemScore("flops", "Counting compute", 5, [
        BehaviourScore("counts", 3.0, [passed, failed]),
        BehaviourScore("grows", 2.0, [held], requires=(counts,), unmet=(counts,))])]


def outcome() -> Outcome:
    matches = Matches({"flops.matmul_flops": FunctionMatch(False, ["matmul_flops"], ["macs"], 20)},
                      {"flops.matmul_flops": {"macs": "counts multiply-accumulates"}}, ["flops"], ["flops"],
                      seconds=2.5, ran_out=["flops.mfu"])
    return Outcome("alice.zip", "review", 31.25, scores(), [messages.REVIEW], ["read this first"],
                   frozenset({"memory"}), frozenset({"tensors"}), {"precision": "precision.py, line 3: SyntaxError"},
                   ["[test_counts] read the reference's source"], matches,
                   Figures({"flops": 12.5}, {"flops": 300}, ["flops.mfu"]),
                   {"flops": {"winnowed": [[0, 1, 2, 3]], "statements": [[4, 5, 6]]}}, "", ["a line for the operator"])


def test_its_data_reads_back_as_the_same_outcome_through_json():
    first = outcome()
    data = json.loads(json.dumps(first.to_data()))
    assert data["version"] == VERSION
    again = Outcome.from_data(data)
    assert again == first
    assert again.results() == first.results() and again.table() == first.table()
    held = again.scores[0].behaviours[1]
    assert held.withheld and held.held and held.score == 0, "a row a gate held back stays held back ..."
    assert "(not earned: fixed inputs or a property alone earn nothing until" in again.table(), "... and says why"


def test_it_renders_what_the_grader_rendered_from_its_parts():
    first = outcome()
    known = known_mistakes(first.fingerprints)
    assert [k.function for k in known] == ["flops.matmul_flops"]
    assert first.table() == table(first.scores, first.notes, first.untouched, known, lead=first.lead,
                                  missing=first.missing, broken=first.broken)
    summary = table(first.scores, first.notes, first.untouched, known, lead=first.lead, missing=first.missing,
                    broken=first.broken, failures=False)
    assert first.results() == results_json(
        first.scores, seconds=31.25, output=summary, review=first.evidence, known=known,
        fingerprinted={"problems": ["flops"], "seconds": 2.5, "timed_out": False, "error": False,
                       "ran_out_of_time": ["flops.mfu"]},
        broken=first.broken, missing=first.missing,
        per_problem={"seconds_per_problem": {"flops": 12.5}, "examples_per_problem": {"flops": 300},
                     "ran_out_of_time": ["flops.mfu"]})
    assert "a line for the operator" not in json.dumps(first.results()), "the operator's lines are not the student's"
    assert first.row(["tensors", "flops"], attempts=2, similar_to="bob (flops)") == \
        ["alice.zip", "review", 1.5, "", 1.5, 31.2, 2, "", "bob (flops)"]


def test_a_task_that_did_not_finish_is_an_outcome_too():
    failed = Outcome.failed("bob", "its worker died each of the 3 times it was given one")
    assert failed.status == "error" and failed.scores == [] and failed.operator == [failed.reason]
    assert failed.results() == results_json([], seconds=0.0, output=table([], [messages.GRADER_FAILED]))
    assert Outcome.from_data(json.loads(json.dumps(failed.to_data()))) == failed
    unreadable = Outcome.unreadable("carol", "carol/flops.py is 2000000 bytes")
    assert unreadable.status == "unreadable"
    assert messages.UNREADABLE.format(why="carol/flops.py is 2000000 bytes") in unreadable.results()["output"]


@pytest.mark.parametrize("change, old, says", [
    (lambda d: d.pop("version"), True, "before outcomes had a version"),
    (lambda d: d.update(version=VERSION + 1), True, f"of version {VERSION + 1}"),
    (lambda d: d.pop("scores"), False, "no scores"),
    (lambda d: d.update(score=3), False, "unknown fields score"),
    (lambda d: d.update(status="passed"), False, "status 'passed'"),
    (lambda d: d.update(notes="one note"), False, "a list of strings expected"),
    (lambda d: d["scores"][0].pop("behaviours"), False, "KeyError"),
])
def test_data_of_another_form_is_refused_with_the_reason(change, old, says):
    data = json.loads(json.dumps(outcome().to_data()))
    change(data)
    with pytest.raises(OutcomeError, match=says) as raised:
        Outcome.from_data(data)
    assert raised.value.old == old


def record() -> records.Record:
    return records.Record("c0ffee", "0fficial", {"problems": ["flops"], "sandbox": "auto"}, outcome(),
                        {"": "all", "flops": "its own"}, "tcp://10.0.0.2:4000", 2)


def test_a_record_reads_back_whole(tmp_path):
    path = tmp_path / records.RECORD
    assert records.read_record(path) is None, "no record: a new submission"
    path.write_text(json.dumps(record().to_data(), indent=1))
    assert records.read_record(path) == record()


# grading.json as the grader wrote it before records had a version (its keys, its outcome's fields beside them)
BEFORE_VERSIONS = {"content": "31db", "grader": "3fb9", "options": {"problems": ["flops"]}, "status": "review",
                   "reason": "", "seconds": 27.3, "worker": "inproc://192.0.2.2/1/6", "total": 1.75, "scores": [],
                   "fingerprints": None, "untouched": [], "similarity": {}, "operator": [], "hashes": {"": "x"},
                   "attempts": 1}


@pytest.mark.parametrize("text, kind, says", [
    (json.dumps(BEFORE_VERSIONS), "from an older grader", "written before records had a version"),
    (json.dumps({**record().to_data(), "version": 99}), "from an older grader", "of version 99"),
    (json.dumps({**record().to_data(), "outcome": {**outcome().to_data(), "version": 99}}), "from an older grader",
     "its outcome is of version 99"),
    (json.dumps(record().to_data())[:-40], "corrupt", "not JSON"),
    ("", "corrupt", "not JSON"),
    (json.dumps([1, 2]), "corrupt", "not a record: a list, not a mapping"),
    (json.dumps({**record().to_data(), "attempts": "two"}), "corrupt", "ValueError"),
    (json.dumps({k: v for k, v in record().to_data().items() if k != "hashes"}), "corrupt", "KeyError: 'hashes'"),
])
def test_an_old_record_is_told_apart_from_a_corrupt_one_and_graded_again(tmp_path, capsys, text, kind, says):
    (tmp_path / records.RECORD).write_text(text)
    previous, why = run._previous(tmp_path)
    assert previous is None and why.startswith(f"its {records.RECORD} is {kind} (") and says in why, why
    assert run._why_regrade(previous, "c0ffee", "0fficial", {}) == "new"  # graded: nothing of it is trusted
    stderr = capsys.readouterr().err
    assert f"{tmp_path / records.RECORD} is {kind}" in stderr and "graded again" in stderr, stderr
