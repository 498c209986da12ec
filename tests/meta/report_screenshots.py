"""Screenshots of the class report's web pages for docs/tas.md, one per view, taken by the browser of their test.

    python -m tests.meta.report_screenshots               # docs/img/report-*.png
    python -m tests.meta.report_screenshots --out DIR     # elsewhere

Grades tests/meta/webclass.py's class with `batch` (a minute or two of a core), opens its report in the headless
Chromium of tests/meta/browser.py (installed with apt-get where it is missing and this is root), and keeps each view
as a PNG of at most 64 colours (a few tens of kB each). Course staff run it by hand when the pages change; no test
rewrites the committed images.
"""

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from tests.meta import browser, webclass
from tests.meta.suite import ROOT

WIDTH, HEIGHT = 1200, 900
COLOURS = 64


def views(out: Path) -> list[tuple[str, str, str]]:
    """(image name, page, what to scroll to or do first) for each view of the report of the graded class `out`."""
    from grader import webreport

    folder = out / webreport.FOLDER
    behaviour = next(p.name for p in sorted(folder.glob("behaviour-*.html"), key=lambda p: int(p.stem.split("-")[1])))
    mistakes = next(p.name for p in sorted(folder.glob("mistakes-*.html"))
                    if "<title>flops.matmul_flops</title>" in p.read_text(encoding="utf-8"))
    pair = next(p.name for p in sorted(folder.glob("pair-*.html")) if "copied-the-markup" in
                p.read_text(encoding="utf-8"))
    copy = next(p.name for p in sorted(folder.glob("copy-dave-*.html")))
    return [("report-index", webreport.INDEX, ""), ("report-behaviours", webreport.INDEX, "behaviours"),
            ("report-copies", webreport.INDEX, "copies"), ("report-behaviour", f"report/{behaviour}", ""),
            ("report-mistakes", f"report/{mistakes}", ""), ("report-pair", f"report/{pair}", "regions"),
            ("report-copy", f"report/{copy}", "regions"),
            ("report-submission", f"report/s-{webreport.slug(webclass.HOSTILE)}.html", "")]


# Scroll the page to an element; for "regions", each listing to its first matched region, and the page to the figures
SCROLL = """
var where = arguments[0];
if (where === "regions") {
  document.querySelectorAll(".listing").forEach(function (listing) {
    var first = listing.querySelector(".start");
    if (first) { listing.scrollTop = first.offsetTop - listing.offsetTop - 60; }
  });
  document.querySelector(".figures").scrollIntoView();
} else if (where) {
  document.getElementById(where).scrollIntoView();
}
"""


def shoot(out: Path, images: Path) -> list[Path]:
    from PIL import Image

    images.mkdir(parents=True, exist_ok=True)
    written = []
    with browser.chromium(WIDTH, HEIGHT) as driver:
        for name, page, where in views(out):
            driver.get((out / page).resolve().as_uri())
            driver.execute_script(SCROLL, where)
            errors = browser.console_errors(driver)
            if errors:
                raise SystemExit(f"{page}: the browser logged errors: {errors}")
            path = images / f"{name}.png"
            driver.save_screenshot(str(path))
            Image.open(path).convert("RGB").quantize(COLOURS).save(path, optimize=True)
            written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img", help="where the PNGs go (docs/img)")
    parser.add_argument("--keep", type=Path, help="grade the class into this folder and keep it (default: a "
                                                  "temporary folder, removed)")
    args = parser.parse_args(argv)
    why = browser.unavailable(install=True)
    if why:
        print(f"report_screenshots: no browser: {why}", file=sys.stderr)
        return 2
    tmp = args.keep or Path(tempfile.mkdtemp(prefix="ra-screenshots-"))
    try:
        out = webclass.graded(tmp, "127.0.0.1:9")  # a port no browser asks: the planted requests go nowhere
        for path in shoot(out, args.out):
            print(f"{path} ({path.stat().st_size // 1024} kB)")
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
