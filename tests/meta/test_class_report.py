"""batch's class report (grader/batch/classreport.py): a synthetic class through `resource-grader batch`.

The class: the reference, the stubs, and submissions each carrying one or two catalogued mistakes of flops,
written as real modules (tests/meta/suite.py's `planted_source`). The report must count
exactly the planted mistakes, its histograms must be PNGs that open, and its failure rates must be those of
the results.json files. On a made-up class whose names and messages carry markup, report.md read by a Markdown
renderer (markdown-it-py, CommonMark with tables) holds only the report's own markup.
"""

import csv
import re
import shutil
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from grader import scoring
from grader.batch import classreport
from grader.outcome import Outcome
from tests.meta.suite import ROOT, grader_env
from tests.mistakes import find_mistake, planted_source

pytestmark = [pytest.mark.meta, pytest.mark.timeout(900)]

PLANTED = {  # submission -> the flops mistakes it carries (two share one: a count of 2)
    "dave": ["macs", "mfu_inverted"],
    "erin": ["macs", "params_tied"],
}


def make_class(folder):
    (folder / "reference").mkdir(parents=True)
    shutil.copy(ROOT / "reference" / "flops.py", folder / "reference" / "flops.py")
    (folder / "stubs").mkdir()
    shutil.copy(ROOT / "assignment" / "flops.py", folder / "stubs" / "flops.py")
    for name, mistakes in PLANTED.items():
        (folder / name).mkdir()
        (folder / name / "flops.py").write_text(planted_source("flops", mistakes))


@pytest.fixture(scope="module")
def batch_out(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("class")
    make_class(tmp / "submissions")
    out = tmp / "grades"
    # --no-sandbox: these submissions are the reference and the catalogue's own code, nothing hostile; the
    # sandbox is proven by tests/meta/test_hostile.py, and needs root or bubblewrap that CI may not give.
    command = [sys.executable, "-m", "grader", "batch", str(tmp / "submissions"), "--out", str(out),
               "--problem", "flops", "--jobs", "2", "--no-sandbox"]
    start = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env=grader_env(), capture_output=True, text=True, timeout=850)
    print(f"\nbatch of {len(PLANTED) + 2} submissions (flops): {time.monotonic() - start:.0f} s")
    assert done.returncode == 0, done.stderr[-3000:]
    (out / "batch.stderr").write_text(done.stderr)  # the operator's log: why a submission is `error`
    return out


def test_a_planted_source_is_the_mistake():
    namespace = {}
    exec(compile(planted_source("flops", ["macs", "mfu_inverted"]), "planted", "exec"), namespace)
    assert namespace["matmul_flops"](4, 7, 13) == 4 * 7 * 13
    assert namespace["mfu"](10, 1, 100) == pytest.approx(10)
    assert namespace["transformer_param_count"] is namespace["ref"].transformer_param_count


def test_the_report_counts_the_planted_mistakes(batch_out):
    report = (batch_out / "report.md").read_text()
    counted = {(m["function"], m["mistake"]): (int(m["n"]), int(m["of"])) for m in re.finditer(
        r"^- flops\.(?P<function>\w+): \d+% \((?P<n>\d+) of (?P<of>\d+)\) match `(?P<mistake>\w+)`", report, re.M)}
    planted = {}
    for mistakes in PLANTED.values():
        for mistake_id in mistakes:
            for function in find_mistake(f"flops:{mistake_id}").replaces:
                planted[(function, mistake_id)] = planted.get((function, mistake_id), 0) + 1
    compared = len(PLANTED) + 1  # the reference and the planted ones; the stubs are not compared
    for key, n in planted.items():
        assert counted.get(key) == (n, compared), f"{key}: planted {n} of {compared}; report: {counted.get(key)}"
    planted_ids = {m for ms in PLANTED.values() for m in ms}
    assert {m for _, m in counted} <= planted_ids, f"the report names mistakes nobody made: {counted}"
    assert "- flops.matmul_flops: 67% (2 of 3) match `macs`: counts multiply-accumulates" in report


def test_the_histograms_exist_and_open(batch_out):
    import matplotlib.image

    report = (batch_out / "report.md").read_text()
    linked = set(re.findall(r"\]\((hist_\w+\.png)\)", report))
    assert linked == {"hist_total.png", "hist_flops.png"}
    for name in linked:
        image = matplotlib.image.imread(batch_out / name)
        assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100, (name, image.shape)


def test_the_failure_rates_add_up(batch_out):
    import json

    rows = list(csv.DictReader((batch_out / "grades.csv").open()))
    statuses = {r["submission"]: r["status"] for r in rows}
    # the reference, and the reference with mistakes planted, are copies of the reference (grader/copycheck.py)
    expected = {"stubs": "ok", **{n: "review" for n in ["reference", *PLANTED]}}
    assert statuses == expected, (batch_out / "batch.stderr").read_text()
    failed = {}
    for row in rows:
        for test in json.loads((batch_out / row["submission"] / "results.json").read_text())["tests"]:
            behaviour = test["name"].split(": ", 1)[1]
            failed[behaviour] = failed.get(behaviour, 0) + (test["status"] != "passed")
    report = (batch_out / "report.md").read_text()
    table = {m[1]: (int(m[2]), int(m[3]), int(m[4])) for m in re.finditer(
        r"^\| flops \| (.+?) \| (\d+) of (\d+) \| (\d+)% \|", report, re.M)}
    # a row for each behaviour some started submission failed (the stubs, which fail every test, have not started)
    failing = {behaviour for behaviour, count in failed.items() if count > 1}
    assert set(table) == failing or (set(table) < failing and len(table) == classreport.SHOWN_BEHAVIOURS), (
        sorted(table), sorted(failing))
    for behaviour, (n, of, pct) in table.items():
        # the stubs have not started flops: counted neither as failing nor in "of"
        assert n == failed[behaviour] - 1 and of == len(rows) - 1, (behaviour, n, failed[behaviour], of)
        assert pct == round(100 * n / of)
    rates = [n / of for n, of, _ in table.values()]
    assert rates == sorted(rates, reverse=True), "worst first"
    assert sum(n for n, _, _ in table.values()) >= 3  # each planted submission fails some


# -- the behaviours section, on a made-up class (no grading) ---------------------------------------------

def graded(name: str, problems: dict[str, list[bool]], untouched=()) -> Outcome:
    """A scored submission whose problem P has one behaviour per flag (passed or not), each worth 1 point."""
    scores = [scoring.ProblemScore(p, p, len(flags), [
        scoring.BehaviourScore(f"{p} behaviour {i}", 1.0,
                               [scoring.TestScore(f"t::{p}{i}", p, 1.0, ok, "passed" if ok else "failed")])
        for i, ok in enumerate(flags)]) for p, flags in problems.items()]
    return Outcome(name, "ok", 1.0, scores, untouched=frozenset(untouched))


def test_an_untouched_problem_is_not_counted_as_failing():
    stub = graded("stub", {"flops": [False] * 3, "tensors": [False] * 2}, untouched={"flops", "tensors"})
    half = graded("half", {"flops": [True, False, True], "tensors": [False] * 2}, untouched={"tensors"})
    rows = {r["behaviour"]: (r["failed"], r["of"]) for r in classreport.failure_rates([stub, half])}
    assert rows == {"flops behaviour 0": (0, 1), "flops behaviour 1": (1, 1), "flops behaviour 2": (0, 1)}
    lines = classreport.behaviour_lines([stub, half], [SimpleNamespace(id="flops"), SimpleNamespace(id="tensors")])
    assert "Started by no scored submission: tensors." in lines
    assert "| flops | flops behaviour 1 | 1 of 1 | 100% | 1.00 |" in lines
    assert not any("| 0% |" in line for line in lines), "a behaviour no one failed is left out of the table"
    assert lines[-3].startswith("The other 2: 0 failed by some") and lines[-3].endswith("2 by none."), lines


def test_the_table_is_a_screenful_with_the_rest_summed_up():
    shown = classreport.SHOWN_BEHAVIOURS
    flags = [i % 3 == 0 for i in range(shown + 10)]  # a third passed by everyone
    class_ = [graded(f"s{k}", {"flops": [f or i < k for i, f in enumerate(flags)]}) for k in range(4)]
    lines = classreport.behaviour_lines(class_, [SimpleNamespace(id="flops")])
    table = [line for line in lines if line.startswith("| flops |")]
    assert len(table) == shown and len(lines) < shown + 10
    rates = [int(line.split(" | ")[2].split(" of ")[0]) for line in table]
    assert rates == sorted(rates, reverse=True) and rates[0] == 4
    rest = classreport.failure_rates(class_)[shown:]
    lost = sum(r["lost"] for r in rest)
    failing = sum(1 for r in rest if r["failed"])
    assert f"The other 10: {failing} failed by some" in lines[-1] and f"{lost:.2f} points lost in all" in lines[-1]
    assert lines[-1].endswith(f"{10 - failing} by none.")


def test_how_it_ran_counts_the_whole_command_and_says_once():
    run = classreport.Run(engine="this machine", seconds=10.0, command_seconds=20.0, graded=["a", "b"],
                          retries={"a": 1})
    lines = classreport.run_lines(run)
    assert "2 gradings in 10 s, the whole command in 20 s: 360 submissions per hour for the whole command." in lines
    assert "Given to another worker after theirs died: once, for `a` (1)." in lines


def test_the_web_pages_show_the_same_class(batch_out):
    from tests.meta import webpages

    assert webpages.unexpected_markup(batch_out) == [] and webpages.broken_links(batch_out) == []
    report = (batch_out / "report.md").read_text()
    table = {m[1]: (int(m[2]), int(m[3]))
             for m in re.finditer(r"^\| flops \| (.+?) \| (\d+) of (\d+) \|", report, re.M)}
    pages = {}
    for path in (batch_out / "report").glob("behaviour-*.html"):
        text = webpages.page_text(path)
        found = re.search(r"^flops: (.+)\nFailed by (\d+) of the (\d+) submissions that started flops", text, re.M)
        pages[found[1]] = (int(found[2]), int(found[3]))
        assert text.count("all it read") == int(found[2]), path.name  # one entry per submission that failed it
    assert pages == table, "a page per behaviour failed, with report.md's counts"
    mistakes = {(m[1], m[4]): (int(m[2]), int(m[3])) for m in re.finditer(
        r"^- (flops\.\w+): \d+% \((\d+) of (\d+)\) match `(\w+)`", report, re.M)}
    shown = {}
    for path in (batch_out / "report").glob("mistakes-*.html"):
        text = webpages.page_text(path)
        for m in re.finditer(r"^(\w+): .*\n(\d+) of the (\d+) submissions compared on (flops\.\w+) ", text, re.M):
            shown[(m[4], m[1])] = (int(m[2]), int(m[3]))
    assert mistakes and mistakes.items() <= shown.items(), (mistakes, shown)
    rows = list(csv.DictReader((batch_out / "similarity.csv").open()))
    for n, row in enumerate(rows, start=1):
        title = webpages.read(batch_out / "report" / f"pair-{n}.html").text
        assert f"Pair {n}: {row['submission_a']} and {row['submission_b']} (flops)" in title
    assert not (batch_out / "report" / f"pair-{len(rows) + 1}.html").exists()


# -- what a submission chose, in report.md: shown as written ------------------------------------------------

CHOSEN = ["<script>alert('planted')</script>", "<img src=x onerror=alert(1)>", "[a link](https://example.org)",
           "**bold** _em_ ~~gone~~", "a | pipe", "``tick`` `", "line\nbreak", "&amp; entity"]
OWN_TAGS = {"h1", "h2", "p", "ul", "li", "table", "thead", "tbody", "tr", "th", "td", "code", "a", "img"}


def test_what_a_submission_chose_reads_as_written_in_report_md(tmp_path):
    from html.parser import HTMLParser

    from markdown_it import MarkdownIt

    from grader.matches import Matches
    from grader.similarity import Cluster, Pair, Similarity, Span

    names = [f"s{i} {planted}" for i, planted in enumerate(CHOSEN)]
    graded = [graded_(name, {"flops": [i % 2 == 0]}) for i, name in enumerate(names)]
    graded.append(Outcome(CHOSEN[0], "error", 0.0, reason=CHOSEN[1]))
    fingerprints = classreport.Fingerprints(per_submission={names[1]: Matches(error=f"Traceback\n{CHOSEN[2]}"),
                                                            names[2]: Matches(timed_out=True)})
    run = classreport.Run(engine="this machine", retries={names[3]: 1}, regrades=[classreport.Regrade(
        names[4], f"its grading.json is corrupt ({CHOSEN[5]})", 1.0, "ok", 2.0, "ok")])
    pair = Pair("flops", "flops", names[5], names[6], 40, 40, 30, 30, 20, 20, 10, [Span((1, 9), (1, 9), 30)])
    pair.cluster = 0
    found = Similarity([pair], [Cluster("flops", [names[5], names[6], names[7]])], {"flops": 8}, candidates=1)
    similar = classreport.Similar(found, None, {names[7]: f"no digest {CHOSEN[3]}"}, 0.1, "thresholds")
    problems = [SimpleNamespace(id="flops", title="Counting compute", points=1)]
    text = classreport.write(tmp_path, graded, problems, fingerprints, run, similar).read_text()

    class Parsed(HTMLParser):
        tags, code, text = set(), [], []

        def handle_starttag(self, tag, attrs):
            self.tags.add(tag)
            self.code.append("") if tag == "code" else None

        def handle_data(self, data):
            self.text.append(data)
            if self.lasttag == "code" and self.code:
                self.code[-1] += data

    rendered = MarkdownIt("commonmark").enable("table").render(text)
    parsed = Parsed()
    parsed.feed(rendered)
    assert parsed.tags <= OWN_TAGS, f"markup that is not the report's: {parsed.tags - OWN_TAGS}"
    assert not re.search(r"<(script|img src=x|a href=\"https://example)", rendered), rendered
    shown = " ".join(parsed.code)
    for name in [*names[1:], CHOSEN[0]]:  # every name the report gives, in a code span, as written (a line break
        assert name.replace("\n", " ") in shown, name  # a space)
    assert CHOSEN[2] in shown, "the last line of a fingerprint's error, as written"
    assert f"its grading.json is corrupt ({CHOSEN[5]})" in "".join(parsed.text), "why it was graded again, as written"
    assert "Not compared: " in text and "| flops | 100% |" in rendered or "<td>flops</td>" in rendered
    assert not any(row.count("<td>") > 9 for row in rendered.split("<tr>")), "a pipe split a cell"
    assert "<td>Not compared" not in rendered, "a line after a table is none of its rows"


def graded_(name: str, problems: dict[str, list[bool]]) -> Outcome:
    return graded(name, problems)
