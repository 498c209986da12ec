"""Every graded test fails against the untouched stubs: a test that passes on them asserts nothing."""

import pytest

from tests.meta.suite import problems_with_tests, run_suite

# These run whole suites in subprocesses: far past the per-test default of 120 s on a loaded machine.
pytestmark = [pytest.mark.meta, pytest.mark.timeout(1800)]


def test_every_graded_test_fails_on_the_stubs(tmp_path):
    records = run_suite(tmp_path, "--impl", "assignment")
    graded = [r for r in records if r["problem"] and not r["gpu"]]
    assert {r["problem"] for r in graded} == set(problems_with_tests()), "some problems ran no graded test"
    not_failing = [f"{r['nodeid']}: {r['outcome']}" for r in graded if r["outcome"] != "failed"]
    assert not not_failing, "graded tests that do not fail on the stubs:\n" + "\n".join(not_failing)
    errors = [r["nodeid"] for r in records if r["outcome"] == "error"]
    assert not errors, f"collection errors: {errors}"
