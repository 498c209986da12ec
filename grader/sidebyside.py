"""Two modules side by side, as MOSS shows a pair: each matched region (grader/similarity.py's Span: lines of the
first side, lines of the second) coloured alike on both sides, its number linked to where it starts on the other, for
the class report's pages (grader/webreport.py, whose style colours the regions' classes r0 to r7).

A module is listed as Python reads and numbers it (`python_lines`), so that the line numbers of the copy check and of
the similarity digests (which keep the original lines) name the lines shown; every line goes into the page through
grader/markup.py, as text.
"""

import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

from grader import copycheck
from grader.markup import Html, html, join, text
from grader.similarity import Span
from grader.submission import SubmissionError, read_modules

SHOWN_BYTES = copycheck.MAX_BYTES  # of a module shown side by side (larger ones are compared by no one) ...
SHOWN_LINES = 10_000  # ... and lines (the reference's longest module has 700)
REGION_COLOURS = 8  # matched regions cycle through this many colours (the style's .r0 to .r7)


def python_lines(data: bytes) -> list[str]:
    """A module's lines as Python reads and numbers them: its encoding (a coding cookie, a BOM; utf-8 by default,
    what does not decode replaced), its line ends universal (\\n, \\r\\n, a bare \\r)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        source = data.decode(encoding, errors="replace")
    except (SyntaxError, LookupError):
        source = data.decode("utf-8", errors="replace")
    lines = re.split(r"\r\n|\r|\n", source.removeprefix("\ufeff"))
    return lines[:-1] if lines and lines[-1] == "" else lines


@dataclass(frozen=True)
class Listing:
    """One side of a side-by-side page: its title, and its lines, or why there are none (`missing`)."""

    title: str
    lines: tuple[str, ...] = ()
    missing: str = ""
    truncated: bool = False

    def shows(self, line: int) -> bool:
        return 1 <= line <= len(self.lines)


def listing(title: str, data: bytes | None, why: str = "") -> Listing:
    """A module's listing (`data`: its bytes; None: `why` there are none), up to SHOWN_BYTES and SHOWN_LINES."""
    if data is None:
        return Listing(title, missing=why or "not found")
    lines = python_lines(data[:SHOWN_BYTES])
    return Listing(title, tuple(lines[:SHOWN_LINES]), truncated=len(data) > SHOWN_BYTES or len(lines) > SHOWN_LINES)


class Sources:
    """The modules of the class's submissions (and of the similarity base's: "base:NAME"), each read once, as
    grading reads them (grader/submission.py: a symbolic link refused)."""

    def __init__(self, where: dict[str, Path], base: Path | None = None):
        self.where, self.base = where, base
        self.read: dict[str, dict[str, bytes] | str] = {}

    def module(self, name: str, module: str) -> Listing:
        title = f"{name}: {module}.py"
        if name not in self.read:
            path = self.base / name.removeprefix("base:") if name.startswith("base:") and self.base else \
                self.where.get(name)
            try:
                self.read[name] = read_modules(path) if path else "not among the submissions"
            except (SubmissionError, OSError, ValueError) as exc:
                self.read[name] = f"cannot be read: {exc}"
        found = self.read[name]
        if isinstance(found, str):
            return listing(title, None, found)
        return listing(title, found.get(module), f"{module}.py is not in the submission")


def code_side(side: str, shown: Listing, other: Listing, spans: list[Span]) -> Html:
    """One side of a side-by-side view: its numbered lines, each line of the k-th matched region (its lines on this
    `side`, "a" or "b") coloured as region k, and its first line linked to where region k starts on the `other` side
    where that side shows it (a line two regions cover is the first's)."""
    if shown.missing:
        return html('<div class="side"><h3>{title}</h3><p class="bad">{why}</p></div>', title=shown.title,
                    why=shown.missing)
    partner = "b" if side == "a" else "a"
    region: dict[int, int] = {}
    starts: dict[int, list[int]] = {}
    for k, span in enumerate(spans):
        first, last = getattr(span, f"{side}_lines")
        starts.setdefault(first, []).append(k)
        for number in range(first, min(last, len(shown.lines)) + 1):
            region.setdefault(number, k)

    def jump(k: int, anchor: bool) -> Html:  # region k's number, linked to its partner where the other side shows it
        link = other.shows(getattr(spans[k], f"{partner}_lines")[0])
        return html('<{tag} class="jump"{id}{href}>{n}</{tag}>', tag="a" if link else "span", n=k + 1,
                    id=html(' id="{}{}"', side, k + 1) if anchor else Html(""),
                    href=html(' href="#{p}{n}" title="region {n}: its lines on the other side"', p=partner, n=k + 1)
                    if link else Html(""))

    rows = []
    for number, line in enumerate(shown.lines, start=1):
        here = starts.get(number, [])  # the regions that start on this line: the first names the line
        k = here[0] if here else region.get(number)
        gutter = join(jump(j, anchor=i > 0) for i, j in enumerate(here)) if here else Html('<span class="gap"></span>')
        rows.append(html('<span class="{cls}" id="{id}"><span class="ln">{number}</span>{gutter}{line}</span>',
                         cls="line" if k is None else f"line r{k % REGION_COLOURS}" + " start" * bool(here),
                         id=f"{side}{k + 1}" if here else f"{side}-l{number}", number=number, gutter=gutter,
                         line=line))
    note = html('<p class="muted">Shown up to its first {n} bytes or {lines} lines.</p>', n=SHOWN_BYTES,
                lines=SHOWN_LINES) if shown.truncated else Html("")
    return html('<div class="side" id="side-{side}"><h3>{title}</h3>{note}<div class="listing"><pre><code>{rows}'
                '</code></pre></div></div>', side=side, title=shown.title, note=note, rows=join(rows))


def side_by_side(left: Listing, right: Listing, spans: list[Span], size_unit: str) -> Html:
    """The two listings side by side, with the table of the matched regions above them (each linked to its lines
    where a side shows them)."""
    def lines(side: str, n: int, span: Span, shown: Listing) -> Html:
        first, last = getattr(span, f"{side}_lines")
        label = f"{first}-{last}"
        return html('<a href="#{side}{n}">{label}</a>', side=side, n=n, label=label) if shown.shows(first) else \
            text(label)

    rows = [html('<tr class="r{c}"><td class="n">{n}</td><td>{a}</td><td>{b}</td><td class="n">{size}</td></tr>',
                 c=k % REGION_COLOURS, n=k + 1, a=lines("a", k + 1, span, left), b=lines("b", k + 1, span, right),
                 size=span.size) for k, span in enumerate(spans)]
    regions = html('<table class="regions"><thead><tr><th>region</th><th>lines of {a}</th><th>lines of {b}</th>'
                   '<th class="n">{unit}</th></tr></thead><tbody>{rows}</tbody></table>', a=left.title, b=right.title,
                   unit=size_unit, rows=join(rows)) if spans else \
        html('<p class="muted">No matched line ranges are named.</p>')
    return html('{regions}<div class="sides">{a}{b}</div>', regions=regions, a=code_side("a", left, right, spans),
                b=code_side("b", right, left, spans))
