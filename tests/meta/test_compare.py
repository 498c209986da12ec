"""`resource-grader compare` (grader/staff/compare.py, on grader/fingerprints/) names the catalogued mistake a
submission makes.

Each catalogued mistake of a comparable function is swapped into the reference (the mutation machinery:
`LocalPackage` overrides, as `pytest --mutant` does) and compared with the same inputs the command draws, as
grading fingerprints it, when the catalogue is graded for the session (tests/meta/catalogue.py); compare must
name it among the matches of the function it replaces. The mistakes that
no comparison of answers can tell from the reference or from another mistake are listed, with the reason,
in UNFINGERPRINTABLE; those of functions compare cannot call with plain inputs are in
grader/fingerprints/inputs.py's NOT_COMPARABLE.

    pytest --meta tests/meta/test_compare.py -q -s     # prints the coverage
"""

import json
import subprocess
import sys

import pytest

import grader.fingerprints
from grader.fingerprints import comparer as compare
from grader.fingerprints import inputs as compare_inputs
from grader.harness.local import LocalPackage
from grader.registry import PROBLEMS
from tests.meta.mutation import comparable_names
from tests.meta.suite import ROOT, SAMPLE, grader_env
from tests.mistakes import catalog, returning

pytestmark = [pytest.mark.meta, pytest.mark.timeout(900)]

AUDIT_ONLY = "the reference's answers, computed a forbidden way: only the audit (or the worker's guard) sees it"
UNFINGERPRINTABLE = {  # "problem:mistake" -> why its answers cannot name it
    "tensors:asks_torch": AUDIT_ONLY,
    "precision:bf16_by_cast": AUDIT_ONLY,
    "mini_einops:delegates_to_einops": AUDIT_ONLY,
    "einops_practice:merge_heads_without_einops": AUDIT_ONLY,
    "mini_einops:parse_every_call": "the reference's answers, the pattern parsed on every call: only the "
                                    "parse-count (performance) test sees it",
    "mini_einops:message_without_shape": "the same EinopsError with a shorter message: compare tells errors apart "
                                         "by their class, not their wording",
    "mini_einops:shapes_as_torch_size": "the same EinopsError, its shapes written as torch.Size: compare tells errors "
                                        "apart by their class, not their wording",
}
EXAMPLES = compare.EXAMPLES


MISTAKES = [m for p in PROBLEMS for m in returning(catalog(p.id)) if set(m.replaces) <= comparable_names(p.id)]


@pytest.fixture(scope="module")
def comparer():
    return compare.Comparer(list(compare_inputs.BUILDERS), examples=EXAMPLES)


@pytest.fixture(scope="module")
def fingerprints(catalogue) -> dict:
    """"problem:mistake" -> the ids compare names for the submission that makes it, as grading fingerprints
    (tests/meta/mutation.py compare_names), from the catalogue graded for the session; `-k <problem>`: that
    problem's alone."""
    return {f"{p}:{i}": set(result["named"]) for (p, i), result in catalogue.items() if result["named"] is not None}


@pytest.mark.parametrize("mistake", MISTAKES, ids=lambda m: f"{m.problem}:{m.id}")
def test_compare_names_the_mistake(fingerprints, mistake):
    spec = f"{mistake.problem}:{mistake.id}"
    if spec in UNFINGERPRINTABLE:
        assert mistake.id not in fingerprints[spec], f"{spec} is fingerprinted now: take it out of UNFINGERPRINTABLE"
        return
    assert mistake.id in fingerprints[spec], (
        f"compare does not name {spec} ({mistake.description}); it names {sorted(fingerprints[spec]) or 'nothing'}. "
        "Make grader/fingerprints/inputs.py draw inputs on which it answers otherwise than the reference (for a "
        "missing check, the input the docstring's error is for: compare tells errors apart by their class), or "
        "list it in UNFINGERPRINTABLE in this file, with why")


def test_fingerprint_coverage(fingerprints):
    found = sum(spec.split(":")[1] in ids for spec, ids in fingerprints.items())
    everything = sum(len(catalog(p.id)) for p in PROBLEMS)
    print(f"\ncompare fingerprints {found} of {len(fingerprints)} catalogued mistakes of comparable functions "
          f"({found / len(fingerprints):.0%}); {everything - len(fingerprints)} more are mistakes of functions that "
          f"need a scenario (NOT_COMPARABLE)")
    assert found >= 0.9 * len(fingerprints)


def test_every_mistake_is_comparable_or_accounted_for():
    for p in PROBLEMS:
        skipped = set(compare_inputs.NOT_COMPARABLE.get(p.id, {}))
        for m in catalog(p.id):
            assert set(m.replaces) <= comparable_names(p.id) | skipped, (
                f"{p.id}:{m.id} replaces {sorted(m.replaces)}: give compare inputs for it "
                "(grader/fingerprints/inputs.py) or list it in NOT_COMPARABLE")
    known = {f"{m.problem}:{m.id}" for m in MISTAKES}
    assert set(UNFINGERPRINTABLE) <= known, f"not catalogued or not comparable: {set(UNFINGERPRINTABLE) - known}"


def test_a_copy_of_the_reference_agrees_everywhere_and_matches_no_mistake(comparer):
    report = comparer.compare(LocalPackage("reference"))
    for problem in report.problems:
        for f in problem.functions:
            if isinstance(f, compare.Compared):
                name = f"{problem.problem}.{f.function}"
                assert f.agree == f.of > 0, f"{name}: {f.agree} of {f.of} agree"
                assert not f.matches, f"{name} matches {[m.id for m in f.matches]}"


def test_the_reference_answers_every_entry(comparer):
    """No entry is miswired: the reference never fails for a reason of the call itself."""
    for (problem, key), answers in comparer.expected.items():
        wrong = [a for a in answers if isinstance(a, compare.Raised) and a.name in ("TypeError", "AttributeError",
                                                                                      "KeyError", "NameError")]
        assert not wrong, f"{problem}.{key}: the reference raised {wrong[0]}"


def test_a_fingerprinted_function_stops_once_no_mistake_can_match_it(comparer):
    def unexplained(b, d, k):  # wrong, and like no catalogued mistake
        return 7

    student = LocalPackage("reference", {"flops.matmul_flops": unexplained,
                                         "flops.mfu": flops_mistake("mfu_inverted", "mfu")})
    full, fingerprinted = (comparer.compare(student, ["flops"], {"matmul_flops", "mfu"}, until_unmatched=until)
                           for until in (False, True))
    functions = [{f.function: f for f in r.problems[0].functions if isinstance(f, compare.Compared)}
                 for r in (full, fingerprinted)]
    assert len(functions[0]["matmul_flops"].rows) == EXAMPLES and not functions[0]["matmul_flops"].matches
    assert len(functions[1]["matmul_flops"].rows) == 1, "its first answer rules out every mistake"
    for f in functions:  # a matching mistake is followed to the last input
        assert [m.id for m in f["mfu"].matches] == ["mfu_inverted"] and f["mfu"].of == EXAMPLES


def flops_mistake(mistake_id: str, name: str):
    return next(m for m in catalog("flops") if m.id == mistake_id).replaces[name]


def test_inputs_are_the_same_every_run():
    first, second = (compare.Comparer(["flops", "tensors"], ["matmul_flops", "view_result"], examples=5)
                     for _ in range(2))
    assert repr(first.inputs) == repr(second.inputs)


def test_the_command_compares_a_submission_in_the_worker(tmp_path):
    out = tmp_path / "compare.json"
    run = subprocess.run([sys.executable, "-m", "grader", "compare", str(SAMPLE),
                          "--problem", "flops", "--function", "matmul_flops", "--function", "attention_flops_fraction",
                          "--function", "FlopCounter", "--examples", "4", "--no-sandbox", "--json", str(out)],
                         cwd=tmp_path, env=grader_env(), capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    functions = {f["function"]: f for f in json.loads(out.read_text())["problems"][0]["functions"]}
    assert set(functions) == {"matmul_flops", "attention_flops_fraction", "FlopCounter", "FlopCounter entered twice"}
    assert functions["matmul_flops"]["agree"] == 4, functions["matmul_flops"]  # the sample solves it
    stub = functions["attention_flops_fraction"]  # the sample leaves it a stub
    assert stub["agree"] == 0 and stub["first_divergence"] == 0
    assert all(r["student"] == "raises NotImplementedError" for r in stub["rows"]), stub["rows"]
    assert ">> differs" in run.stdout and "no catalogued mistake matches" in run.stdout


def test_a_mistake_another_kind_of_input_contradicts_is_not_named():
    def entry(key, agree, matches, like_reference=()):
        return compare.Compared(key, ["view_result"], "exact", [], 20 if agree else 3, 20, None,
                                [compare.Fit(m, "", 20, 20) for m in matches], [], list(like_reference))

    # M matches the slices; on the transposes the student answers as the reference, where M does not
    contradicted = [entry("view_result (slice)", False, ["M"]), entry("view_result (transpose)", True, [])]
    # N matches the slices and answers as the reference on the transposes, as the student does
    consistent = [entry("view_result (slice)", False, ["N"]), entry("view_result (transpose)", True, [], ["N"])]
    for functions in (contradicted, consistent):
        grader.fingerprints._without_contradictions(functions)
    assert contradicted[0].matches == [] and [m.id for m in consistent[0].matches] == ["N"]


def test_an_untouched_stub_is_not_started_not_a_table_of_errors(tmp_path):
    """The sample leaves tensors as the stub: one line says so, and no worker runs it."""
    out = tmp_path / "compare.json"
    run = subprocess.run([sys.executable, "-m", "grader", "compare", str(SAMPLE),
                          "--problem", "tensors", "--function", "can_view", "--examples", "2", "--no-sandbox",
                          "--json", str(out)], cwd=tmp_path, env=grader_env(), capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert f"tensors: {compare.NOT_STARTED}" in run.stdout.splitlines(), run.stdout
    assert "NotImplementedError" not in run.stdout.replace(compare.NOT_STARTED, "")
    assert json.loads(out.read_text())["problems"] == [{"problem": "tensors", "not_started": True, "functions": []}]


def test_the_catalogue_warns_the_operator_of_nothing():
    """`memory:allocates` makes tensors of torch's deprecated quantized dtypes (compare draws every dtype): run
    in the grader's process for its answers, torch's deprecation warning (once per process: hence a process
    each) must not reach the operator."""
    script = ("import torch; from grader.fingerprints import comparer; {prepare}; "
              "from tests.mistakes import find_mistake; "
              "find_mistake('memory:allocates').replaces['tensor_bytes']((2, 3), torch.qint8)")
    for prepare, warned in [("pass", True), ("comparer.prepare()", False)]:
        run = subprocess.run([sys.executable, "-c", script.format(prepare=prepare)], cwd=ROOT, env=grader_env(),
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr[-3000:]
        assert ("deprecated" in run.stderr) == warned, (prepare, run.stderr)
