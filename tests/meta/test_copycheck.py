"""The copy check (grader/copycheck.py) on the calibration cases, fast and without grading anything.

Honest code must not match: the untouched stubs, the reference against the oracles (written independently of them),
the sample submission, and each catalogued mistake written into the stub as a student would write it (against the
reference and the oracles). Copies must: the reference and every oracle file of a problem that has one renamed,
reformatted, stripped of comments and docstrings, reordered (functions, and independent assignments), re-emitted
token by token, or padded with a dead statement after every statement; a part of an oracle pasted below the stub, or
below the reference's own module (for the oracle: the reference is code of its own), and padded. Not caught, and so
not in the table: 60 lines of an oracle, padded, below the reference's module (10 and 12 statements in order, for
flops and activation_checkpointing, against the sample's 10 of the reference). `python -m tests.meta.test_copycheck`
prints the figures the thresholds were chosen on (the comment beside them in grader/copycheck.py).
"""

import ast
import base64
import inspect
import io
import textwrap
import time
from pathlib import Path

import pytest

from grader import copycheck
from grader.registry import PROBLEMS
from grader.sources import not_started
from tests.meta.rewrites import REWRITES, installed, padded, pasted_part
from tests.meta.suite import ROOT, SAMPLE
from tests.mistakes import catalog, planted_source

pytestmark = pytest.mark.meta

MODULES = [p.module for p in PROBLEMS]
WITH_ORACLE = [p for p in PROBLEMS if copycheck.oracle_sources(p.id)]


def stub(module: str) -> str:
    return (ROOT / "assignment" / f"{module}.py").read_text()


def reference(module: str) -> str:
    return (ROOT / "reference" / f"{module}.py").read_text()


# -- honest code ---------------------------------------------------------------------------------------------


def mistakes(problem_id: str) -> list[tuple[str, str]]:
    """(mistake id, the stub with the mistake's functions written below it) for each catalogued mistake."""
    module = next(p.module for p in PROBLEMS if p.id == problem_id)
    found = []
    for mistake in catalog(problem_id):
        sources = []
        for wrong in dict.fromkeys(mistake.replaces.values()):
            try:
                sources.append(inspect.getsource(wrong))
            except (OSError, TypeError):  # a lambda's line, or a built-in
                continue
        found.append((mistake.id, stub(module) + "\n\n" + "\n\n".join(sources)))
    return found


def calibration() -> list[tuple[str, str, str, copycheck.Match]]:
    """(case, module, kind: honest or copy, match) for every calibration case and comparison."""
    rows = []

    def add(case, module, kind, text, only=None):
        for match in copycheck.check(module, text):
            if only in (None, match.against):
                rows.append((case, module, kind, match))

    for p in PROBLEMS:
        add("stub", p.module, "honest", stub(p.module))
        add("reference", p.module, "honest", reference(p.module), only="oracle")
        for name, rewrite in REWRITES.items():
            add(f"reference {name}", p.module, "copy", rewrite(reference(p.module)), only="reference")
        for mistake_id, text in mistakes(p.id):
            add(f"mistake {mistake_id}", p.module, "honest", text)
    for p in WITH_ORACLE:
        for source in copycheck.oracle_sources(p.id):
            if len(source.tokens.text) < 400:  # an __init__ that imports its names: nothing to copy
                continue
            text = Path(installed(source.name)).read_text()
            for name, rewrite in REWRITES.items():
                add(f"{source.name} {name}", p.module, "copy", stub(p.module) + "\n" + rewrite(text), only="oracle")
        add("oracle pasted in part", p.module, "copy", stub(p.module) + "\n" + pasted_part(p.id), only="oracle")
        add("oracle pasted in part, padded", p.module, "copy", stub(p.module) + "\n" + padded(pasted_part(p.id)),
            only="oracle")
        add("reference, oracle pasted in part below", p.module, "copy", reference(p.module) + "\n"
            + pasted_part(p.id, lines=60), only="oracle")
    add("sample (partial)", "flops", "honest", (SAMPLE / "flops.py").read_text())
    return rows


@pytest.fixture(scope="module")
def rows():
    return calibration()


def test_honest_code_is_not_a_copy(rows):
    flagged = [(case, module, m.evidence()) for case, module, kind, m in rows if kind == "honest" and m.copied]
    assert not flagged, flagged


def test_every_rewritten_copy_is_caught(rows):
    missed = [(case, module, m.against, f"{m.matched}/{m.own}") for case, module, kind, m in rows
              if kind == "copy" and not m.copied]
    assert not missed, missed
    assert sum(kind == "copy" for _, _, kind, _ in rows) >= 3 * len(PROBLEMS) + len(WITH_ORACLE)


def test_the_thresholds_have_room_on_both_sides(rows):
    # each threshold sits between honest code and the copies, with room on both sides
    honest = [m for _, _, kind, m in rows if kind == "honest"]
    fingerprinted = [(case, m) for case, _, kind, m in rows if kind == "copy" and "padded" not in case]
    whole = [m for case, m in fingerprinted if "below" not in case]
    parts = [m for case, m in fingerprinted if "below" in case]
    assert max(m.share for m in honest if m.matched >= copycheck.MIN_MATCHED) < copycheck.MIN_SHARE - 0.08
    assert min(m.share for m in whole) > copycheck.MIN_SHARE + 0.08
    assert max(m.longest for m in honest) <= copycheck.MIN_RUN / 2
    assert min(m.longest for m in parts) > copycheck.MIN_RUN
    # the statements in order, for padded copies: a whole module by its share, a part by its count
    padded = [(case, m) for case, _, kind, m in rows if kind == "copy" and case.endswith(" padded")]
    padded_whole = [m for case, m in padded if "part" not in case]
    padded_parts = [m for case, m in padded if "part" in case]
    assert max(m.in_order for m in honest) <= copycheck.MIN_IN_ORDER - 5
    assert max(m.in_order_share for m in honest) < copycheck.MIN_IN_ORDER_SHARE - 0.2
    assert min(m.in_order_share for m in padded_whole) > copycheck.MIN_IN_ORDER_SHARE + 0.2
    assert min(m.in_order for m in padded_whole) >= copycheck.MIN_IN_ORDER_WHOLE
    assert min(m.in_order for m in padded_parts) > copycheck.MIN_IN_ORDER


def test_the_stub_counts_for_nothing():
    for module in MODULES:
        for match in copycheck.check(module, stub(module)):
            assert match.own == 0 and match.matched == 0, (module, match)


def test_a_planted_mistake_is_a_copy_of_the_reference():
    # the reference with catalogued mistakes swapped in (tests/mistakes' planted_source: the reference's text,
    # the catalogue's functions below it) is a copy: a student who hands it in had the reference
    match = next(m for m in copycheck.check("flops", planted_source("flops", ["macs"])) if m.against == "reference")
    assert match.copied and match.longest >= copycheck.MIN_RUN, match


def test_the_evidence_names_the_spans_on_both_sides():
    text = stub("flops") + "\n" + pasted_part("flops")
    (line,) = copycheck.evidence({"flops": text.encode()})
    assert line.startswith("[copy] flops.py: ") and "torch/utils/flop_counter.py lines " in line, line
    first = int(line.split("flops.py lines ")[1].split("-")[0])
    assert first > stub("flops").count("\n"), "the span is in the pasted part, not in the stub"


def test_stubs_are_skipped_and_the_student_release_compares_the_oracles(monkeypatch):
    modules = {m: reference(m).encode() for m in MODULES}
    assert len(copycheck.evidence(modules)) == len(MODULES)  # each is the reference
    assert copycheck.evidence({m: stub(m).encode() for m in MODULES}) == []
    # the stub with its functions untouched and a copy at its top level (graded as not started): read all the same
    bodies = [f.body for f in ast.parse(pasted_part("flops")).body if isinstance(f, ast.FunctionDef) and not any(
        isinstance(n, ast.FunctionDef | ast.ClassDef | ast.Lambda) for n in ast.walk(ast.Module(f.body, [])))]
    copy = stub("flops") + "\n" + "\n".join(ast.unparse(ast.Module(body=b, type_ignores=[])) for b in bodies)
    assert not_started(copy) and copycheck.evidence({"flops": copy.encode()})
    # without the reference (the student release) the oracles are still compared, the reference silently not
    monkeypatch.setattr(copycheck, "has_reference", lambda: False)
    copycheck.reference_source.cache_clear()
    try:
        assert copycheck.evidence(modules) == []
        assert [m.against for m in copycheck.check("flops", reference("flops"))] == ["oracle"]
    finally:
        copycheck.reference_source.cache_clear()


def test_the_sources_kept_on_disk_are_those_read_anew(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    files = [(f"reference/{m}.py", ROOT / "reference" / f"{m}.py") for m in ("flops", "adamw")]

    def sources(files):
        return copycheck._kept(files, copycheck._read_sources)

    read = sources(files)
    (kept,) = (tmp_path / "resource-accounting" / "copycheck").glob("*.pickle")
    again = sources(files)
    assert again == read and again[0] is not read[0], "the second read is the kept one, equal to the first"
    assert sources(files[:1]) == read[:1] and len(list(kept.parent.glob("*.pickle"))) == 2
    kept.parent.chmod(0o777)  # a folder others may write in: what it holds is not read, but read anew
    monkeypatch.setattr(copycheck.Source, "read", classmethod(lambda cls, name, text: "read anew"))
    assert sources(files) == ("read anew", "read anew")


def _carried(encode: str, data: bytes) -> str:
    """`data` carried in a module as `encode` says, as the text of a literal."""
    import base64
    import binascii
    import lzma
    import zipfile
    import zlib

    if encode == "zip in small ints":
        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("counter.py", data)
        return repr(tuple(archive.getvalue()))
    return repr({"b85+zlib": lambda: base64.b85encode(zlib.compress(data)).decode(),
                 "b64+lzma": lambda: base64.b64encode(lzma.compress(data)).decode(),
                 "hex": lambda: binascii.hexlify(data).decode(), "plain": lambda: data.decode()}[encode]())


@pytest.mark.parametrize("encode", ["b85+zlib", "b64+lzma", "hex", "plain", "zip in small ints"])
def test_code_carried_as_data_is_evidence_and_the_copy_in_it_is_found(encode):
    # whatever decodes it (here a call the copy check has no name for): its size is evidence, and the copy in it found
    oracle = Path(installed("torch/utils/flop_counter.py")).read_bytes()
    text = stub("flops") + f"\n_CARRIED = {_carried(encode, oracle)}\n_ns = {{}}\n_run = getattr(__builtins__, " \
        "'ex' + 'ec')\n"
    lines = copycheck.evidence({"flops": text.encode()})
    assert any(line.startswith("[copy]") and "decoded from its literals" in line for line in lines), lines
    assert any(line.startswith("[data] flops.py: ") for line in lines), lines


def test_a_payload_split_over_many_short_literals_counts_whole():
    chunks = [repr(bytes(range(i, i + 40)).hex()) for i in range(0, 200, 2)]  # 100 literals of 80 characters
    text = stub("flops") + "\n_PARTS = [" + ", ".join(chunks) + "]\n"
    (line,) = copycheck.evidence({"flops": text.encode()})
    assert line.startswith("[data] flops.py: 8000 characters of literals"), line


def test_comments_and_docstrings_count_only_where_the_module_can_read_them():
    comments = "".join(f"# {i:04d} " + "x" * 60 + "\n" for i in range(100))  # 6,800 characters
    assert copycheck.evidence({"flops": (stub("flops") + comments).encode()}) == []
    reading = stub("flops") + comments + "_OWN = open(__file__).read()\n"
    (line,) = copycheck.evidence({"flops": reading.encode()})
    assert "its docstrings and comments: it can read its own source" in line, line
    documented = stub("flops") + '\ndef _helper():\n    """' + "y" * 6000 + '"""\n'
    assert copycheck.evidence({"flops": documented.encode()}) == []
    assert copycheck.evidence({"flops": (documented + "_DOC = _helper.__doc__\n").encode()})


def test_honest_habits_with_text_and_data_are_no_evidence():
    # issue 53: formulas kept as short strings and eval'd without builtins, a frozen copy of a dict of ints through
    # pickle, a ContextVar whose name holds an oracle's: none is evidence (they were flagged by the calls' names)
    habits = stub("flops") + textwrap.dedent("""
        import contextvars
        import pickle

        _FORMULAS = {"matmul": "2 * b * d * k", "linear": "2 * t * i * o + (t * o if bias else 0)"}
        _DEPTH = contextvars.ContextVar("flop_counter_depth", default=0)
        _SIZES = pickle.loads(pickle.dumps({"fp32": 4, "bf16": 2, "fp16": 2, "int8": 1}))


        def matmul_flops(b, d, k):
            return eval(_FORMULAS["matmul"], {"__builtins__": {}}, {"b": b, "d": d, "k": k})
    """)
    assert copycheck.evidence({"flops": habits.encode()}) == []


def test_a_decompression_bomb_is_read_to_a_bound():
    import bz2

    bomb = repr(base64.b64encode(bz2.compress(b"# a comment line that repeats\n" * 2_000_000)).decode())
    text = stub("flops") + "".join(f"\n_B{i} = {bomb}" for i in range(12)) + "\n"
    start = time.process_time()
    lines = copycheck.evidence({"flops": text.encode()})
    assert time.process_time() - start < 20, "each decoding stops at DECODED_BYTES"
    assert not any(line.startswith("[copy]") for line in lines), lines


def test_long_prose_and_honest_code_are_not_data():
    # the stubs' docstrings are up to 5,244 characters of prose; the honest corpus decodes nothing
    modules = {m: (stub(m) + "\nEXTRA = 1\n").encode() for m in MODULES}
    modules["adamw"] = (ROOT / "tests" / "meta" / "honest" / "adamw.py").read_bytes()
    assert copycheck.evidence(modules) == []
    payloads = [copycheck.payload(m, reference(m)).characters for m in MODULES]
    assert max(payloads) < copycheck.PAYLOAD_CHARACTERS / 2, payloads  # room for a student's own messages


def test_broken_or_empty_modules_are_read_without_error():
    for text in ("", "def f(:\n", "x = '''unterminated\n", "\x00\x01", "if x:\n  y\n z\n"):
        for match in copycheck.check("flops", text):
            assert not match.copied


def main() -> None:
    # CPU time of this process (process_time): what a grading spends on it, whatever else the machine runs
    for p in PROBLEMS:
        start = time.process_time()
        copycheck.oracle_sources(p.id), copycheck.reference_source(p.module), copycheck.stub_kgrams(p.module)
        read = time.process_time() - start
        text = reference(p.module)
        start = time.process_time()
        copycheck.check(p.module, text)
        print(f"{p.module:<26} sources read once: {1000 * read:5.0f} ms; a check of the reference's "
              f"{text.count(chr(10))} lines: {1000 * (time.process_time() - start):5.1f} ms CPU")
    rows = calibration()
    print(f"\n{'case':<52}{'module':<26}{'against':<11}{'matched':>9}{'share':>7}{'run':>5}{'order':>6}{'of src':>7}")
    for case, module, kind, m in sorted(rows, key=lambda r: (r[2], -r[3].share)):
        flag = "COPY" if m.copied else ""
        print(f"{kind[0]} {case[:50]:<50}{module:<26}{m.against:<11}{m.matched:>4}/{m.own:<4}{m.share:>7.0%}"
              f"{m.longest:>5}{m.in_order:>6}{m.in_order_share:>7.0%} {flag}")
    for kind in ("honest", "copy"):
        found = [m for _, _, k, m in rows if k == kind]
        shares, runs, orders = [m.share for m in found], [m.longest for m in found], [m.in_order for m in found]
        print(f"{kind}: {len(found)} comparisons, {sum(m.copied for m in found)} flagged as copies; share min "
              f"{min(shares):.0%} max {max(shares):.0%}; longest run min {min(runs)} max {max(runs)} fingerprints; "
              f"statements in order min {min(orders)} max {max(orders)}")


if __name__ == "__main__":
    main()
