"""Copies between students (grader/similarity.py) on a synthetic class (tests/meta/classmates.py): every planted
pair and cluster found, no honest pair reported, the matched lines where the copy stands; the stub's code and the
class's common code counted for nothing; a base compared with the class, never with itself. One small batch end to
end (slow): report.md's section, similarity.csv, grades.csv's similar_to, and nothing of it in results.json.

`python -m tests.meta.test_similarity` prints the calibration: each kind of pair's figures, and the rates of false
positives and of detection over several seeded classes (the thresholds' comment in grader/similarity.py and
docs/tas.md state them).
"""

import csv
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader import similarity
from grader.submission import SubmissionError, read_modules
from tests.meta import classmates
from tests.meta.suite import ROOT, grader_env

pytestmark = pytest.mark.meta

SIZE = 44  # students in the class: the issue asks for at least 40
SEEDS = (0, 1, 2, 3)  # the classes the calibration prints


def digests(made: classmates.SyntheticClass) -> dict[str, dict]:
    return {s: similarity.digest(read_modules(made.folder / s)) for s in made.students}


def calibration(seed: int, folder: Path) -> tuple[classmates.SyntheticClass, similarity.Similarity]:
    made = classmates.build(folder, SIZE, seed)
    return made, similarity.compare_class(digests(made), every=True)


def planted(made: classmates.SyntheticClass) -> set[tuple[str, frozenset[str]]]:
    return {(g.problem, pair) for g in made.groups for pair in g.pairs}


def key(pair: similarity.Pair) -> tuple[str, frozenset[str]]:
    return pair.problem, frozenset((pair.a, pair.b))


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    return calibration(0, tmp_path_factory.mktemp("class") / "class")


def test_the_class_is_large_enough_with_pairs_and_clusters(compared):
    made, _ = compared
    assert len(made.students) >= 40
    assert any(len(g.members) == 2 for g in made.groups) and any(len(g.members) >= 3 for g in made.groups)


def test_every_planted_pair_is_found(compared):
    made, found = compared
    missed = planted(made) - {key(p) for p in found.pairs}
    assert not missed, missed


def test_no_honest_pair_is_reported(compared):
    made, found = compared
    honest = [p for p in found.pairs if key(p) not in planted(made)]
    assert not honest, [(p.problem, p.a, p.b, p.shared, round(p.share, 2), p.longest, p.in_order) for p in honest]
    adamw = frozenset(made.honest_adamw)
    assert any(key(p) == ("adamw", adamw) for p in found.examined), "the two adamw solutions were not compared"


def test_the_clusters_are_the_planted_groups_of_three(compared):
    made, found = compared
    assert sorted((c.problem, c.members) for c in found.clusters) == \
        sorted((g.problem, sorted(g.members)) for g in made.groups if len(g.members) >= 3)


def test_the_matched_lines_are_where_the_copy_stands(compared):
    made, found = compared
    group = next(g for g in made.groups if g.lines)  # a function of the reference pasted below the copier's own
    pair = next(p for p in found.pairs if key(p) == (group.problem, frozenset(group.members)))
    assert pair.spans
    for span in pair.spans[:1]:  # the longest run: inside the pasted part on both sides
        for side, lines in (("a", span.a_lines), ("b", span.b_lines)):
            first, last = group.lines[getattr(pair, side)]
            assert first <= lines[0] <= lines[1] <= last, (side, lines, (first, last))
        assert span.a_lines[1] - span.a_lines[0] >= (group.lines[pair.a][1] - group.lines[pair.a][0]) // 2


def test_the_thresholds_have_room_on_the_honest_side(compared):
    """The honest pairs stay below each threshold by itself, not only below their combination."""
    made, found = compared
    honest = [p for p in found.examined if key(p) not in planted(made)]
    assert max(p.share for p in honest) < similarity.MIN_SHARE
    assert max(p.longest for p in honest) < similarity.MIN_RUN
    assert max(p.in_order for p in honest) < similarity.MIN_IN_ORDER_WHOLE


def test_the_pairs_are_sorted_by_strength(compared):
    _, found = compared
    strengths = [p.strength for p in found.pairs]
    assert strengths == sorted(strengths, reverse=True)


def test_the_stub_counts_for_nothing():
    module = "memory"
    stub = (ROOT / "assignment" / f"{module}.py").read_bytes()
    assert similarity.digest({module: stub}) == {}, "the untouched stub is not compared"
    below = similarity.module_digest(module, stub.decode() + "\nx = 1\n")
    stub_hashes = similarity.copycheck.stub_kgrams(module)
    assert not any(h in stub_hashes for _, h, _, _ in below["winnowed"])


def test_what_the_class_writes_alike_counts_for_nothing():
    """The same module held by many students is common: none of its pairs is reported; held by three, it is."""
    text = (ROOT / "reference" / "flops.py").read_text()
    one = similarity.digest({"flops": text.encode()})
    many = similarity.compare_class({f"s{i}": one for i in range(12)})
    assert not many.pairs and many.common["flops"] > 100
    few = similarity.compare_class({**{f"s{i}": one for i in range(3)}, **{f"t{i}": {} for i in range(9)}})
    assert len(few.pairs) == 3 and [c.members for c in few.clusters] == [["s0", "s1", "s2"]]


def test_the_base_is_compared_with_the_class_never_with_itself(tmp_path):
    text = (ROOT / "reference" / "roofline.py").read_bytes()
    for name in ("past1", "past2"):
        (tmp_path / "base" / name).mkdir(parents=True)
        (tmp_path / "base" / name / "roofline.py").write_bytes(text)
    base = similarity.base_digests(tmp_path / "base")
    found = similarity.compare_class({"student": similarity.digest({"roofline": text}), "other": {}}, base)
    assert {(p.a, p.b, p.from_base) for p in found.pairs} == {("student", "base:past1", True),
                                                              ("student", "base:past2", True)}
    assert not found.clusters  # a base's members join no cluster


def test_a_base_that_cannot_be_read_is_a_clear_error(tmp_path):
    with pytest.raises(SubmissionError, match="no such folder"):
        similarity.base_digests(tmp_path / "missing")
    (tmp_path / "empty" / "someone").mkdir(parents=True)
    with pytest.raises(SubmissionError, match="holds a problem module"):
        similarity.base_digests(tmp_path / "empty")


def test_the_cost_grows_with_the_matches_not_the_square_of_the_class():
    """Students who share nothing beyond the class's common code give no pair to compare in full."""
    text = (ROOT / "reference" / "flops.py").read_text()
    common = similarity.digest({"flops": text.encode()})
    found = similarity.compare_class({f"s{i}": common for i in range(200)})
    assert found.candidates == 0


# -- end to end: one small batch ------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_batch_reports_copies_to_staff_only(tmp_path):
    folder = tmp_path / "submissions"
    reference = (ROOT / "reference" / "tensors.py").read_text()
    for name, text in (("ann_copied", reference), ("bob_copied", classmates.commented(reference)),
                       ("cat_alone", (ROOT / "assignment" / "tensors.py").read_text())):
        (folder / name).mkdir(parents=True)
        (folder / name / "tensors.py").write_text(text)
    out = tmp_path / "grades"
    # --no-sandbox: the reference and the stub, nothing hostile (the sandbox is tests/meta/test_hostile.py's)
    command = [sys.executable, "-m", "grader", "batch", str(folder), "--out", str(out), "--problem", "tensors",
               "--jobs", "2", "--no-sandbox", "--no-fingerprints"]
    start = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env=grader_env(), capture_output=True, text=True, timeout=850)
    print(f"\nbatch of 3 submissions (tensors): {time.monotonic() - start:.0f} s")
    assert done.returncode == 0, done.stderr[-3000:]
    section = (out / "report.md").read_text().split("## Copies between students")[1]
    assert "| tensors |" in section and "ann_copied" in section and "bob_copied" in section
    rows = list(csv.DictReader((out / "similarity.csv").open()))
    assert [(r["submission_a"], r["submission_b"]) for r in rows] == [("ann_copied", "bob_copied")]
    assert rows[0]["lines_a"].startswith("tensors.py ") and rows[0]["lines_b"].startswith("tensors.py ")
    grades = {r["submission"]: r["similar_to"] for r in csv.DictReader((out / "grades.csv").open())}
    assert grades == {"ann_copied": "bob_copied (tensors)", "bob_copied": "ann_copied (tensors)", "cat_alone": ""}
    for name, other in (("ann_copied", "bob_copied"), ("bob_copied", "ann_copied"), ("cat_alone", "_copied")):
        results = (out / name / "results.json").read_text()  # what the student reads
        assert json.loads(results) and "similar" not in results.lower() and other not in results
    missing = [*command, "--similarity-base", str(tmp_path / "nowhere")]
    done = subprocess.run(missing, cwd=ROOT, env=grader_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--similarity-base" in done.stderr and "no such folder" in done.stderr
    shutil.rmtree(out)


# -- the calibration's table --------------------------------------------------------------------------------

def main() -> None:
    import tempfile

    rows: dict[str, list[tuple[str, similarity.Pair]]] = {"honest": [], "planted": []}
    totals = {"honest": 0, "planted": 0}
    for seed in SEEDS:
        with tempfile.TemporaryDirectory() as tmp:
            start = time.process_time()
            made, found = calibration(seed, Path(tmp) / "class")
            seconds = time.process_time() - start
        truth = planted(made)
        hows = {(g.problem, frozenset((g.members[0], m))): h for g in made.groups
                for m, h in zip(g.members[1:], g.how[1:], strict=True)}
        pairs_of_class = sum(n * (n - 1) // 2 for n in found.compared.values())
        totals["honest"] += pairs_of_class - len(truth)
        totals["planted"] += len(truth)
        for p in found.examined:
            kind = "planted" if key(p) in truth else "honest"
            rows[kind].append((hows.get(key(p), "two copies") if kind == "planted" else "", p))
        print(f"class {seed}: {len(made.students)} students, {pairs_of_class} pairs of modules, {len(truth)} planted, "
              f"{found.candidates} shared something; built, digested and compared in {seconds:.1f} s CPU")
    print(f"\n{'kind':<9}{'problem':<26}{'how':<18}{'shared':>10}{'share':>7}{'run':>5}{'in order':>10}")
    shown = sorted(rows["planted"], key=lambda r: (r[1].problem, r[0])) + \
        sorted(rows["honest"], key=lambda r: (-r[1].shared, -r[1].longest))[:10]
    for how, p in shown:
        kind = "planted" if how else "honest"
        print(f"{kind:<9}{p.problem:<26}{how:<18}{p.shared:>5}/{min(p.a_own, p.b_own):<4}{p.share:>7.0%}{p.longest:>5}"
              f"{p.in_order:>6}/{min(p.a_statements, p.b_statements):<3}{'  REPORTED' if p.similar else ''}")
    for kind in ("honest", "planted"):
        pairs = [p for _, p in rows[kind]]
        reported = sum(p.similar for p in pairs)
        print(f"{kind}: {totals[kind]} pairs, {reported} reported ({reported / totals[kind]:.2%}); of those sharing "
              f"a hash: shared {_range([p.shared for p in pairs])}, share {_range([p.share for p in pairs], '.0%')}, "
              f"run {_range([p.longest for p in pairs])}, statements in order {_range([p.in_order for p in pairs])}")
    honest, planted_ = ([p for _, p in rows[k]] for k in ("honest", "planted"))
    print(f"false positives: {sum(p.similar for p in honest)} of {totals['honest']} honest pairs; detection: "
          f"{sum(p.similar for p in planted_)} of {totals['planted']} planted pairs")


def _range(values: list, form: str = "") -> str:
    return f"{min(values):{form}} to {max(values):{form}}"


if __name__ == "__main__":
    main()
