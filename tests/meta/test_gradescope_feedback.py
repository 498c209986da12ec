"""What students read on Gradescope, on made-up runs (no grading): every text an explicit format, the grader's
own output hidden, the top-level output the table and the notes only, a module that does not import in one
line, and an error of the grading code never presented as the student's. test_gradescope.py checks the same
through run_autograder on real uploads."""

import jsonschema
import pytest

from grader.harness.client import WorkerTimeout, rebuild_exception
from grader.harness.protocol import WORKER_NOTE, RemoteError
from grader.harness.report import raised_by
from grader.messages import GRADER_ERROR
from grader.scoring import (
    behaviour_output,
    code_block,
    import_errors,
    results_json,
    score_run,
)
from grader.scoring import table as score_table
from grader.sources import compile_errors
from tests.meta.test_gradescope import SCHEMA
from tests.meta.test_scoring import every_function, run_of

pytestmark = pytest.mark.meta

SYNTAX = ("SyntaxError: invalid syntax (tensors.py, line 1)\n[raised in the grading worker as SyntaxError]\n"
          '  File "assignment/tensors.py", line 1\n    def broken(:\nFailing test case: ...')
AT_IMPORT = ("ModuleNotFoundError: No module named 'scipy'\n[raised in the grading worker as ModuleNotFoundError]\n"
             '  File "assignment/tensors.py", line 3, in <module>\n    import scipy\nFailing test case: ...')
ORACLE_FAILED = "AttributeError: module 'sys' has no attribute 'get_int_max_str_digits'\nFailing test case: ..."


def scores_with(problem: str, message: str, failing: int | None = None, by: str = "check"):
    """A run of `problem` whose first `failing` test functions (all: None) failed with `message`, raised by `by`
    (record.RAISED_BY)."""
    functions = every_function(problem)
    failed = {f"tests/test_{problem}.py::{f}" for f in list(functions)[:failing]}
    run = run_of(problem, functions, failed)
    for nodeid in failed:
        run.records[nodeid].update(message=message, raised_by=by)
    return score_run(run)


def student_texts(results: dict) -> list[str]:
    return [results["output"], *(t["output"] for t in results["tests"])]


def test_every_text_has_an_explicit_format_and_the_graders_output_is_hidden():
    scores = scores_with("flops", "AssertionError: wrong\n  expected: 3   (the reference)\n  got:      4", 2)
    results = results_json(scores, seconds=1.0, output=score_table(scores, ["a note"], failures=False))
    jsonschema.validate(results, SCHEMA)
    assert results["stdout_visibility"] == "hidden"
    assert results["output_format"] == results["test_output_format"] == "md"
    for test in results["tests"]:
        assert test["output_format"] == "md" and test["name_format"] == "text"
    for text in student_texts(results):  # one code block each: shown as written, never read as Markdown or HTML
        assert text.startswith("```text\n") and text.endswith("\n```") and text.count("```") == 2


def test_a_code_block_is_never_closed_by_the_text_inside_it():
    text = "before\n```\n# heading\n````\n<b>x</b>"
    block = code_block(text)
    fence = block.split("text\n", 1)[0]
    assert fence == "`````" and block == f"{fence}text\n{text}\n{fence}"


def test_the_top_level_output_is_the_table_and_the_notes_without_the_failures():
    scores = scores_with("flops", "AssertionError: wrong answer 12345", 3)
    full, summary = score_table(scores, ["a note"]), score_table(scores, ["a note"], failures=False)
    assert "wrong answer 12345" in full and "wrong answer 12345" not in summary
    assert "3 failed tests: each is shown under its behaviour below." in summary and summary.endswith("a note")
    results = results_json(scores, seconds=1.0, output=summary)
    behaviours = {t.behaviour for p in scores for t in p.tests if not t.passed}  # one output each, however many
    assert sum("wrong answer 12345" in t["output"] for t in results["tests"]) == len(behaviours)
    assert "wrong answer 12345" not in results["output"]


def test_a_module_that_does_not_compile_is_named_in_one_line_with_its_line_and_error():
    broken = compile_errors({"tensors": b"import torch\n\ndef broken(:\n", "flops": b"def fine():\n    return 1\n",
                             "memory": b"x = 1\0"})
    assert broken["tensors"] == "tensors.py, line 3: SyntaxError: invalid syntax"
    assert "flops" not in broken and broken["memory"].startswith("memory.py")
    scores = scores_with("tensors", SYNTAX, by="submission")
    text = score_table(scores, [], broken={"tensors": broken["tensors"]})
    assert text.count("SyntaxError") == 1 and "Failing test case" not in text
    assert "Does not import" in text and "Not implemented yet" not in text
    results = results_json(scores, seconds=1.0, output=text, broken={"tensors": broken["tensors"]})
    for test in results["tests"]:
        assert test["output"].count("SyntaxError") == 1 and "Does not import: tensors.py, line 3" in test["output"]


def test_an_error_raised_while_the_module_is_imported_is_found_in_the_workers_traceback():
    scores = scores_with("tensors", AT_IMPORT, by="submission")
    assert import_errors(scores) == {"tensors": "tensors.py, line 3: ModuleNotFoundError: No module named 'scipy'"}
    # raised inside a function, not at the top level: the function's failure, not the module's
    inside = AT_IMPORT.replace("in <module>", "in view_result")
    assert import_errors(scores_with("tensors", inside, by="submission")) == {}
    # the same text raised in the test process (a message that quotes such a traceback) is no import error
    assert import_errors(scores_with("tensors", AT_IMPORT, by="grader")) == {}


def test_an_empty_upload_says_so_before_anything_else():
    scores = scores_with("tensors", "NotImplementedError: view_result")
    text = score_table(scores, [], frozenset({"tensors"}), lead=["Nothing of your upload was graded: ..."],
                       missing=frozenset({"tensors"}))
    assert text.startswith("Nothing of your upload was graded") and "Not implemented yet" not in text
    results = results_json(scores, seconds=1.0, output=text, missing=frozenset({"tensors"}))
    assert all("tensors.py is not in your upload." in t["output"] for t in results["tests"])


def test_a_failures_cause_is_read_from_its_exceptions_type_not_its_text():
    in_worker = rebuild_exception(RemoteError("AttributeError", "AttributeError", "x", "..."))
    assert raised_by(in_worker) == "submission"
    assert raised_by(AttributeError("module 'sys' has no attribute 'x'")) == "grader"
    assert raised_by(AssertionError("wrong")) == raised_by(WorkerTimeout("10 s")) == "check"
    with pytest.raises(pytest.fail.Exception) as failed:
        pytest.fail("AttributeError: looks like one")
    assert raised_by(failed.value) == "check"
    assert raised_by(ExceptionGroup("two", [AssertionError("a"), KeyError("b")])) == "check"
    assert raised_by(ExceptionGroup("two", [TypeError("a"), KeyError("b")])) == "grader"


def test_an_error_of_the_grading_code_is_never_presented_as_the_students():
    stub = f"NotImplementedError: matmul_flops\n{WORKER_NOTE} as NotImplementedError]\n..."
    stub_scores = scores_with("flops", stub, 2, by="submission")
    assert GRADER_ERROR not in "".join(behaviour_output(b) for b in stub_scores[0].behaviours)
    # the grader's own error reads like a student's in its text: its cause is in the record
    assert GRADER_ERROR not in score_table(scores_with("flops", ORACLE_FAILED, 1, by="check"), [])
    scores = scores_with("flops", ORACLE_FAILED, 1, by="grader")
    failed = next(b for b in scores[0].behaviours if not b.passed)
    assert behaviour_output(failed).count(GRADER_ERROR) == 1
    assert GRADER_ERROR in score_table(scores, [])
    results = results_json(scores, seconds=1.0, output="")
    assert results["extra_data"]["grader_errors"] == [f"[{failed.tests[0].name}] {ORACLE_FAILED.splitlines()[0]}"]
