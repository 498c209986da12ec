"""The class report's web pages (grader/webreport.py) read back as a browser's parser reads them, for the tests:
what markup they hold against the allowlist of what the writer makes (`unexpected_markup`), whether every link
leads to a page and an anchor that exist (`broken_links`), and their text as a reader sees it (`page_text`).

The allowlist names what the writer puts in a page, never what an attacker might: any other element or attribute,
a script that is not the report's own, a link that leaves the report's folder or names a scheme, is unexpected.
"""

import html.parser
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from grader import webreport

TAGS = frozenset("html head meta title style body header p nav a main h1 h2 h3 table caption thead tbody tr th td "
                 "button svg rect text line figure ul ol li code pre span div strong br script".split())
ATTRIBUTES = frozenset("lang charset http-equiv content name href id class scope type data-sort title role aria-label "
                       "xmlns width height x y x1 y1 x2 y2 fill stroke font-weight text-anchor".split())
BLOCKS = frozenset("title p h1 h2 h3 li tr pre div figure".split())  # a line of the text ends with each
HREF = re.compile(r"\A(\.\./)?[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)?(#[A-Za-z0-9_-]+)?\Z|\A#[A-Za-z0-9_-]+\Z")


@dataclass
class Page:
    path: Path
    elements: list[tuple[str, dict[str, str | None]]] = field(default_factory=list)
    scripts: list[str] = field(default_factory=list)
    styles: list[str] = field(default_factory=list)
    ids: set[str] = field(default_factory=set)
    links: list[str] = field(default_factory=list)
    text: str = ""


class _Reader(html.parser.HTMLParser):
    def __init__(self, page: Page):
        super().__init__(convert_charrefs=True)
        self.page, self.inside, self.chunks = page, [], []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.page.elements.append((tag, attributes))
        if "id" in attributes:
            self.page.ids.add(attributes["id"])
        if tag == "a" and "href" in attributes:
            self.page.links.append(attributes["href"] or "")
        if tag in ("script", "style"):
            self.inside.append([tag, ""])

    def handle_endtag(self, tag):
        if self.inside and self.inside[-1][0] == tag:
            kind, body = self.inside.pop()
            (self.page.scripts if kind == "script" else self.page.styles).append(body)
        elif tag in BLOCKS:
            self.chunks.append("\n")

    def handle_data(self, data):
        if self.inside:
            self.inside[-1][1] += data
        else:
            self.chunks.append(data)


def read(path: Path) -> Page:
    page = Page(path)
    reader = _Reader(page)
    reader.feed(path.read_text(encoding="utf-8"))
    reader.close()
    page.text = "".join(reader.chunks)
    return page


def pages(out: Path) -> list[Page]:
    """report.html and every page of its folder."""
    return [read(path) for path in [out / webreport.INDEX, *sorted((out / webreport.FOLDER).glob("*.html"))]]


def unexpected_markup(out: Path) -> list[str]:
    """What in the report's pages the writer does not make: an element or attribute outside the allowlist, a script or
    style that is not the report's own, a page without the report's Content-Security-Policy, a link that is not a
    relative one to the report's files."""
    found = []
    for page in pages(out):
        where = page.path.name
        policies = [a.get("content") for tag, a in page.elements if tag == "meta" and a.get("http-equiv")]
        if policies != [webreport.CSP]:
            found.append(f"{where}: its Content-Security-Policy is {policies}, not the report's")
        for tag, attributes in page.elements:
            if tag not in TAGS:
                found.append(f"{where}: a <{tag}> element")
            found += [f"{where}: <{tag} {name}=...>" for name in attributes if name not in ATTRIBUTES]
            href = attributes.get("href")
            if href is not None and not HREF.match(href):
                found.append(f"{where}: a link to {href!r}")
        found += [f"{where}: a script that is not the report's" for s in page.scripts if s != webreport.SCRIPT]
        found += [f"{where}: a style that is not the report's" for s in page.styles if s != webreport.STYLE]
    return found


def broken_links(out: Path) -> list[str]:
    """Every link of a page that leads to no file, or to no element of the page it names."""
    read_pages = {page.path.resolve(): page for page in pages(out)}
    broken = []
    for page in read_pages.values():
        for href in page.links:
            target, fragment = urlsplit(href).path, urlsplit(href).fragment
            path = (page.path.parent / unquote(target)).resolve() if target else page.path.resolve()
            if not path.exists():
                broken.append(f"{page.path.name}: {href} (no such file)")
            elif fragment and path.suffix == ".html" and fragment not in read_pages.get(path, read(path)).ids:
                broken.append(f"{page.path.name}: {href} (no such anchor)")
    return broken


def page_text(path: Path) -> str:
    """A page's text as a reader sees it (markup left out, character references read, a line per block)."""
    return read(path).text
