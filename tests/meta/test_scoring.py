"""The scoring rule on made-up runs (no pytest subprocess): points by behaviour, shared among its functions and
their items; scaled when behaviours did not run; results.json valid for Gradescope, one test per behaviour; the
table's untouched stubs, one line per problem."""

import json
import math
import re

import jsonschema
import pytest

from grader.matches import Matches
from grader.messages import KNOWN_MISTAKES
from grader.registry import BY_ID, PROBLEMS, awaited, selector, selects
from grader.runner import RunResult
from grader.scoring import UNWEIGHTED, known_mistakes, results_json, score_run, table
from grader.sources import not_started
from tests.meta.suite import ROOT

pytestmark = pytest.mark.meta

SCHEMA = json.loads((ROOT / "tests" / "meta" / "fixtures" / "gradescope_results.schema.json").read_text())


def run_of(problem: str, items: dict[str, int], failing=(), gpu=()) -> RunResult:
    """A finished run: `items` maps test functions of `problem` to how many pytest items each has; the nodeids
    in `failing` failed, everything else passed."""
    run = RunResult()
    for function, count in items.items():
        for k in range(count):
            nodeid = f"tests/test_{problem}.py::{function}" + (f"[{k}]" if count > 1 else "")
            run.collected.append({"nodeid": nodeid, "problem": problem, "gpu": function in gpu, "differential": False})
            failed = nodeid in failing
            run.records[nodeid] = {"nodeid": nodeid, "outcome": "failed" if failed else "passed",
                                   "message": "AssertionError: wrong" if failed else "", "evidence": []}
    return run


def every_function(problem: str, count: int = 1) -> dict[str, int]:
    return {f: count for b in BY_ID[problem].behaviours for f in b.tests}


def behaviour(scores, name):
    return next(b for b in scores[0].behaviours if b.name == name)


def test_a_full_run_gives_each_behaviour_its_weight_and_the_problem_its_points():
    for problem in PROBLEMS:
        [score] = score_run(regions_run(problem.id))
        assert math.isclose(score.score, problem.points)
        assert [(b.name, b.points) for b in score.behaviours] == [(b.name, b.points) for b in problem.behaviours]


def test_parametrized_items_share_their_functions_points_and_functions_their_behaviours():
    flops = BY_ID["flops"]
    waited = {selector(text)[0] for other in flops.behaviours
              for text in (*other.requires, *(w for waits in other.fixed.values() for w in waits))}
    core = next(b for b in flops.behaviours  # two test functions, and nothing waits for them
                if len(b.tests) == 2 and not waited & set(b.tests) and not b.fixed)
    # every other function's items are the parts the gates name (regions_run), so every gate has its evidence
    run = joined(only(regions_run("flops"), lambda f: f != core.tests[0]),
                 run_of("flops", {core.tests[0]: 4}, {f"tests/test_flops.py::{core.tests[0]}[0]"}))
    scores = score_run(run)
    got = behaviour(scores, core.name)
    # half of the behaviour to each function; the first function's half split among its 4 items, one failed
    assert math.isclose(got.score, core.points * (1 - 1 / 2 / 4))
    assert math.isclose(scores[0].score, flops.points - core.points / 8)
    assert not got.passed


def test_many_items_of_one_function_weigh_no_more_than_its_behaviour():
    activation = BY_ID["activation_checkpointing"]
    segments = next(b for b in activation.behaviours if "test_default_segments_is_ceil_sqrt" in b.tests)
    items = {**every_function("activation_checkpointing"), "test_default_segments_is_ceil_sqrt": 11}
    failing = {f"tests/test_activation_checkpointing.py::{f}" for f in every_function("activation_checkpointing")
               if f not in segments.tests}
    [score] = score_run(run_of("activation_checkpointing", items, failing))
    outside = [f for f in segments.tests if set(segments.gate(f)) - set(segments.tests)]  # wait for other rows
    assert outside and math.isclose(score.score, segments.points * (1 - len(outside) / len(segments.tests))), (
        "only the segment tests pass: the segment behaviour's points, but those that wait for other behaviours")


def test_behaviours_that_did_not_run_scale_the_others_to_the_problems_points():
    flops = BY_ID["flops"]
    local = {f: 1 for f in every_function("flops") if "differential" not in f}
    [score] = score_run(only(regions_run("flops"), lambda f: f in local))
    assert math.isclose(score.score, flops.points)
    ran = [b for b in flops.behaviours if any(f in local for f in b.tests)]
    factor = flops.points / sum(b.points for b in ran)
    assert factor > 1 and [round(b.points, 9) for b in score.behaviours] == [round(b.points * factor, 9) for b in ran]


def test_gpu_tests_are_worth_nothing_and_unweighted_tests_are_shown_at_zero():
    run = regions_run("benchmarking")
    extra = run_of("benchmarking", {"test_gpu_relu_bandwidth_near_the_spec": 1, "test_new_thing": 2},
                   gpu={"test_gpu_relu_bandwidth_near_the_spec"})
    run.collected += extra.collected
    run.records.update(extra.records)
    [score] = score_run(run)
    assert math.isclose(score.score, BY_ID["benchmarking"].points)
    assert not any("gpu" in t.name for t in score.tests)
    unweighted = score.behaviours[-1]
    assert unweighted.name == UNWEIGHTED and unweighted.points == 0 and len(unweighted.tests) == 2


def test_results_json_has_one_valid_gradescope_test_per_behaviour():
    scores = []
    for problem in ("flops", "precision"):
        failing = {f"tests/test_{problem}.py::{f}" for f in list(every_function(problem))[:3]}
        scores += score_run(run_of(problem, every_function(problem), failing))
    results = results_json(scores, seconds=1.0, output=table(scores, []), review=["[t] something"])
    jsonschema.validate(results, SCHEMA)
    assert len(results["tests"]) == len(BY_ID["flops"].behaviours) + len(BY_ID["precision"].behaviours)
    assert math.isclose(results["score"], sum(t["score"] for t in results["tests"]), abs_tol=0.01)
    assert math.isclose(sum(t["max_score"] for t in results["tests"]), 28, abs_tol=0.01)
    first = results["tests"][0]
    assert first["name"] == f"flops: {BY_ID['flops'].behaviours[0].name}" and first["status"] == "failed"
    assert "AssertionError: wrong" in first["output"] and "tests passed" in first["output"]
    assert first["extra_data"]["problem"] == "flops" and "failed" in first["extra_data"]["tests"].values()


def only(run: RunResult, keep) -> RunResult:
    """`run` with the items of the test functions that `keep(function)` accepts, and no others."""
    kept = RunResult()
    kept.collected = [c for c in run.collected if keep(c["nodeid"].split("::")[1].partition("[")[0])]
    kept.records = {c["nodeid"]: run.records[c["nodeid"]] for c in kept.collected}
    return kept


def joined(first: RunResult, second: RunResult) -> RunResult:
    """One run of the items of both."""
    run = RunResult()
    run.collected = [*first.collected, *second.collected]
    run.records = {**first.records, **second.records}
    return run


def regions_run(problem: str, failing_selectors=()) -> RunResult:
    """A finished run of `problem` whose items are those its gates name (an item per part a selector or a key
    names, and one no selector names: "elsewhere") for every test function; every item passes but those that a
    selector in `failing_selectors` selects."""
    parts: dict[str, list[str]] = {f: [] for b in BY_ID[problem].behaviours for f in b.tests}
    for b in BY_ID[problem].behaviours:
        for text in (*b.requires, *b.fixed, *(w for waits in b.fixed.values() for w in waits)):
            function, part = selector(text)
            if part and function in parts:
                parts[function].append(part.replace("*", " x"))
    run = RunResult()
    for function, named in parts.items():
        for item in [*dict.fromkeys(named), "elsewhere"]:
            nodeid = f"tests/test_{problem}.py::{function}[{item}]"
            failed = any(selects(text, function, item) for text in failing_selectors)
            run.collected.append({"nodeid": nodeid, "problem": problem, "gpu": False, "differential": False})
            run.records[nodeid] = {"nodeid": nodeid, "outcome": "failed" if failed else "passed",
                                   "message": "AssertionError: wrong" if failed else "", "evidence": []}
    return run


def _gates():
    """(problem, behaviour, the selectors an item of it waits for) for every gate of the registry."""
    for problem in PROBLEMS:
        for b in problem.behaviours:
            for waits in dict.fromkeys((b.requires, *b.fixed.values())):
                if waits:
                    yield problem, b, waits


def test_a_gated_item_earns_nothing_until_what_it_waits_for_passes_and_then_earns_its_share():
    for problem, b, waits in _gates():
        for text in waits:
            scores = score_run(regions_run(problem.id, [text]))
            got = behaviour(scores, b.name)
            held = [t for t in got.tests if text in got.gate(t)]
            assert held and all(got.waiting(t) == (text,) for t in held), (problem.id, b.name, text)
            assert math.isclose(got.score, sum(t.max_score for t in got.tests if t.passed and t not in held))
            assert awaited(problem.id, (text,)) in table(scores, []), (b.name, text)
            output = results_json(scores, seconds=1.0, output="")["tests"][scores[0].behaviours.index(got)]["output"]
            assert "earned once" in output and not got.passed, (b.name, text)
        [whole] = score_run(regions_run(problem.id))
        assert not behaviour([whole], b.name).held and math.isclose(whole.score, problem.points)


def test_a_slip_in_another_region_holds_back_no_gated_item():
    """A test's items that no selector names (its other regions) failing hold back no item of any behaviour:
    an honest slip there costs those items' shares and nothing else."""
    for problem in PROBLEMS:
        whole = {text for b in problem.behaviours for text in (*b.requires, *(w for ws in b.fixed.values() for w in ws))
                 if selector(text)[1] is None}  # a test waited for whole: its every item is evidence
        elsewhere = [f"{f}[elsewhere]" for b in problem.behaviours for f in b.tests if f not in whole]
        for text in elsewhere:
            scores = score_run(regions_run(problem.id, [text]))
            lost = problem.points - scores[0].score
            share = next(t.max_score for t in scores[0].tests if t.name == text)
            assert math.isclose(lost, share), (problem.id, text, lost, share)


def test_scores_print_in_one_format():
    failing = {f"tests/test_memory.py::{f}" for f in BY_ID["memory"].behaviours[0].tests}
    text = table(score_run(run_of("memory", every_function("memory"), failing)), [])
    assert "0.5 / 0.5" in text and not re.search(r"\.\d0 / ", text), text  # never 0.50 / 0.5


def test_the_stubs_fail_every_behaviour_and_the_table_keeps_the_totals_per_problem():
    failing = {f"tests/test_memory.py::{f}" for f in every_function("memory")}
    scores = score_run(run_of("memory", every_function("memory"), failing))
    results = results_json(scores, seconds=1.0, output="")
    jsonschema.validate(results, SCHEMA)
    assert results["score"] == 0 and all(t["status"] == "failed" and t["score"] == 0 for t in results["tests"])
    text = table(scores, [])
    assert f"memory{' ' * 10}" in text and f"      0 / {BY_ID['memory'].points} " in text
    assert all(b.name in text for b in BY_ID["memory"].behaviours)


# -- untouched stubs: one line per problem ----------------------------------------------------------------

@pytest.mark.parametrize("problem", [p.id for p in PROBLEMS])
def test_every_stub_is_not_started_and_no_reference_is(problem):
    assert not_started((ROOT / "assignment" / f"{problem}.py").read_bytes())
    assert not not_started((ROOT / "reference" / f"{problem}.py").read_bytes())


def test_a_started_function_or_a_broken_file_is_not_untouched():
    stub = (ROOT / "assignment" / "flops.py").read_text()
    started = stub.replace('    raise NotImplementedError("mfu")', '    return flops / seconds / peak_flops_per_sec')
    assert started != stub and not not_started(started)
    assert not not_started("def f(:\n")
    assert not not_started("X = 1\n")


def test_an_untouched_problem_is_one_line_whatever_its_tests_reported():
    messages = ["NotImplementedError: matmul_flops", "AssertionError: got {'raised': ['NotImplementedError']}",
                "AssertionError: hint: return an int, not dict"]
    functions = list(every_function("flops"))[:3]
    run = run_of("flops", {f: 1 for f in functions}, failing={f"tests/test_flops.py::{f}" for f in functions})
    for f, message in zip(functions, messages, strict=True):
        run.records[f"tests/test_flops.py::{f}"]["message"] = message
    scores = score_run(run)
    text = table(scores, [], frozenset({"flops"}))
    assert "flops: not started, every function raises NotImplementedError (3 tests)" in text
    assert "Failures" not in text and "{'raised'" not in text and "hint" not in text
    assert not any(b.name in text for b in scores[0].behaviours), "an untouched problem's behaviours are all 0"
    partial = table(scores, [])
    assert "Failures" in partial  # a started problem still lists what is not a NotImplementedError


def test_a_known_mistake_is_named_in_the_table_and_under_the_behaviours_it_explains():
    matmul = next(b for b in BY_ID["flops"].behaviours if "test_matmul_flops_matches_flopcountermode" in b.tests)
    other = next(b for b in BY_ID["flops"].behaviours if b is not matmul)
    failing = {f"tests/test_flops.py::{f}" for f in (*matmul.tests, *other.tests)}
    run = run_of("flops", every_function("flops"), failing=failing)
    for nodeid in failing:
        run.records[nodeid]["message"] = ("AssertionError: matmul_flops(2, 3, 4) is wrong" if nodeid.split("::")[1]
                                          in matmul.tests else "AssertionError: training_days(1, 2) is wrong")
    fingerprints = {"functions": {
        "flops.matmul_flops": {"agree": False, "names": ["matmul_flops"], "matches": ["macs"], "of": 20},
        "flops.mfu": {"agree": True, "names": ["mfu"], "matches": [], "of": 20},  # agrees: nothing to name
        "flops.linear_flops": {"agree": False, "names": ["linear_flops"], "matches": [], "of": 1}},  # unexplained
        "descriptions": {"flops.matmul_flops": {"macs": "counts multiply-accumulates"}}}
    known = known_mistakes(Matches.from_data(fingerprints))
    assert [k.function for k in known] == ["flops.matmul_flops"]
    line = "flops.matmul_flops: on all 20 inputs tried, your answers are those of `macs`: counts multiply-accumulates"
    scores = score_run(run)
    text = table(scores, [], known=known)
    assert f"{KNOWN_MISTAKES}\n    {line}" in text and text.index(KNOWN_MISTAKES) < text.index("Failures")
    results = results_json(scores, seconds=1.0, output=text, known=known)
    jsonschema.validate(results, SCHEMA)
    tests = {t["name"].split(": ", 1)[1]: t for t in results["tests"]}
    assert f"Known mistake: {line}" in tests[matmul.name]["output"]
    assert tests[matmul.name]["extra_data"]["known_mistakes"] == {"flops.matmul_flops": ["macs"]}
    assert "Known mistake" not in tests[other.name]["output"]
    assert "known_mistakes" not in tests[other.name]["extra_data"]
    assert "Known" not in table(scores, []) and known_mistakes(None) == []


def test_a_function_with_several_kinds_of_input_is_one_known_mistake():
    entry = {"agree": False, "names": ["view_result"], "matches": ["M"], "of": 20}
    fingerprints = {"functions": {"tensors.view_result (slice)": entry, "tensors.view_result (chains)": entry},
                    "descriptions": {f"tensors.view_result ({k})": {"M": "wrong"} for k in ("slice", "chains")}}
    (known,) = known_mistakes(Matches.from_data(fingerprints))
    assert known.line() == "tensors.view_result: on all 40 inputs tried, your answers are those of `M`: wrong"


def test_a_report_record_that_does_not_fit_its_type_is_a_fault_of_the_report(tmp_path):
    """grader/harness/record.py ReportRecord is the report's contract: the grader reads each record as hostile,
    and a field missing, unknown or of another type makes the run's report untrusted, never a score."""
    import json

    from grader.runner import RunResult, malformed, read_report

    good = {"nodeid": "t::a", "problem": "flops", "outcome": "passed", "gpu": False, "differential": False,
            "duration": 0.5, "message": "", "evidence": [], "examples": 3, "first_failing_example": 0}
    assert malformed(good) is None and malformed({**good, "duration": 1, "problem": None}) is None
    for bad, why in [({**good, "duration": "0.5"}, "duration is a str"), ({**good, "score": 1}, "unknown field"),
                     ({k: v for k, v in good.items() if k != "message"}, "no message"),
                     ({**good, "evidence": "x"}, "evidence is a str")]:
        assert why in malformed(bad)
    report = tmp_path / "report.jsonl"
    collected = [{"nodeid": f"t::{n}", "problem": "flops", "gpu": False, "differential": False} for n in "ab"]
    lines = [{"collected": collected}, good, {**good, "nodeid": "t::b", "duration": "long"}, {"finished": 0}]
    report.write_text("".join(json.dumps(line) + "\n" for line in lines))
    run = RunResult(exit_code=0)
    read_report(report, run)
    assert list(run.records) == ["t::a"] and run.report_faults == [
        "report line 3: a malformed record for 't::b' (duration is a str)"]
    # the first and last lines have their types too (record.py Collected, Finished)
    for first, last, fault in [
            ({"collected": [{"nodeid": "t::a", "problem": "flops"}]}, {"finished": 0}, "a test no gpu"),
            ({"collected": collected, "tests": 2}, {"finished": 0}, "an unknown field 'tests'"),
            ({"collected": collected}, {"finished": True}, "a malformed end of the run (finished is a bool)")]:
        report.write_text("".join(json.dumps(line) + "\n" for line in [first, good, last]))
        run = RunResult(exit_code=0)
        read_report(report, run)
        assert any(fault in f for f in run.report_faults), run.report_faults
