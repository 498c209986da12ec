"""Assertions that say what was called, what was expected (and from which source), what came back, and
what is usually wrong."""

import math


class Shown(str):
    """An argument shown as written in a call's text, not quoted: a placeholder such as <3 layers> or x."""

    def __repr__(self) -> str:
        return str(self)


def call_text(name: str, *args, **kwargs) -> str:
    """How a call reads: its arguments' reprs (a `Shown` one as written)."""
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
    return f"{name}({', '.join(parts)})"


def _article(name: str) -> str:
    return "an" if name[:1].lower() in "aeio" else "a"


def _fail(what: str, expected, got, source: str, hint: str | None) -> None:
    lines = [f"{what} is wrong", f"  expected: {expected!r}   ({source})", f"  got:      {got!r}"]
    if hint:
        lines.append(f"  hint: {hint}")
    raise AssertionError("\n".join(lines))


def _type_name(value) -> str:
    return f"{type(value).__module__}.{type(value).__qualname__}".removeprefix("builtins.")


def expect_int(got, expected: int, *, what: str, source: str, hint: str | None = None) -> None:
    """Exact integer equality; the answer must be an `int` (not a float, bool or tensor)."""
    if type(got) is not int:
        _fail(what, expected, got, source, f"return a Python int, not {_type_name(got)}")
    if got != expected:
        _fail(what, expected, got, source, hint)


def expect_close(got, expected: float, *, rel: float, what: str, source: str, hint: str | None = None) -> None:
    """`got` is a real number within a relative tolerance `rel` of `expected`."""
    if type(got) not in (int, float):
        _fail(what, expected, got, source, f"return a Python float, not {_type_name(got)}")
    if not math.isclose(got, expected, rel_tol=rel, abs_tol=0.0):
        _fail(what, expected, got, source, hint)


def expect_equal(got, expected, *, what: str, source: str, hint: str | None = None) -> None:
    """Plain equality, exact types included (for dicts and other structured answers)."""
    if type(got) is not type(expected):
        name = _type_name(expected)
        _fail(what, expected, got, source, f"return {_article(name)} {name}, not {_type_name(got)}")
    if got != expected:
        _fail(what, expected, got, source, hint)
