"""The class report as web pages, for course staff: OUT/report.html and its pages in OUT/report/, written by
`resource-grader batch` beside report.md (grader/batch/classreport.py), from the same findings and the submissions' own
results.json files (what each student read).

    report.html             the class: a histogram of the totals and of each problem (SVG); every behaviour with its
                            failure rate (a table sorted by any column), linked to the submissions that failed it; the
                            catalogued mistakes the class made, with counts; the copies between students, ranked
                            pairs and clusters (grader/similarity.py); the modules flagged in their gradings as copies
                            of an oracle or of the reference (grader/copycheck.py); every submission
    report/behaviour-N.html the submissions that failed a behaviour, each with the first lines of what it read
    report/mistakes-N.html  a comparable function: the submissions that match each catalogued mistake, and those
                            that differ from the reference and match none
    report/pair-N.html      a reported pair: the two modules side by side, each matched region coloured alike on both
                            sides and linked to its partner, the share and the longest run at the top
    report/copy-....html    a module flagged as a copy, beside the oracle's file or the reference's module, alike
    report/s-NAME.html      a submission: its scores, the feedback the student read, the evidence staff see (review
                            flags, fingerprints) and its pairs

The pages open from disk, with no server and no network: no file is fetched, the plots are inline SVG, and each page
carries its style and its one script (sorting the tables) inline, with a Content-Security-Policy that allows no
script or style but those two (by their SHA-256) and nothing from anywhere (`default-src 'none'`). Every string that
came from a submission (its source, the messages it earned, its name) is put into a page through grader/batch/markup.py,
escaped as text: markup or script planted in it shows as text and never runs.

For course staff only: the pages show the reference's and the oracles' source beside copies of them; no student
receives any of it, and no score depends on it.
"""

import base64
import hashlib
import importlib.util
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from grader import OFFICIAL_ROOT, copycheck, registry, similarity
from grader.batch.classreport import Fingerprints, Similar, failure_rates, mistakes_by_function, score_figures
from grader.batch.markup import Html, html, join, text
from grader.batch.sidebyside import Sources, listing, side_by_side
from grader.outcome import Outcome
from grader.similarity import Pair, Span
from grader.submission import results_name

INDEX = "report.html"
FOLDER = "report"  # the pages beside report.html
FROM_INDEX = f"{FOLDER}/"  # what a link from report.html to a page in the folder starts with
FIRST_LINES = 8  # of a submission's feedback, shown on a behaviour's and a mistake's page
SHOWN_PAIR_PAGES = 250  # side-by-side pages for the strongest pairs (MOSS's default); every pair in the table

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d1d1f;background:#fff}
header,main{padding:0 1.5rem}header{background:#f3f4f6;border-bottom:1px solid #d0d4da;padding-bottom:.4rem}
.staff{color:#8a1c1c;font-weight:600}nav a{margin-right:1rem}h1{font-size:1.45rem;margin:.6rem 0}
h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #e2e4e8}h3{font-size:1.05rem}
table{border-collapse:collapse;margin:.5rem 0}th,td{padding:.2rem .55rem;border-bottom:1px solid #e6e8eb;
text-align:left;vertical-align:top}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
th button{font:inherit;font-weight:600;background:none;border:0;padding:0;cursor:pointer;color:inherit}
th[aria-sort=ascending] button::after{content:" \\25B2"}th[aria-sort=descending] button::after{content:" \\25BC"}
pre,code{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre.feedback{background:#f7f7f9;border:1px solid #e2e4e8;padding:.5rem;white-space:pre-wrap;overflow-wrap:anywhere}
.plots{display:flex;flex-wrap:wrap;gap:1rem}.plots figure{margin:0}svg text{font:11px system-ui,sans-serif}
.bad{color:#a11}.ok{color:#176b2c}.muted{color:#666}.evidence li{margin:.3rem 0;overflow-wrap:anywhere}
.figures{font-size:1.05rem;background:#fff8e6;border:1px solid #f0d9a0;padding:.5rem .8rem}
.sides{display:grid;grid-template-columns:1fr 1fr;gap:.8rem}.side{min-width:0}
.side h3{margin:.4rem 0}.listing{height:78vh;overflow:auto;border:1px solid #d0d4da;margin:0}
.listing pre{margin:0;padding:.2rem 0;white-space:pre}.line{display:block;padding-right:.6rem}
.ln{display:inline-block;width:3.2em;text-align:right;color:#888;padding-right:.5em;user-select:none}
.jump{display:inline-block;width:2.2em;text-align:center;font-weight:700;text-decoration:none;color:#000}
.gap{display:inline-block;width:2.2em}td.view{white-space:nowrap}.line:target,.start:target{outline:2px solid #000}
.r0{background:#ffd1d1}.r1{background:#c9e7ff}.r2{background:#d4f5cf}.r3{background:#fde7b0}
.r4{background:#e6d5ff}.r5{background:#c8f1ee}.r6{background:#ffd9f0}.r7{background:#e4e4c4}
"""

SCRIPT = """
"use strict";
(function () {
  function key(cell) {
    var value = cell.getAttribute("data-sort");
    return value === null ? cell.textContent.trim().toLowerCase() : parseFloat(value);
  }
  function compare(x, y) {
    if (typeof x === "number" && typeof y === "number") { return x - y; }
    return String(x).localeCompare(String(y));
  }
  function sort(table, column, header) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (cell) { cell.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    rows.sort(function (a, b) {
      var order = compare(key(a.cells[column]), key(b.cells[column]));
      return ascending ? order : -order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (header, column) {
      var button = header.querySelector("button");
      if (button) { button.addEventListener("click", function () { sort(table, column, header); }); }
    });
  });
})();
"""


def _sha256(source: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode()


CSP = (f"default-src 'none'; script-src '{_sha256(SCRIPT)}'; style-src '{_sha256(STYLE)}'; base-uri 'none'; "
       "form-action 'none'")

PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="referrer" content="no-referrer"><meta name="robots" content="noindex">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title><style>{style}</style></head>
<body><header><p class="staff">Course staff only: this report shows the reference's and the oracles' source beside
copies of them. Never give it, or any page of it, to a student.</p>
<nav><a href="{home}">Class report</a><a href="{home}#behaviours">Behaviours</a><a href="{home}#mistakes">Mistakes\
</a><a href="{home}#copies">Copies</a><a href="{home}#submissions">Submissions</a></nav></header>
<main>{body}</main><script>{script}</script></body></html>
"""


# -- what the pages show, read from the batch's findings and the files it wrote ----------------------------------

@dataclass(frozen=True)
class Feedback:
    """One behaviour as its student read it (a test of results.json): its text, and the catalogued mistakes its
    feedback names (`known`: the ids)."""

    problem: str
    behaviour: str
    passed: bool
    score: float
    max_score: float
    text: str
    known: tuple[str, ...] = ()

    def first_lines(self, count: int = FIRST_LINES) -> str:
        lines = [line for line in self.text.splitlines() if line.strip()]
        more = f"\n... ({len(lines) - count} more lines)" if len(lines) > count else ""
        return "\n".join(lines[:count]) + more


@dataclass
class Results:
    """A submission's results.json as the pages show it: the text at the top (`output`), each behaviour's feedback,
    and what is for course staff (`review`: the evidence that flagged it; `grader_errors`). `unreadable`: why there
    is none."""

    output: str = ""
    feedback: list[Feedback] = field(default_factory=list)
    review: list[str] = field(default_factory=list)
    grader_errors: list[str] = field(default_factory=list)
    unreadable: str = ""
    _index: dict[tuple[str, str], int] = field(default_factory=dict, repr=False, compare=False)

    def of(self, problem: str, behaviour: str) -> tuple[int, Feedback] | None:
        """The feedback of a behaviour, with its place (its anchor on the submission's page)."""
        if len(self._index) != len(self.feedback):
            self._index = {(f.problem, f.behaviour): i for i, f in reversed(list(enumerate(self.feedback)))}
        i = self._index.get((problem, behaviour))
        return None if i is None else (i, self.feedback[i])


_FENCE = re.compile(r"\A(`{3,})text\n(.*)\n\1\Z", re.S)


def _unfenced(block: object) -> str:
    """A results.json text as the student reads it: without the Markdown fence of scoring.code_block."""
    found = _FENCE.match(block) if isinstance(block, str) else None
    return found.group(2) if found else str(block or "")


def read_results(path: Path) -> Results:
    """What `path` (a results.json) holds; a file that is missing or not the grader's JSON says so."""
    try:
        data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
        tests, staff = data.get("tests", []), data.get("extra_data") or {}
        feedback = []
        for test in tests:
            problem, _, behaviour = str(test.get("name", "")).partition(": ")
            known = test.get("extra_data", {}).get("known_mistakes", {})
            feedback.append(Feedback(problem, behaviour, test.get("status") == "passed", float(test.get("score", 0)),
                                     float(test.get("max_score", 0)), _unfenced(test.get("output")),
                                     tuple(str(m) for ids in known.values() for m in ids)))
        return Results(_unfenced(data.get("output")), feedback, [str(line) for line in staff.get("review", [])],
                       [str(line) for line in staff.get("grader_errors", [])])
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        return Results(unreadable=f"{path.name} cannot be read ({type(exc).__name__}: {exc})")


_COPY_SPAN = re.compile(r"(?P<module>\w+)\.py lines (?P<a1>\d+)-(?P<a2>\d+) ~ (?P<source>[\w./-]+\.py) lines "
                        r"(?P<b1>\d+)-(?P<b2>\d+) \((?P<size>\d+) fingerprints\)")
_COPY_HEAD = re.compile(r"\[copy\] \w+\.py: .*? in the (?P<against>oracle|reference)'s source")


@dataclass(frozen=True)
class CopyOf:
    """A module of a submission that its grading flagged as a copy of `source` (an oracle's file, or the
    reference's module: `against`), with the matched line ranges (`spans`: a_lines the module's, b_lines the
    source's) and the whole line of evidence."""

    submission: str
    module: str
    against: str
    source: str
    spans: tuple[Span, ...]
    evidence: str
    page: str  # its side-by-side page


def copies_in(submission: str, review: list[str]) -> list[CopyOf]:
    """The copies of an oracle or of the reference that the review evidence names with their lines, one per source
    file (grader/copycheck.py Match.evidence); a copy found in a decoded literal is none of them (its lines are the
    decoded text's, not the file's)."""
    found: list[CopyOf] = []
    for line in review:
        head = _COPY_HEAD.match(line)
        if not head or "(decoded from the literal" in line:
            continue
        by_source: dict[tuple[str, str], list[Span]] = {}
        for m in _COPY_SPAN.finditer(line):
            by_source.setdefault((m["module"], m["source"]), []).append(
                Span((int(m["a1"]), int(m["a2"])), (int(m["b1"]), int(m["b2"])), int(m["size"])))
        found += [CopyOf(submission, module, head["against"], source, tuple(spans), line,
                         f"copy-{slug(submission)}-{len(found) + k + 1}.html")
                  for k, ((module, source), spans) in enumerate(by_source.items())]
    return found


def source_file(module: str, shown: str) -> Path | None:
    """The file a copy's evidence names (`shown`: "reference/flops.py", "torch/utils/flop_counter.py"), where it is
    one the copy check reads for `module`: the reference's module, or a Python file of a package among its
    problem's oracles; None for any other name."""
    if shown == f"reference/{module}.py":
        path = OFFICIAL_ROOT / "reference" / f"{module}.py"
        return path if path.is_file() else None
    problem = registry.BY_MODULE[module].id if module in registry.BY_MODULE else ""
    oracles = (*registry.ORACLES.get(problem, ()), *copycheck.HELPERS.get(problem, ()))
    top = shown.split("/", 1)[0]
    if not shown.endswith(".py") or top not in {name.split(".", 1)[0] for name in oracles}:
        return None
    try:
        spec = importlib.util.find_spec(top)  # a top-level package: found without importing it
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None or not spec.submodule_search_locations:
        return None
    package = Path(spec.origin).resolve().parent
    path = (package.parent / shown).resolve()
    return path if path.is_relative_to(package) and path.is_file() else None


# -- building blocks ------------------------------------------------------------------------------------------

def slug(name: str) -> str:
    """A file name for a page about `name` (any text a submission chose): its letters and digits, and a digest of
    the whole, so that two names never share a page."""
    plain = re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_")[:40] or "x"
    return f"{plain}-{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:10]}"


def _pct(count: int, of: int) -> str:
    return f"{count / of:.0%}" if of else "-"


def _num(value: float, shown: str | None = None) -> Html:
    """A numeric cell: sorted by its value, shown as `shown`."""
    return html('<td class="n" data-sort="{value}">{shown}</td>', value=f"{value:.6g}",
                shown=f"{value:g}" if shown is None else shown)


def sortable(headers: list[tuple[str, bool]], rows: list[Html], caption: str = "") -> Html:
    """A table whose rows (`<tr>` markup) sort by a column when its header is clicked; `headers`: (title,
    numeric)."""
    head = join(html('<th class="{cls}" scope="col"><button type="button">{title}</button></th>',
                     cls="n" if numeric else "", title=title) for title, numeric in headers)
    return html('<table class="sortable">{caption}<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>',
                caption=html("<caption>{}</caption>", caption) if caption else Html(""), head=head, rows=join(rows))


def histogram(values: list[float], out_of: float, title: str) -> Html:
    """An SVG histogram of `values` in ten bins of a tenth of `out_of` (as report.md's PNGs)."""
    counts = [0] * 10
    for value in values:
        share = min(max(value, 0.0), out_of) / out_of if out_of else 0.0
        counts[min(int(share * 10), 9)] += 1
    width, height, left, top, plot_w, plot_h = 360, 190, 34, 24, 310, 120
    most = max(counts) or 1
    bars = []
    for i, count in enumerate(counts):
        bar_h = plot_h * count / most
        bars.append(html('<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" fill="#4c72b0">'
                         '<title>{tip}</title></rect>', x=left + i * plot_w / 10 + 1, y=top + plot_h - bar_h,
                         w=plot_w / 10 - 2, h=bar_h,
                         tip=f"{count} submission{'s' * (count != 1)} from {out_of * i / 10:g} to "
                             f"{out_of * (i + 1) / 10:g}"))
    ticks = join(html('<text x="{x:.1f}" y="{y}" text-anchor="middle">{label}</text>', x=left + plot_w * f,
                      y=top + plot_h + 14, label=f"{out_of * f:g}") for f in (0, 0.5, 1))
    return html('<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
                'aria-label="{title}"><text x="{left}" y="15" font-weight="600">{title}</text>{bars}'
                '<line x1="{left}" y1="{base}" x2="{right}" y2="{base}" stroke="#333"/>{ticks}'
                '<text x="{tx}" y="{ty}" text-anchor="end">{most}</text>'
                '<text x="{cx}" y="{cy}" text-anchor="middle">score (out of {out_of:g})</text></svg>',
                width=width, height=height, title=title, left=left, bars=join(bars), base=top + plot_h,
                right=left + plot_w, ticks=ticks, tx=left - 4, ty=top + 8, most=most, cx=left + plot_w / 2,
                cy=top + plot_h + 30, out_of=out_of)


def _bar(share: float) -> Html:
    return html('<svg width="80" height="10" role="img" aria-label="{pct}"><rect width="80" height="10" '
                'fill="#eceef1"/><rect width="{w:.1f}" height="10" fill="#c0392b"/></svg>', pct=f"{share:.0%}",
                w=80 * share)


def pre(body: str) -> Html:
    return html('<pre class="feedback">{}</pre>', body)


# -- the pages ------------------------------------------------------------------------------------------------

@dataclass
class Student:
    """One submission as the pages show it."""

    name: str
    page: str
    graded: Outcome
    results: Results
    pairs: list[int] = field(default_factory=list)  # indexes into the reported pairs
    copies: list[CopyOf] = field(default_factory=list)

    @property
    def scored(self) -> bool:
        return self.graded.scored

    @property
    def total(self) -> float:
        return self.graded.total

    @property
    def reason(self) -> str:
        """Why it has no score, where a grading did not finish."""
        return self.graded.reason

    def link(self, prefix: str = "", anchor: str = "") -> Html:
        """A link to its page from a page in the folder (`prefix` FROM_INDEX: from the index)."""
        return html('<a href="{prefix}{page}{anchor}">{name}</a>', prefix=prefix, page=self.page, anchor=anchor,
                    name=self.name)


@dataclass
class Report:
    """Everything the pages are made from: the class (`students`, by name), the problems graded, the findings."""

    out: Path
    students: dict[str, Student]
    problems: list
    fingerprints: Fingerprints
    similar: Similar | None
    sources: Sources
    pages: dict[str, str] = field(default_factory=dict)  # file name under FOLDER -> its HTML

    @property
    def pairs(self) -> list[Pair]:
        return list(self.similar.found.pairs) if self.similar and self.similar.found else []

    def who(self, name: str, prefix: str = "") -> Html:
        """A link to a submission's page (a name of the base, which has none, as text)."""
        student = self.students.get(name)
        return student.link(prefix) if student else text(name)

    def add(self, name: str, title: str, body: Html) -> None:
        self.pages[name] = html(PAGE, csp=CSP, title=title, style=Html(STYLE), script=Html(SCRIPT),
                                home=f"../{INDEX}", body=body)


def write(out: Path, graded: list[Outcome], problems: list, fingerprints: Fingerprints, similar: Similar | None = None,
          *, paths: dict[str, Path], base: Path | None = None) -> Path:
    """Write OUT/report.html and its pages in OUT/report/ for `graded` (one Outcome per submission, found at
    `paths`[its name]: each one's results.json is read from OUT/<submission.results_name>/) on `problems`, with
    the catalogued mistakes (`fingerprints`) and the copies between students (`similar`; `base`: the folder of
    `--similarity-base`, whose modules a pair may show). Returns the path of report.html. Earlier pages in
    OUT/report/ are removed (its other files are left alone: a submission may be called "report")."""
    folder = out / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.html"):
        old.unlink()
    students = {}
    for g in graded:
        results = read_results(out / results_name(paths[g.name]) / "results.json")
        students[g.name] = Student(g.name, f"s-{slug(g.name)}.html", g, results,
                                   copies=copies_in(g.name, results.review))
    report = Report(out, students, problems, fingerprints, similar, Sources({g.name: paths[g.name] for g in graded},
                                                                            base))
    for index, pair in enumerate(report.pairs):
        for name in (pair.a, pair.b):
            if name in students:
                students[name].pairs.append(index)
    body = join([_summary(report), _scores(report), _behaviours(report), _mistakes(report), _copies(report),
                 _oracle_copies(report), _submissions(report)])
    for student in students.values():
        _submission_page(report, student)
    for name, page in report.pages.items():
        (folder / name).write_text(page, encoding="utf-8")
    path = out / INDEX
    path.write_text(html(PAGE, csp=CSP, title="Class report", style=Html(STYLE), script=Html(SCRIPT), home=INDEX,
                         body=body), encoding="utf-8")
    return path


def _summary(report: Report) -> Html:
    students = list(report.students.values())
    scored = [s for s in students if s.scored]
    others: dict[str, list[Student]] = {}
    for s in students:
        if not s.scored:
            others.setdefault(s.graded.status, []).append(s)
    lines = [html("<li>Status <code>{status}</code> (no score, not counted below): {names}.</li>", status=status,
                  names=join((s.link(FROM_INDEX) for s in group), ", ")) for status, group in sorted(others.items())]
    return html('<h1>Class report</h1><p>{n} submissions, {k} with a score (status ok or review). Also: '
                '<a href="report.md">report.md</a>, <a href="grades.csv">grades.csv</a>{csv}.</p><ul>{lines}</ul>',
                n=len(students), k=len(scored), lines=join(lines),
                csv=html(', <a href="{f}">{f}</a>', f="similarity.csv") if report.pairs else Html(""))


def _scores(report: Report) -> Html:
    scored = [s.graded for s in report.students.values() if s.scored]
    rows, plots = [], []
    for figure in score_figures(scored, report.problems):
        cells = join(_num(v, f"{v:.2f}") for v in figure.stats) or Html('<td class="n">-</td>' * 4)
        rows.append(html('<tr><td>{name}</td><td>{title}</td>{out_of}{cells}</tr>', name=figure.name,
                         title=figure.title, out_of=_num(figure.out_of), cells=cells))
        plots.append(html("<figure>{}</figure>", histogram(figure.values, figure.out_of, figure.label)))
    table = sortable([("problem", False), ("title", False), ("out of", True), ("mean", True), ("median", True),
                      ("min", True), ("max", True)], rows)
    return html('<h2 id="scores">Scores</h2>{table}<div class="plots">{plots}</div>', table=table,
                plots=join(plots))


def _behaviours(report: Report) -> Html:
    """The index's table of behaviours and a page for each that some submission failed."""
    rows_out = []
    rates = failure_rates([s.graded for s in report.students.values()])
    for i, row in enumerate(rates):
        page = f"behaviour-{i + 1}.html"
        if row["failed"]:
            _behaviour_page(report, row, page)
            failed = html('<a href="{prefix}{page}">{n} of {of}</a>', prefix=FROM_INDEX, page=page, n=row["failed"],
                          of=row["of"])
        else:
            failed = html("0 of {}", row["of"])
        share = row["failed"] / row["of"] if row["of"] else 0.0
        rows_out.append(html('<tr><td>{problem}</td><td>{behaviour}</td><td class="n" data-sort="{failed_n}">'
                             '{failed}</td>{rate}<td>{bar}</td>{lost}</tr>', problem=row["problem"],
                             behaviour=row["behaviour"], failed_n=row["failed"], failed=failed,
                             rate=_num(share, f"{share:.0%}"), bar=_bar(share), lost=_num(row["lost"],
                                                                                          f"{row['lost']:.2f}")))
    started = {r["problem"] for r in rates}
    unstarted = [p.id for p in report.problems if p.id not in started]
    note = html("<p>Started by no scored submission: {}.</p>", ", ".join(unstarted)) if unstarted else Html("")
    table = sortable([("problem", False), ("behaviour", False), ("failed", True), ("rate", True), ("", False),
                      ("points lost", True)], rows_out)
    return html('<h2 id="behaviours">Behaviours by failure rate</h2><p>A behaviour fails for a submission when any of '
                'its tests fails; it counts only the submissions that started its problem (a problem left as the stub '
                'is not started). Worst first; click a column to sort by it, a count to see who failed it and what '
                'they read.</p>{table}{note}', table=table, note=note)


def _behaviour_page(report: Report, row: dict, page: str) -> None:
    items = []
    for name in row["failing"]:
        student = report.students[name]
        found = student.results.of(row["problem"], row["behaviour"])
        if found is None:
            items.append(html("<li>{who}: its results.json does not name this behaviour.</li>", who=student.link()))
            continue
        k, feedback = found
        items.append(html('<li>{who}: {score:g} of {points:g} points (<a href="{page}#fb-{k}">all it read</a>){pre}'
                          '</li>', who=student.link(), score=feedback.score, points=feedback.max_score,
                          page=student.page, k=k, pre=pre(feedback.first_lines())))
    title = f"{row['problem']}: {row['behaviour']}"
    report.add(page, title, html('<h1>{title}</h1><p>Failed by {n} of the {of} submissions that started {problem} '
                                 '({pct}); {lost:.2f} points lost in all. Each with the first lines of what it read:'
                                 '</p><ol>{items}</ol>', title=title, n=row["failed"], of=row["of"],
                                 problem=row["problem"], pct=_pct(row["failed"], row["of"]), lost=row["lost"],
                                 items=join(items)))


def _mistakes(report: Report) -> Html:
    fingerprints = report.fingerprints
    head = html('<h2 id="mistakes">Catalogued mistakes</h2>')
    if fingerprints.skipped:
        return html("{head}<p>Not computed: {why}.</p>", head=head, why=fingerprints.skipped)
    rows = []
    for n, (function, found) in enumerate(sorted(mistakes_by_function(fingerprints).items())):
        if not found.differ:
            continue
        page = f"mistakes-{n + 1}.html"
        _mistake_page(report, function, found, page)
        descriptions = fingerprints.descriptions.get(function, {})
        entries = sorted(found.matches.items(), key=lambda item: (-len(item[1]), item[0]))
        entries += [("", found.unexplained)] if found.unexplained else []
        for j, (mistake, names) in enumerate(entries):
            share = len(names) / len(found.compared)
            label = html("<code>{}</code>", mistake) if mistake else html('<span class="muted">differ from the '
                                                                          'reference, match none</span>')
            rows.append(html('<tr><td>{function}</td><td>{label}</td><td>{description}</td><td class="n" '
                             'data-sort="{k}"><a href="{prefix}{page}#m-{j}">{k} of {of}</a></td>{rate}</tr>',
                             function=function, label=label, description=descriptions.get(mistake, ""), k=len(names),
                             prefix=FROM_INDEX, page=page, j=j, of=len(found.compared),
                             rate=_num(share, f"{share:.0%}")))
    if not rows:
        return html("{head}<p>Every compared function agrees with the reference.</p>", head=head)
    table = sortable([("function", False), ("mistake", False), ("what it does", False), ("submissions", True),
                      ("share", True)], rows)
    return html("{head}<p>The functions of each problem a submission failed, run again on <code>compare</code>'s "
                "inputs: the catalogued mistakes (tests/mistakes/) whose answers are theirs on every input tried. A "
                "count links to the submissions and what they read.</p>{table}", head=head, table=table)


def _mistake_page(report: Report, function: str, found, page: str) -> None:
    problem, _, name = function.partition(".")
    descriptions = report.fingerprints.descriptions.get(function, {})
    entries = sorted(found.matches.items(), key=lambda item: (-len(item[1]), item[0]))
    entries += [("", found.unexplained)] if found.unexplained else []
    sections = []
    for j, (mistake, names) in enumerate(entries):
        heading = html("<code>{m}</code>: {d}", m=mistake, d=descriptions.get(mistake, "")) if mistake else \
            html("Differ from the reference and match no catalogued mistake")
        items = []
        for who in names:
            student = report.students.get(who)
            if student is None:
                continue
            failed = [(k, f) for k, f in enumerate(student.results.feedback) if f.problem == problem and not f.passed]
            shown = next(((k, f) for k, f in failed if mistake and mistake in f.known), None) or \
                next(((k, f) for k, f in failed if name.split(" ")[0] in f.text), None) or (failed[0] if failed
                                                                                              else None)
            what = html('<br>In <a href="{page}#fb-{k}">{behaviour}</a>:{pre}', page=student.page, k=shown[0],
                        behaviour=shown[1].behaviour, pre=pre(shown[1].first_lines())) if shown else Html("")
            items.append(html("<li>{who}{what}</li>", who=student.link(), what=what))
        sections.append(html('<h2 id="m-{j}">{heading}</h2><p>{n} of the {of} submissions compared on {function} '
                             '({pct}).</p><ol>{items}</ol>', j=j, heading=heading, n=len(names),
                             of=len(found.compared), function=function, pct=_pct(len(names), len(found.compared)),
                             items=join(items)))
    report.add(page, function, html("<h1>{function}</h1>{sections}", function=function, sections=join(sections)))


def _copies(report: Report) -> Html:
    head = html('<h2 id="copies">Copies between students</h2>')
    similar = report.similar
    if similar is None:
        return html("{head}<p>Not compared.</p>", head=head)
    if similar.found is None:
        return html("{head}<p>Not compared: {why}.</p>", head=head, why=similar.skipped)
    found = similar.found
    intro = html("<p>Every pair of submissions compared per problem module: names, literals, comments and layout "
                 "ignored, the stub's code and what the class writes alike left out ({thresholds}). {candidates} pairs "
                 "shared something; {n} are reported. A reported pair is for a person to read side by side, never a "
                 "verdict. For course staff: no student sees this, and it changes no score.</p>",
                 thresholds=similar.thresholds, candidates=found.candidates, n=len(found.pairs))
    clusters = [html("<li>cluster {problem}-{i}: {n} submissions share one source on {problem}: {members}</li>",
                     problem=c.problem, i=i + 1, n=len(c.members),
                     members=join((report.who(m, FROM_INDEX) for m in c.members), ", "))
                for i, c in enumerate(found.clusters)]
    rows = []
    for index, pair in enumerate(found.pairs):
        page = f"pair-{index + 1}.html"
        if index < SHOWN_PAIR_PAGES:
            _pair_page(report, index, pair, page)
            view = html('<a href="{prefix}{page}">side by side</a>', prefix=FROM_INDEX, page=page)
        else:
            view = html('<span class="muted">in similarity.csv</span>')
        rows.append(html('<tr>{rank}<td>{problem}</td><td>{a}</td><td>{b}</td>{strength}{shared}{share}{run}{order}'
                         '<td class="view">{view}</td></tr>', rank=_num(index + 1), problem=pair.problem,
                         a=report.who(pair.a, FROM_INDEX), b=report.who(pair.b, FROM_INDEX),
                         strength=_num(pair.strength, f"{pair.strength:.0%}"),
                         shared=_num(pair.shared), share=_num(pair.share, f"{pair.share:.0%}"),
                         run=_num(pair.longest), order=_num(pair.in_order), view=view))
    table = sortable([("#", True), ("problem", False), ("submission", False), ("submission", False),
                      ("strength", True), ("hashes shared", True), ("share", True), ("longest run", True),
                      ("statements in order", True), ("", False)], rows) if rows else \
        html("<p>No pair is past the thresholds.</p>")
    missing = [html("<li>{who}: {why}.</li>", who=report.who(name, FROM_INDEX), why=why)
               for name, why in sorted(similar.not_compared.items())]
    return html("{head}{intro}<ul>{clusters}</ul>{table}{missing}", head=head, intro=intro, clusters=join(clusters),
                table=table, missing=html("<p>Not compared:</p><ul>{}</ul>", join(missing)) if missing else Html(""))


def _pair_page(report: Report, index: int, pair: Pair, page: str) -> None:
    cluster = ""
    if pair.cluster is not None and report.similar and report.similar.found:
        c = report.similar.found.clusters[pair.cluster]
        cluster = html(" Part of cluster {problem}-{i}: {members}.", problem=c.problem, i=pair.cluster + 1,
                       members=join((report.who(m) for m in c.members), ", "))
    by_statements = pair.padded and pair.longest < similarity.MIN_RUN  # its regions are statements (similarity.py)
    figures = html('<p class="figures"><strong>{share} shared</strong> ({shared} hashes, of the smaller side\'s '
                   '{smaller_own}; {a}: {a_own}, {b}: {b_own}) &middot; <strong>longest run in order: {run}</strong> '
                   '&middot; statements in order: {order} of {smaller} ({order_share}) &middot; strength {strength}'
                   '{padded}.{cluster}</p>', share=f"{pair.share:.0%}", shared=pair.shared,
                   smaller_own=min(pair.a_own, pair.b_own), a=pair.a, a_own=pair.a_own, b=pair.b, b_own=pair.b_own,
                   run=pair.longest, order=pair.in_order, smaller=min(pair.a_statements, pair.b_statements),
                   order_share=f"{pair.in_order_share:.0%}", strength=f"{pair.strength:.0%}",
                   padded=" (padded: its regions are statements in order)" if by_statements else "", cluster=cluster)
    unit = "statements" if by_statements else "hashes"
    left, right = report.sources.module(pair.a, pair.module), report.sources.module(pair.b, pair.module)
    body = html('<h1>Pair {n} of {total}: {a} and {b} on {problem}</h1><p>{a_link} beside {b_link}, '
                '<code>{module}.py</code>. Each matched region has one colour on both sides; its number links to '
                'its lines on the other side.</p>{figures}{view}', n=index + 1, total=len(report.pairs), a=pair.a,
                b=pair.b, problem=pair.problem, a_link=report.who(pair.a), b_link=report.who(pair.b),
                module=pair.module, figures=figures, view=side_by_side(left, right, list(pair.spans), unit))
    report.add(page, f"Pair {index + 1}: {pair.a} and {pair.b} ({pair.problem})", body)


def _oracle_copies(report: Report) -> Html:
    rows = []
    for student in report.students.values():
        for copy in student.copies:
            path = source_file(copy.module, copy.source)
            source = listing(copy.source, path.read_bytes() if path else None,
                             f"{copy.source} is not a file the copy check reads for {copy.module}.py")
            mine = report.sources.module(student.name, copy.module)
            body = html('<h1>{who}: <code>{module}.py</code> beside {source}</h1><p>Flagged in its grading as a copy '
                        'of the {against}\'s source (grader/copycheck.py). Each matched region has one colour on both '
                        'sides; its number links to its lines on the other side.</p><p class="figures">{evidence}'
                        '</p>{view}', who=student.link(anchor="#evidence"), module=copy.module, source=copy.source,
                        against=copy.against, evidence=copy.evidence,
                        view=side_by_side(mine, source, list(copy.spans), "fingerprints"))
            report.add(copy.page, f"{student.name}: {copy.module}.py beside {copy.source}", body)
            rows.append(html('<tr><td>{who}</td><td>{module}.py</td><td>{against}</td><td>{source}</td>{n}'
                             '<td class="view"><a href="{prefix}{page}">side by side</a></td></tr>',
                             who=student.link(FROM_INDEX),
                             module=copy.module, against=copy.against, source=copy.source,
                             n=_num(sum(s.size for s in copy.spans)), prefix=FROM_INDEX, page=copy.page))
    if not rows:
        body = html("<p>No grading flagged a copy of an oracle or of the reference with its lines.</p>")
    else:
        body = sortable([("submission", False), ("module", False), ("a copy of the", False), ("source", False),
                         ("fingerprints in its regions", True), ("", False)], rows)
    return html('<h2 id="oracle-copies">Copies of an oracle or of the reference</h2><p>Modules that their grading '
                'flagged (status review) as copies of an oracle or of the reference, beside that source. For course '
                'staff only.</p>{body}', body=body)


def _submissions(report: Report) -> Html:
    rows = []
    for s in report.students.values():
        by_id = {p.id: p.score for p in s.graded.scores}
        cells = join(_num(by_id[p.id], f"{by_id[p.id]:.2f}") if p.id in by_id else html('<td class="n" data-sort='
                                                                                         '"-1">-</td>')
                     for p in report.problems)
        rows.append(html('<tr><td>{who}</td><td>{status}</td>{total}{cells}{flags}{pairs}</tr>', who=s.link(FROM_INDEX),
                         status=s.graded.status, total=_num(s.total, f"{s.total:.2f}") if s.scored else
                         html('<td class="n" data-sort="-1">-</td>'), cells=cells, flags=_num(len(s.results.review)),
                         pairs=_num(len(s.pairs))))
    headers = [("submission", False), ("status", False), ("total", True), *((p.id, True) for p in report.problems),
               ("review flags", True), ("pairs", True)]
    return html('<h2 id="submissions">Submissions</h2>{}', sortable(headers, rows))


def _submission_page(report: Report, student: Student) -> None:
    results = student.results
    status = html("<p>Status <code>{status}</code>{reason}. Total {total:.2f} of {points:g}.</p>",
                  status=student.graded.status, reason=f": {student.reason}" if student.reason else "",
                  total=student.total, points=sum(p.points for p in student.graded.scores))
    body = [html("<h1>{}</h1>", student.name), status, _evidence(report, student), _pairs_of(report, student),
            _score_table(student), html('<h2 id="feedback">What the student read</h2>')]
    if results.unreadable:
        body.append(html('<p class="bad">{}</p>', results.unreadable))
    else:
        body.append(pre(results.output))
        for k, f in enumerate(results.feedback):
            cls = "ok" if f.passed else "bad"
            body.append(html('<h3 id="fb-{k}" class="{cls}">{problem}: {behaviour} ({score:g} of {points:g})</h3>'
                             '{pre}', k=k, cls=cls, problem=f.problem, behaviour=f.behaviour, score=f.score,
                             points=f.max_score, pre=pre(f.text)))
    report.add(student.page, student.name, join(body))


def _score_table(student: Student) -> Html:
    rows = []
    for p in student.graded.scores:
        rows.append(html('<tr><th scope="row">{id}</th><td></td><td class="n">{score:.2f} / {points:g}</td><td></td>'
                         '</tr>', id=p.id, score=p.score, points=p.points))
        for b in p.behaviours:
            found = student.results.of(p.id, b.name)
            name = html('<a href="#fb-{k}">{name}</a>', k=found[0], name=b.name) if found else text(b.name)
            rows.append(html('<tr><td></td><td class="{cls}">{name}</td><td class="n">{score:g} / {points:g}</td>'
                             '<td class="n">{passed}/{tests} tests</td></tr>', cls="ok" if b.passed else "bad",
                             name=name, score=round(b.score, 4), points=round(b.points, 4), passed=b.tests_passed,
                             tests=len(b.tests)))
    if not rows:
        return html("<p>No score.</p>")
    return html('<h2 id="scores">Scores</h2><table><thead><tr><th>problem</th><th>behaviour</th><th class="n">'
                'score</th><th class="n">tests passed</th></tr></thead><tbody>{}</tbody></table>', join(rows))


def _evidence(report: Report, student: Student) -> Html:
    results, found = student.results, student.graded.fingerprints
    review = []
    for line in results.review:
        copies = [c for c in student.copies if c.evidence == line]
        links = join((html(' <a href="{page}">side by side with {source}</a>', page=c.page, source=c.source)
                      for c in copies), "")
        review.append(html("<li>{line}{links}</li>", line=line, links=links))
    parts = [html('<h2 id="evidence">Evidence (course staff only)</h2>')]
    parts.append(html("<h3>Review flags</h3><ul class=\"evidence\">{}</ul>", join(review)) if review else
                 html("<p>No review flag.</p>"))
    if found is not None:
        known = []
        for function, match in sorted(found.functions.items()):
            if match.agree:
                continue
            described = found.descriptions.get(function, {})
            mistakes = [html("<code>{m}</code> ({d})", m=m, d=described.get(m, "")) for m in match.matches]
            what = join(mistakes, "; ") if mistakes else text("differs from the reference, matches no catalogued "
                                                             "mistake")
            known.append(html("<li><code>{f}</code>: {what}</li>", f=function, what=what))
        ran = f"Run again on compare's inputs for {', '.join(found.ran)}, in {found.seconds:.1f} s" if found.ran else \
            "Nothing run again (the problems it failed: none, or not started)"
        extra = "; stopped at the time limit" * found.timed_out + (f"; failed: {found.error}" if found.error else "")
        parts.append(html("<h3>Fingerprints</h3><p>{ran}{extra}.</p><ul>{known}</ul>", ran=ran, extra=extra,
                          known=join(known)))
    if results.grader_errors:
        parts.append(html("<h3>Errors of the grading code</h3><ul>{}</ul>",
                          join(html("<li>{}</li>", line) for line in results.grader_errors)))
    return join(parts)


def _pairs_of(report: Report, student: Student) -> Html:
    if not student.pairs:
        return html('<h2 id="pairs">Copies between students</h2><p>In no reported pair.</p>')
    rows = []
    for index in student.pairs:
        pair = report.pairs[index]
        other = pair.b if pair.a == student.name else pair.a
        view = html('<a href="pair-{n}.html">side by side</a>', n=index + 1) if index < SHOWN_PAIR_PAGES else \
            html('<span class="muted">in similarity.csv</span>')
        rows.append(html('<tr><td>{problem}</td><td>{other}</td>{strength}{shared}{run}<td class="view">{view}</td>'
                         '</tr>', problem=pair.problem, other=report.who(other), shared=_num(pair.shared),
                         strength=_num(pair.strength, f"{pair.strength:.0%}"), run=_num(pair.longest), view=view))
    return html('<h2 id="pairs">Copies between students</h2>{}', sortable(
        [("problem", False), ("with", False), ("strength", True), ("hashes shared", True), ("longest run", True),
         ("", False)], rows))
