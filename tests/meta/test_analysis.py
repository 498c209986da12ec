"""Every analysis of a submission in a box (grader/harness/box.py, grader/analysis.py): its answers are the analyses'
own, and whatever a submission does to them (a decompression bomb, nesting past the parser's depth, a flood of
tokens, a module of pathological size: tests/meta/hostile/bomb_analysis_*) ends within the box's limits and the
grading's deadline; where the box is cut off, the grading keeps its results and is flagged for a person."""

import json
import resource
import time
from pathlib import Path

import pytest

from grader import analysis, copycheck, grading, similarity
from grader.harness import seccomp
from grader.harness.box import OUTPUT_BYTES, Box, Cut
from tests.meta import bombs
from tests.meta.suite import ROOT

pytestmark = pytest.mark.meta

HOSTILE = Path(__file__).parent / "hostile"
BOMBS = sorted(p.stem for p in HOSTILE.glob("bomb_analysis_*.py"))


def stub(module: str) -> str:
    return (ROOT / "assignment" / f"{module}.py").read_text()


def analysed(modules: dict[str, bytes], seconds: float = 120) -> tuple[analysis.Analysis, dict, dict]:
    """`modules` through their box: the box, its first answer and its second."""
    start = time.monotonic()
    boxed = analysis.Analysis(modules)
    try:
        return boxed, boxed.start(start + seconds), boxed.copies(start + seconds)
    finally:
        boxed.close()


def test_the_box_answers_what_the_analyses_compute():
    modules = {m: (ROOT / "reference" / f"{m}.py").read_bytes() for m in ("flops", "adamw", "memory")}
    modules["tensors"] = (ROOT / "assignment" / "tensors.py").read_bytes()
    boxed, started, copies = analysed(modules)
    assert boxed.cut is None and started["untouched"] == ["tensors"] and started["broken"] == {}
    assert copies["evidence"] == copycheck.evidence(modules)
    assert json.loads(json.dumps(similarity.digest(modules))) == copies["digest"]


def test_the_box_reads_what_the_graders_process_kept(tmp_path, monkeypatch):
    """The box may write no file, so the grader's own process keeps what the copy check compares with (the oracles'
    sources, the reference's module, the stub's hashes: grader/copycheck.py `keep`) before the box starts, and the
    box reads that rather than computing it again at every grading (about a CPU-second of each)."""
    import pickle

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    modules = {"flops": (ROOT / "reference" / "flops.py").read_bytes()}
    boxed, _, copies = analysed(modules)
    assert boxed.cut is None and any("reference/flops.py" in line for line in copies["evidence"]), copies
    folder = tmp_path / "resource-accounting" / "copycheck"
    readings = {file: pickle.loads(file.read_bytes()) for file in folder.glob("*.pickle")}
    assert len(readings) == 3, "the oracles, the reference and the stub, each kept once"
    (reference_file,) = [f for f, value in readings.items() if isinstance(value, tuple) and value
                         and getattr(value[0], "name", None) == "reference/flops.py"]
    (source,) = readings[reference_file]
    source.name = "reference/as-the-grader-kept-it.py"
    reference_file.write_bytes(pickle.dumps((source,)))
    _, _, again = analysed(modules)
    assert any("reference/as-the-grader-kept-it.py" in line for line in again["evidence"]), again["evidence"]


def test_the_box_reads_what_python_reads():
    """Whatever the parser imports as it reads (a codec a module declares, the Unicode database for \\N{...} and
    non-ASCII names) is there in the box: the box reads a module as the grader's own process would."""
    reference = (ROOT / "reference" / "flops.py").read_text()
    extra = "\n_CAFÉ = 'caf\\N{LATIN SMALL LETTER E WITH ACUTE}'\nπ = 3.14159\n"
    modules = {"flops": ("# -*- coding: latin-1 -*-\n" + reference + extra.replace("π", "pi")).encode("latin-1"),
               "adamw": b"\xef\xbb\xbf" + (ROOT / "reference" / "adamw.py").read_bytes().replace(b"\n", b"\r"),
               "memory": ((ROOT / "reference" / "memory.py").read_text() + extra).encode("utf-8")}
    boxed, started, copies = analysed(modules)
    assert boxed.cut is None and started["broken"] == {}, (boxed.cut, started["broken"])
    assert copies["evidence"] == copycheck.evidence(modules) and len(copies["evidence"]) == 3, copies["evidence"]


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@pytest.mark.parametrize("bomb", BOMBS)
def test_every_bomb_ends_within_the_boxs_limits(bomb):
    """Each bomb is answered or cut off, in the box's CPU seconds: never the grader's own time."""
    text = bombs.case(stub("flops"), (HOSTILE / f"{bomb}.py").read_text())
    before, start = cpu_of_children(), time.monotonic()
    _, _, copies = analysed({"flops": text.encode()}, seconds=300)
    spent = cpu_of_children() - before
    assert spent <= analysis.CPU_SECONDS + 2, f"{bomb}: {spent:.1f} CPU seconds"
    assert time.monotonic() - start < 300
    flagged = "# expect: review" in (HOSTILE / f"{bomb}.py").read_text()
    assert bool(copies["evidence"]) >= flagged, f"{bomb}: {copies['evidence']}"


@pytest.mark.parametrize("do, why", [("loop", "CPU seconds"), ("memory", "MiB of memory"),
                                     ("output", f"passed {OUTPUT_BYTES >> 20} MiB"), ("silence", "time limit"),
                                     ("crash", "crashed"), ("nonsense", "not what an analysis answers")])
def test_a_box_is_cut_off_at_each_of_its_limits(do, why):
    start = time.monotonic()
    with Box("tests.meta.box_targets", {"do": do}, cpu_seconds=2, memory_mb=512) as box:
        assert box.next(start + 30) == {"first": True}
        with pytest.raises(Cut, match=why):
            box.next(start + 10)
    assert time.monotonic() - start < 30


def test_the_boxs_filter_leaves_it_nothing_but_its_answer():
    if seccomp.unsupported():
        pytest.skip(f"no seccomp filter here: {seccomp.unsupported()}")
    with Box("tests.meta.box_targets", {"do": "reach"}, cpu_seconds=10, memory_mb=512) as box:
        box.next(time.monotonic() + 30)
        found = box.next(time.monotonic() + 30)
    assert found == {"open": 38, "write a file": 38, "fork": 38, "signal": 38}, found  # ENOSYS: not in its list
    assert not Path("/tmp/ra-hostile-box").exists()


def test_a_grading_whose_analysis_is_cut_off_keeps_its_results_and_is_flagged(tmp_path, monkeypatch):
    from grader.harness.sandbox import detect
    from grader.job import Settings
    from grader.runner import Limits

    monkeypatch.setattr(grading, "Analysis", _Starved)
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / "memory.py").write_bytes((ROOT / "reference" / "memory.py").read_bytes())
    settings = Settings(Limits(), ["memory"], detect("none"), None)
    graded = grading.grade_submission(tmp_path / "submission", tmp_path / "results.json", settings)
    results = json.loads((tmp_path / "results.json").read_text())
    assert graded.status == "review" and results["score"] == graded.scores[0].points, results
    assert results["extra_data"]["review"][0].startswith("[analysis] the submission's source could not be analysed")


class _Starved(analysis.Analysis):
    """An analysis whose box is given no time at all."""

    def start(self, deadline: float) -> dict:
        return super().start(time.monotonic())
