"""Issue 9.1, the grader's inputs cannot be known in advance: a course secret and the submission seed every
generated test (grader/seed.py), so the same submission repeats its grade and a table of the public inputs
is worth nothing.

The attack: record every call the flops tests make under the public `grade` profile (about 1,700), and submit
a flops.py that answers from that table. In local mode (the public inputs) it passes generated tests without
counting a FLOP; under a secret it passes none of them.
"""

import importlib.util
import json
import subprocess
import sys

import hypothesis
import pytest
from hypothesis import strategies as st

from grader.seed import grading_seed
from tests import test_flops
from tests.meta.suite import ROOT, grader_env, profile_env

pytestmark = [pytest.mark.meta, pytest.mark.timeout(1800)]


def grade(submission, out, *extra: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(submission), "--out", str(out), "--problem",
                           "flops", *extra], cwd=ROOT, env=grader_env(), capture_output=True, timeout=900)
    assert out.exists(), done.stderr.decode()[-3000:]
    return json.loads(out.read_text())


def passed(results: dict) -> set[str]:
    """The pytest items that passed (each Gradescope test is a behaviour; its items are in its extra_data)."""
    return {name for t in results["tests"] for name, status in t["extra_data"]["tests"].items() if status == "passed"}


def is_generated(test_name: str) -> bool:
    """A hypothesis test (its inputs are generated), by the name of its function."""
    return getattr(getattr(test_flops, test_name.split("[")[0], None), "is_hypothesis_test", False)


def lookup_table_submission(folder, calls: dict) -> None:
    lines = [(ROOT / "assignment" / "flops.py").read_text(), "import json as _json",
             f"_TABLE = _json.loads({json.dumps(calls)!r})"]
    for name in calls:
        lines.append(f"def {name}(*args, **kwargs):\n    return _TABLE[{name!r}].get(repr((args, kwargs)), 0)")
    folder.mkdir()
    (folder / "flops.py").write_text("\n\n".join(lines) + "\n")


def test_a_table_of_the_public_inputs_passes_no_generated_test_under_the_secret(tmp_path):
    calls = tmp_path / "calls.json"
    subprocess.run([sys.executable, "-m", "pytest", "tests/test_flops.py", "-q", "--impl", "reference",
                    "-p", "tests.meta.recorder", f"--record-calls={calls}", "--record-module=flops"],
                   cwd=ROOT, env=profile_env("grade", grader_env()), capture_output=True, timeout=900)
    lookup_table_submission(tmp_path / "table", json.loads(calls.read_text()))
    public = passed(grade(tmp_path / "table", tmp_path / "local.json", "--local"))
    secret = passed(grade(tmp_path / "table", tmp_path / "secret.json"))
    assert len({t for t in public if is_generated(t)}) >= 5, f"the table passes generated tests locally: {public}"
    assert not {t for t in secret if is_generated(t)}, f"under the secret the table passed {secret}"


def test_the_seed_follows_the_secret_and_the_content():
    modules = {"flops": b"def f(): ...", "memory": b""}
    seed = grading_seed(b"a" * 32, modules)
    assert seed == grading_seed(b"a" * 32, dict(modules)), "the same submission, the same seed"
    assert seed != grading_seed(b"b" * 32, modules), "another secret, another seed"
    assert seed != grading_seed(b"a" * 32, {**modules, "flops": b"def f(): return 1"}), "other code, another seed"
    # comments, blank lines, spacing and continuations change nothing the code does: resubmitting a module
    # respaced or commented until a draw misses a slip gets the same inputs every time
    respaced = b"# the same code\n\ndef f( ) : \\\n    ...  # a comment\n"
    assert seed == grading_seed(b"a" * 32, {**modules, "flops": respaced}), "layout alone changed the seed"
    assert seed != grading_seed(b"a" * 32, {"flops": b"def f(): ...m", "memory": b""}), "file boundaries count"


def test_the_inputs_do_not_depend_on_what_the_process_imported(tmp_path, monkeypatch):
    # hypothesis draws, now and then, constants from the source of the local modules loaded so far: the test
    # order, the isolated mode and the code under test itself changed the inputs until the plugin pinned that
    # pool (grader/seed.py pin_hypothesis_constants)
    def drawn() -> list:
        seen = []

        @hypothesis.seed(20261205)
        @hypothesis.settings(max_examples=400, database=None, derandomize=False, deadline=None)
        @hypothesis.given(st.integers(), st.floats(allow_nan=False), st.text(max_size=4))
        def record(i, f, t):
            seen.append((i, f, t))

        record()
        return seen

    before = drawn()
    source = tmp_path / "ra_local_constants.py"
    source.write_text(f"NUMBERS = {[7_000_003 + 11 * k for k in range(300)]}\n"
                      f"RATIOS = {[k + 0.123456789 for k in range(300)]}\nWORDS = {[f'w{k:03}' for k in range(300)]}\n")
    spec = importlib.util.spec_from_file_location("ra_local_constants", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setitem(sys.modules, "ra_local_constants", module)
    assert drawn() == before, "a module imported in between changed the inputs"


def test_grading_without_a_secret_says_how_to_get_one(tmp_path):
    env = {k: v for k, v in grader_env().items() if not k.startswith("RA_GRADING")}
    done = subprocess.run([sys.executable, "-m", "grader", "grade", str(ROOT / "assignment"), "--out",
                           str(tmp_path / "r.json"), "--problem", "flops"], cwd=ROOT, env=env, capture_output=True,
                          timeout=300)
    assert done.returncode == 2
    assert "RA_GRADING_SECRET" in done.stderr.decode() and "--local" in done.stderr.decode()
    assert not (tmp_path / "r.json").exists()
