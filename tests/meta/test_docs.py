"""The documentation: the README is the front page, and every page of docs/ (a page per reader) is reached from it;
no relative link in any Markdown file of the project points at nothing."""

import re
from pathlib import Path

import pytest

from tests.meta.suite import ROOT

pytestmark = pytest.mark.meta

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FRONT_PAGE_LINES = 150


def markdown_files() -> list[Path]:
    skipped = {".venv", ".git", "build", "dist", "node_modules"}
    return sorted(p for p in ROOT.rglob("*.md") if not skipped & set(p.relative_to(ROOT).parts))


def test_no_relative_link_points_at_nothing():
    broken = []
    for page in markdown_files():
        for target in LINK.findall(page.read_text()):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue  # a web address, a mail address, or a place in the page itself
            if not (page.parent / target.split("#")[0]).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, broken


def test_the_readme_is_a_front_page_that_reaches_every_doc():
    readme = (ROOT / "README.md").read_text()
    linked = {(ROOT / target).resolve() for target in LINK.findall(readme) if not re.match(r"[a-z]+:", target)}
    pages = sorted((ROOT / "docs").glob("*.md"))
    assert pages and not [p.name for p in pages if p.resolve() not in linked]
    assert len(readme.splitlines()) <= FRONT_PAGE_LINES, "the README is the front page: the rest goes to docs/"
