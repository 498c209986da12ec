"""Every analysis the grader makes of a submission's source, in a box (grader/harness/box.py: its own CPU seconds,
memory and output, a seccomp filter, the grading's deadline): a submission written to defeat an analysis (a
decompression bomb, nesting past the parser's depth, a module of pathological size or tokens) loses that analysis,
never its results.

One box per grading, started before its tests, with two answers:

1. `start`   what the tests need to start: the modules left as the stub (grader/sources.py `not_started`), those
             that do not compile (`compile_errors`), and what of each the grading seed reads (grader/seed.py
             `behaviour`). The grader waits for it (it takes a fraction of a second);
2. `copies`  the copy check's evidence (grader/copycheck.py: copies of an oracle or of the reference, and data
             carried in) and the similarity digest (grader/similarity.py), computed while the tests run and read
             when they end, by the grading's deadline.

`Analysis` is the grader's side; `prepare` and `answers` run in the box. Where the box is cut off (`Cut`), the
grading goes on without what it would have answered: no module taken as the stub, every module compiled by the
tests themselves, the seed read from the modules' bytes, no evidence and no digest; the grading is flagged for a
person (`CUT`), and nothing else changes.
"""

import base64
import time

from grader import copycheck
from grader.harness.box import Box, Cut

CPU_SECONDS = 30.0  # one grading's analyses (the reference's eleven modules: about a second)
MEMORY_MB = 768
CUT = "[analysis] the submission's source could not be analysed ({why}): the copy check and the similarity digest " \
      "are missing, for a person to look at"


class Analysis:
    """A grading's analyses in their box: `start(deadline)` for the first answer, `copies(deadline)` for the second,
    then `close()`. `cut` holds why the box was cut off, where it was."""

    def __init__(self, modules: dict[str, bytes], *, digest: bool = True):
        copycheck.keep(modules)  # what the box compares with, kept where it may not write
        request = {"modules": {name: base64.b64encode(source).decode() for name, source in modules.items()},
                   "digest": digest}
        self.box = Box("grader.analysis", request, cpu_seconds=CPU_SECONDS, memory_mb=MEMORY_MB)
        self.cut: str | None = None
        self._start: dict | None = None

    def _next(self, deadline: float) -> dict | None:
        if self.cut is not None:
            return None
        try:
            return self.box.next(deadline)
        except Cut as why:
            self.cut = str(why)
            return None

    def start(self, deadline: float) -> dict:
        """{"untouched": [module], "broken": {module: line}, "behaviour": {module: bytes}}; empty where cut off."""
        answer = self._next(deadline) or {}
        self._start = {"untouched": answer.get("untouched", []), "broken": answer.get("broken", {}),
                       "behaviour": {m: base64.b64decode(b) for m, b in answer.get("behaviour", {}).items()}}
        return self._start

    def copies(self, deadline: float) -> dict:
        """{"evidence": [line], "digest": {module: digest} or None}; the evidence says so where cut off."""
        if self._start is None:
            self.start(deadline)
        answer = self._next(deadline)
        self.close()
        if answer is None:
            return {"evidence": [CUT.format(why=self.cut)], "digest": None}
        return {"evidence": answer.get("evidence", []), "digest": answer.get("digest")}

    def close(self) -> None:
        self.box.close()


def digests(modules: dict[str, bytes], seconds: float = CPU_SECONDS) -> dict | None:
    """The similarity digest of `modules` (a base's submission: grader/similarity.py `base_digests`), in a box; None
    where it was cut off."""
    analysis = Analysis(modules)
    try:
        return analysis.copies(time.monotonic() + seconds)["digest"]
    finally:
        analysis.close()


# -- in the box ---------------------------------------------------------------------------------------------------

def prepare(request: dict) -> None:
    """Before the filter: what the analyses compare with, read from the grader's own files (the oracles' sources,
    the reference's and the stubs' modules, kept on disk by the grader's process: `Analysis`), and every module they
    import later."""
    import base64  # noqa: F401, F811 - the analyses' own imports, done while files may still be opened
    import binascii  # noqa: F401
    import bz2  # noqa: F401
    import codecs
    import io
    import lzma  # noqa: F401
    import tokenize
    import unicodedata  # noqa: F401 - what the parser imports for \N{...} escapes and non-ASCII names
    import zipfile  # noqa: F401

    from grader import reach, registry, seed, similarity, sources  # noqa: F401

    for codec in ("utf-8", "utf-8-sig", "latin-1", "ascii", "unicode_escape", "raw_unicode_escape"):
        codecs.lookup(codec)
    for text in request["modules"].values():  # the codec each module declares, which decoding it imports
        try:
            codecs.lookup(tokenize.detect_encoding(io.BytesIO(base64.b64decode(text)).readline)[0])
        except (SyntaxError, LookupError, ValueError):
            pass  # read as UTF-8 (grader/normalised.py read_source)
    for module in request["modules"]:
        if module not in registry.BY_MODULE:
            continue
        copycheck.oracle_sources(registry.BY_MODULE[module].id), copycheck.reference_source(module)
        copycheck.stub_source(module), copycheck.stub_kgrams(module), copycheck.stub_statements(module)


def answers(request: dict):
    """The two answers (see the module's docstring), in turn."""
    from grader import copycheck, seed, similarity, sources

    modules = {name: base64.b64decode(text) for name, text in request["modules"].items()}
    yield {"untouched": sorted(name for name, source in modules.items() if sources.not_started(source)),
           "broken": sources.compile_errors(modules),
           "behaviour": {name: base64.b64encode(seed.behaviour(source)).decode() for name, source in modules.items()}}
    yield {"evidence": copycheck.evidence(modules),
           "digest": similarity.digest(modules) if request.get("digest") else None}
