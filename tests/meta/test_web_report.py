"""The class report's web pages (grader/webreport.py, grader/sidebyside.py, grader/markup.py).

Fast: a made-up class (no grading) whose every string a submission chooses (its name, its source, the messages its
failures earned, the names of its files) carries markup and script, written as pages and read back as a browser's
parser reads them: nothing but the writer's own markup (tests/meta/webpages.py's allowlist), every link leads
somewhere, and what was planted reads as text. The reading of the copy check's evidence and of a module's lines is
checked against the copy check and against Python.

Slow: a class graded by `batch` (tests/meta/test_class_report.py's planted mistakes and copies, and the hostile
corpus' case tests/meta/hostile/report_planted_markup.py under a name of markup) opened in a headless Chromium
(tests/meta/browser.py): from a behaviour to the submissions that failed it, from a pair to its side-by-side page
with its regions highlighted alike on both sides; no console error, no planted script run, nothing fetched but the
report's own files.
"""

import ast
import json
import time
from pathlib import Path

import pytest

try:
    from selenium.webdriver.common.by import By
except ImportError:  # the `dev` extra's: the fast tests need none, the slow ones skip saying so (browser.unavailable)
    By = None

from grader import copycheck, scoring, sidebyside, webreport
from grader.classreport import Fingerprints, Similar
from grader.grading import Graded
from grader.markup import Html, html, join, text
from grader.matches import FunctionMatch, Matches
from grader.similarity import Cluster, Pair, Similarity, Span
from grader.submission import results_name
from tests.meta import browser, rewrites, webclass, webpages
from tests.meta.suite import ROOT
from tests.meta.test_hostile import Listener

pytestmark = pytest.mark.meta

# What a submission may plant, each a way out of where a page puts it: an element, an attribute, a closed <pre>, a
# closed quote, a template's braces
PLANTED = ['<script>window.raPlanted = "script"</script>', '<img src=x onerror="window.raPlanted = \'img\'">',
           '</code></pre><svg onload="window.raPlanted = 1">', '" onmouseover="window.raPlanted = 2" x="',
           "{title}{csp}"]


def test_markup_escapes_every_value_unless_it_is_markup():
    assert html('<a href="{href}">{name}</a>', href='x" onclick="y', name="<b>&") == \
        '<a href="x&quot; onclick=&quot;y">&lt;b&gt;&amp;</a>'
    assert html("<p>{}</p>", Html("<b>kept</b>")) == "<p><b>kept</b></p>"
    assert html("{n:.1f} {t!r}", n=2.25, t="<") == "2.2 &#x27;&lt;&#x27;"
    assert html("{}", "{0}{csp}") == "{0}{csp}", "a value is never read as a template"
    assert join(["<i>", Html("<br>")], Html(", ")) == "&lt;i&gt;, <br>"
    assert isinstance(Html("<b>") + "<i>", str) and not isinstance(Html("<b>") + "<i>", Html)
    # invisible characters as their escapes: a bidirectional override, a NUL, an escape, a surrogate a file name kept
    assert text("a\u202eb\x00c\x1bd\udcffe\tf\ng") == "a\\u202eb\\x00c\\x1bd\\udcffe\tf\ng"
    assert text("ordinary café") == "ordinary café"
    with pytest.raises(ValueError):
        html("{:>5}", Html("<b>"))


def test_python_lines_are_numbered_as_python_numbers_them():
    source = "a = 1\rb = 2\r\nc = 3\n# é\x0cd\nd = '\u2028'\n"
    for encoded in (source.encode(), b"\xef\xbb\xbf" + source.encode(),
                    b"# -*- coding: latin-1 -*-\n" + source.replace("\u2028", "x").encode("latin-1")):
        lines = sidebyside.python_lines(encoded)
        for node in ast.walk(ast.parse(encoded)):
            if isinstance(node, ast.Assign):
                assert lines[node.lineno - 1].startswith(node.targets[0].id + " = "), (encoded, lines)
    assert sidebyside.python_lines(b"\xff\xfe = 1\n") == ["\ufffd\ufffd = 1"], "what does not decode is replaced"


def test_the_copy_evidence_is_read_as_the_copy_check_writes_it():
    reference = (ROOT / "reference" / "flops.py").read_text()
    copy = "# my own work\n\n" + rewrites.renamed(reference)
    matches = [m for m in copycheck.check("flops", copy) if m.copied]
    assert [m.against for m in matches] == ["reference"], matches
    found = webreport.copies_in("s", [matches[0].evidence()])
    assert [(c.module, c.against, c.source) for c in found] == [("flops", "reference", "reference/flops.py")]
    assert len(found[0].spans) == len(matches[0].spans) > 0
    copied = sidebyside.python_lines(copy.encode())
    original = sidebyside.python_lines(reference.encode())
    for span in found[0].spans:  # the lines named are where the copy and the reference hold the same code
        a, b = span.a_lines, span.b_lines
        assert copied[a[0] - 1:a[1]] and original[b[0] - 1:b[1]], span
    assert webreport.source_file("flops", "reference/flops.py") == ROOT / "reference" / "flops.py"
    assert webreport.source_file("flops", "torch/utils/flop_counter.py").is_file()


@pytest.mark.parametrize("shown", ["reference/tensors.py", "torch/../../../etc/passwd.py", "../reference/flops.py",
                                   "einops/einops.py", "torch/utils/flop_counter.pyc", "/etc/passwd.py"])
def test_a_source_named_by_evidence_is_read_only_where_the_copy_check_reads(shown):
    assert webreport.source_file("flops", shown) is None


def test_a_copy_found_in_a_decoded_literal_is_not_shown_against_the_file():
    line = ("[copy] flops.py: 40 of its 40 fingerprints (100%) are in the oracle's source (renaming and layout "
            "ignored): flops.py lines 1-90 ~ torch/utils/flop_counter.py lines 1-90 (40 fingerprints) (decoded from "
            "the literal at line 7)")
    assert webreport.copies_in("s", [line]) == []


# -- a made-up class, every string a submission chooses planted -------------------------------------------------

NAMES = ["alice", PLANTED[1], "bob \u202eevil\u202c & <b>carol", "dan{title}"]  # a name holds no "/"


def _scores(passed: list[bool], message: str) -> list[scoring.ProblemScore]:
    behaviours = [scoring.BehaviourScore(f"flops behaviour {i}", 1.0, [scoring.TestScore(
        f"tests/test_flops.py::test_{i}", "flops", 1.0, ok, "passed" if ok else "failed",
        "" if ok else f"AssertionError: {message}\n    expected 2\n    got '{message}'")])
        for i, ok in enumerate(passed)]
    return [scoring.ProblemScore("flops", "Counting compute", len(passed), behaviours)]


def made_up_class(tmp: Path) -> tuple[Path, list[Graded], Fingerprints, Similar]:
    """Four submissions of flops (one an unreadable upload), each with a name, a source and messages of markup; a
    pair and a cluster between them; a copy of the reference flagged in one grading; a catalogued mistake matched."""
    submissions, out = tmp / "submissions", tmp / "grades"
    reference = (ROOT / "reference" / "flops.py").read_text()
    source = "\n".join(f"# {p}\nPLANTED_{i} = {p!r}" for i, p in enumerate(PLANTED)) + "\n" + reference
    matches = Matches({"flops.matmul_flops": FunctionMatch(False, ["matmul_flops"], ["macs"], 20)},
                      {"flops.matmul_flops": {"macs": f"counts MACs {PLANTED[0]}"}}, ["flops"], ["flops"])
    graded, fingerprints = [], Fingerprints(descriptions=dict(matches.descriptions))
    review = [f"[copy] flops.py: 300 of its 400 fingerprints (75%) are in the reference's source (renaming and layout "
              f"ignored): flops.py lines {len(PLANTED) * 2 + 13}-{len(PLANTED) * 2 + 40} ~ reference/flops.py lines "
              f"13-40 (120 fingerprints)", f"[test_0] {PLANTED[2]}"]
    for i, name in enumerate(NAMES):
        (submissions / name).mkdir(parents=True)
        (submissions / name / "flops.py").write_text(source if i else reference)
        message = PLANTED[i % len(PLANTED)]
        scores = [] if i == 3 else _scores([i != 1, False, i % 2 == 0], message)
        status = "unreadable" if i == 3 else "review" if i == 1 else "ok"
        found = matches if i in (1, 2) else None
        known = scoring.known_mistakes(found)
        output = scoring.table(scores, [f"It holds: {PLANTED[3]}.py, {PLANTED[0]}.py"], frozenset(), known)
        results = scoring.results_json(scores, seconds=1.0, output=output, review=review if i == 1 else [],
                                       known=known)
        (out / results_name(submissions / name)).mkdir(parents=True)  # where batch writes it
        (out / results_name(submissions / name) / "results.json").write_text(json.dumps(results))
        graded.append(Graded(submissions / name, scores, "", status, 1.0, found))
        if found:
            fingerprints.per_submission[name] = found
    pair = Pair("flops", "flops", NAMES[1], NAMES[2], 400, 400, 380, 300, 60, 60, 60,
                [Span((13, 30), (13, 30), 200), Span((31, 60), (35, 64), 100), Span((13, 20), (40, 45), 9),
                 Span((5000, 5010), (50, 52), 3)])  # a region that starts with another, one past the file's end
    pair_with_base = Pair("flops", "flops", NAMES[0], f"base:{PLANTED[3]}", 400, 400, 380, 300, 60, 60, 60,
                          [Span((1, 5), (1, 5), 20)], from_base=True)
    third = Pair("flops", "flops", NAMES[0], NAMES[1], 400, 400, 390, 300, 60, 60, 60, [Span((1, 10), (1, 10), 30)])
    found = Similarity([pair, third, pair_with_base], [Cluster("flops", [NAMES[0], NAMES[1], NAMES[2]])],
                       {"flops": 4}, candidates=5, base=1)
    pair.cluster = third.cluster = 0
    similar = Similar(found, None, {NAMES[3]: f"unreadable {PLANTED[1]}"}, 0.1, f"thresholds {PLANTED[4]}")
    return out, graded, fingerprints, similar


@pytest.fixture(scope="module")
def made_up(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("web")
    out, graded, fingerprints, similar = made_up_class(tmp)
    (out / webreport.FOLDER).mkdir()
    for name in ("report.md", "grades.csv", "similarity.csv"):  # batch writes them beside
        (out / name).write_text("")
    (out / webreport.FOLDER / "results.json").write_text("a submission called report keeps its results here")
    (out / webreport.FOLDER / "pair-999.html").write_text("an earlier batch's page")
    from grader.registry import BY_ID

    (tmp / "base" / PLANTED[3]).mkdir(parents=True)  # --similarity-base's: a past year's submission
    (tmp / "base" / PLANTED[3] / "flops.py").write_text("PAST_YEAR = '<i>'\n" * 6)
    index = webreport.write(out, graded, [BY_ID["flops"]], fingerprints, similar, base=tmp / "base",
                            reasons={NAMES[3]: f"no such upload {PLANTED[0]}"})
    return out, index


def test_the_pages_hold_only_the_writers_markup(made_up):
    out, index = made_up
    assert index == out / "report.html"
    assert webpages.unexpected_markup(out) == []


def test_every_link_leads_somewhere(made_up):
    out, _ = made_up
    assert webpages.broken_links(out) == []


def test_what_was_planted_reads_as_text(made_up):
    out, _ = made_up
    every = "\n".join(page.text for page in webpages.pages(out))
    for planted in PLANTED:
        assert planted in every, planted
    for name in NAMES:
        assert webreport.slug(name)[:-11] in " ".join(p.name for p in (out / "report").iterdir()) or name == "alice"
    assert "bob \\u202eevil\\u202c & <b>carol" in every, "a bidirectional override shows as its escape"
    pair_page = webpages.read(out / "report" / "pair-1.html")
    assert {f"a{n}" for n in (1, 2)} | {f"b{n}" for n in (1, 2)} <= pair_page.ids
    assert "PLANTED_0 = '<script>" in pair_page.text, "the sources side by side, as text"
    submission = next(p for p in webpages.pages(out) if p.path.name.startswith("s-bob"))
    assert "got '</code></pre><svg onload" in submission.text, "the messages it read, as text"


def test_the_submissions_files_and_earlier_pages(made_up):
    out, _ = made_up
    folder = out / webreport.FOLDER
    assert (folder / "results.json").read_text().startswith("a submission called report"), "left alone"
    assert not (folder / "pair-999.html").exists(), "an earlier batch's page is removed"
    copy_pages = sorted(folder.glob("copy-*.html"))
    assert len(copy_pages) == 1
    copy_page = webpages.read(copy_pages[0])
    assert "a1" in copy_page.ids and "b1" in copy_page.ids
    assert "def matmul_flops" in copy_page.text, "the reference beside the copy"
    with_base = webpages.read(folder / "pair-3.html")
    assert "PAST_YEAR = '<i>'" in with_base.text and {"a1", "b1"} <= with_base.ids, "the base's module beside"


def test_a_region_is_coloured_alike_on_both_sides_and_linked_to_its_partner(made_up):
    out, _ = made_up
    page = webpages.read(out / "report" / "pair-1.html")
    starts = {a["id"]: a for tag, a in page.elements if tag == "span" and "start" in (a.get("class") or "")}
    for n in (1, 2):
        colour = f"r{n - 1}"
        assert colour in starts[f"a{n}"]["class"].split() and colour in starts[f"b{n}"]["class"].split()
    links = [a["href"] for tag, a in page.elements if tag == "a" and "jump" in (a.get("class") or "")]
    assert links == ["#b1", "#b3", "#b2", "#a1", "#a2", "#a3"], "region 4's lines of a are past its end"
    assert {"a3", "b3", "b4"} <= page.ids and "a4" not in page.ids
    coloured = [a for tag, a in page.elements if tag == "span" and "r1" in (a.get("class") or "").split()]
    # every line of region 2 on both sides, but b's lines 40 and 50, where regions 3 and 4 start (in their colours)
    assert len(coloured) == (60 - 31 + 1) + (64 - 35 + 1) - 2


# -- in a browser (slow) ------------------------------------------------------------------------------------------

class TestInABrowser:
    """The report of a class graded by `batch` (tests/meta/webclass.py), in a headless Chromium. The slow tier: the
    batch takes about a minute of a core, the browser seconds."""

    pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

    @pytest.fixture(scope="class")
    @classmethod
    def seen(cls, tmp_path_factory):
        why = browser.unavailable(install=True)
        if why:
            pytest.skip(f"no browser to open the report in: {why}")
        listener = Listener()
        try:
            out = webclass.graded(tmp_path_factory.mktemp("webclass"), listener.address)
            with browser.chromium() as driver:
                yield Seen(out, driver, listener)
        finally:
            listener.close()

    def test_a_behaviour_leads_to_the_submissions_that_failed_it_and_what_they_read(self, seen):
        driver = seen.open(webreport.INDEX)
        link = driver.find_element(By.CSS_SELECTOR, "#behaviours + p + table tbody tr td:nth-child(3) a")
        failed = int(link.text.split(" of ")[0])
        behaviour = link.find_element(By.XPATH, "../../td[2]").text
        link.click()
        assert driver.find_element(By.TAG_NAME, "h1").text == f"flops: {behaviour}"
        items = driver.find_elements(By.CSS_SELECTOR, "main ol > li")
        assert len(items) == failed >= 3, [i.text[:80] for i in items]
        assert all(item.find_element(By.TAG_NAME, "pre").text.strip() for item in items), "the first lines they read"
        name = items[0].find_element(By.TAG_NAME, "a").text
        items[0].find_element(By.LINK_TEXT, "all it read").click()
        fragment = driver.current_url.rsplit("#", 1)[1]
        heading = driver.find_element(By.ID, fragment)
        assert heading.text.startswith(f"flops: {behaviour} (0") and driver.title == name
        assert seen.clean(driver) == []

    def test_the_tables_sort_by_the_column_clicked(self, seen):
        driver = seen.open(webreport.INDEX)
        table = driver.find_element(By.CSS_SELECTOR, "#submissions + table")
        header = table.find_element(By.XPATH, ".//th[button[text()='total']]")
        column = int(driver.execute_script("return arguments[0].cellIndex", header))

        def totals():
            return [float(row.find_elements(By.TAG_NAME, "td")[column].get_attribute("data-sort"))
                    for row in table.find_elements(By.CSS_SELECTOR, "tbody tr")]

        header.find_element(By.TAG_NAME, "button").click()
        assert totals() == sorted(totals()) and header.get_attribute("aria-sort") == "ascending"
        header.find_element(By.TAG_NAME, "button").click()
        assert totals() == sorted(totals(), reverse=True) and totals()[0] > totals()[-1], "the report's script ran"
        assert seen.clean(driver) == []

    @pytest.mark.parametrize("pair", ["planted mistakes", "planted markup"])
    def test_a_pair_is_side_by_side_its_regions_highlighted_alike_on_both_sides(self, seen, pair):
        driver = seen.open(webreport.INDEX)
        rows = driver.find_elements(By.CSS_SELECTOR, "#copies ~ table tbody tr")
        wanted = webclass.COPIER if pair == "planted markup" else "erin"
        row = next(r for r in rows if wanted in r.text)
        row.find_element(By.LINK_TEXT, "side by side").click()
        regions = driver.find_elements(By.CSS_SELECTOR, "table.regions tbody tr")
        assert regions, driver.title

        def background(anchor: str) -> str:  # of the line where the region starts, as the browser paints it
            return driver.execute_script("return getComputedStyle(document.getElementById(arguments[0])"
                                         ".closest('.line')).backgroundColor", anchor)

        plain = background("a-l1")
        for n in range(1, len(regions) + 1):
            assert background(f"a{n}") == background(f"b{n}") not in (plain, "rgba(0, 0, 0, 0)"), n
        last = len(regions)
        driver.find_element(By.CSS_SELECTOR, f"#a{last} a.jump").click()
        assert driver.current_url.endswith(f"#b{last}")
        target = driver.find_element(By.ID, f"b{last}")
        shown = driver.execute_script("var r = arguments[0].getBoundingClientRect(), "
                                      "p = arguments[0].closest('.listing').getBoundingClientRect(); "
                                      "return r.top >= p.top - 1 && r.bottom <= p.bottom + 1;", target)
        assert shown, "the partner region is scrolled into its side's view"
        if pair == "planted markup":
            code = driver.find_element(By.ID, "side-a").text
            assert '# </code></pre><script>window.raPlanted = "comment"' in code
        assert seen.clean(driver) == []

    def test_nothing_planted_runs_and_nothing_is_fetched_on_any_page(self, seen):
        pages = [webreport.INDEX, *(f"{webreport.FOLDER}/{p.name}" for p in sorted(
            (seen.out / webreport.FOLDER).glob("*.html")))]
        dirty = {}
        for page in pages:
            driver = seen.open(page)
            dirty[page] = seen.clean(driver)
        assert {page: found for page, found in dirty.items() if found} == {}
        assert len(pages) > 30
        hostile = seen.open(f"{webreport.FOLDER}/s-{webreport.slug(webclass.HOSTILE)}.html")
        body = hostile.find_element(By.TAG_NAME, "body").text
        assert webclass.HOSTILE in body and '<script>window.raPlanted = "message"' in body
        nothing = seen.open(f"{webreport.FOLDER}/s-{webreport.slug(webclass.NOTHING)}.html")
        assert f"It holds: {webclass.FILE}" in nothing.find_element(By.TAG_NAME, "body").text
        assert seen.listener.connections == 0

    def test_the_policy_refuses_a_script_or_a_fetch_that_is_not_the_reports(self, seen):
        # were a planted element ever to reach a page, its Content-Security-Policy would still refuse it
        driver = seen.open(webreport.INDEX)
        driver.execute_script("var s = document.createElement('script'); s.textContent = 'window.raPlanted = 1'; "
                              "document.body.appendChild(s); var i = document.createElement('img'); "
                              f"i.src = 'http://{seen.listener.address}/policy'; document.body.appendChild(i); "
                              "window.raFetched = 'no'; try { fetch('http://" + seen.listener.address + "/fetch')"
                              ".then(function () { window.raFetched = 'yes'; }, function () {}); } catch (e) {}")
        time.sleep(1)
        assert driver.execute_script("return typeof window.raPlanted") == "undefined"
        assert driver.execute_script("return window.raFetched") == "no"
        refused = browser.console_errors(driver)
        assert any("Content Security Policy" in line for line in refused), refused
        assert seen.listener.connections == 0
        browser.requests(driver)


class Seen:
    """The graded class's report (`out`) in the `driver`, and the listener a planted script would ask."""

    def __init__(self, out: Path, driver, listener):
        self.out, self.driver, self.listener = out, driver, listener

    def open(self, page: str):
        self.driver.get((self.out / page).resolve().as_uri())
        return self.driver

    def clean(self, driver) -> list[str]:
        """What is wrong with the pages loaded since the last call: a console error, a request for anything but the
        report's own files, a planted script that ran."""
        found = [f"console: {line}" for line in browser.console_errors(driver)]
        root = self.out.resolve().as_uri()
        found += [f"fetched {url}" for url in browser.requests(driver) if not url.startswith(root)]
        if driver.execute_script("return typeof window.raPlanted") != "undefined":
            found.append(f"a planted script ran: {driver.execute_script('return window.raPlanted')}")
        return found
