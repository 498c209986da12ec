"""HTML built with escaping by construction, for the class report's web pages (grader/webreport.py).

A page is made of `Html` values alone. `html(template, **values)` fills a template written in the code with values
escaped as text (`<`, `>`, `&`, both quotes), unless a value is `Html` already: markup enters a page only as a
template of the code or as `Html` made by these functions, never as a string that came from a submission. `text`
also makes invisible and ambiguous characters visible (control characters, the bidirectional overrides of "Trojan
source", surrogates that cannot be written), as their escapes: a TA reads what the file holds.

    >>> html('<a href="{href}">{name}</a>', href="s/x.html", name="<script>")
    '<a href="s/x.html">&lt;script&gt;</a>'
"""

import html as _html
import string
import unicodedata

# The characters that change how the text around them reads without showing themselves: the bidirectional
# embeddings, overrides and isolates, and the marks that steer them
BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


class Html(str):
    """A string that is HTML already: it is put into a page as it is. Concatenating it with a plain string gives a
    plain string (escaped again where it is used): only `html`, `join` and `text` make one."""

    __slots__ = ()

    def __html__(self) -> "Html":  # the convention markupsafe and Jinja read
        return self


def _visible(c: str) -> str:
    if c in "\n\t":
        return c
    category = unicodedata.category(c)
    if category in ("Cc", "Cs") or c in BIDI or category in ("Zl", "Zp"):
        return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"
    return c


def text(value: object) -> Html:
    """`value` as text in a page (or in a quoted attribute): escaped, and its invisible characters made visible."""
    if isinstance(value, Html):
        return value
    raw = str(value)
    if not raw.isprintable():  # the common case, ASCII and letters, costs one scan
        raw = "".join(map(_visible, raw))
    return Html(_html.escape(raw, quote=True))


class _Formatter(string.Formatter):
    def format_field(self, value: object, format_spec: str) -> Html:
        if isinstance(value, Html):
            if format_spec:
                raise ValueError("a format spec applies to a value, not to markup")
            return value
        return text(format(value, format_spec))

    def convert_field(self, value: object, conversion: str | None) -> object:
        if conversion is not None and isinstance(value, Html):
            raise ValueError("a conversion of markup would not be markup")
        return super().convert_field(value, conversion)


_FORMATTER = _Formatter()


def html(template: str, /, *args: object, **values: object) -> Html:
    """`template` (str.format's syntax, written in the code) with every value escaped as `text`, `Html` values
    as they are."""
    return Html(_FORMATTER.vformat(template, args, values))


def join(parts, separator: str = "") -> Html:
    """The `parts` one after the other, each escaped unless `Html` (the `separator` is markup of the code)."""
    return Html(separator.join(text(part) for part in parts))
