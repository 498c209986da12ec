"""What a grading keeps on disk for the next one (grader/kept.py): only what the grader computes from its own files
and the installed packages, in a folder of the grader's user alone."""

import os
import subprocess
import sys

import pytest
from hypothesis import settings

from grader import profiles, runner

pytestmark = pytest.mark.meta

DRAW_TEXT = """
from hypothesis import find, settings, strategies as st
print(repr(find(st.text(min_size=3), lambda s: True, settings=settings(database=None, max_examples=5))))
"""


def test_a_gradings_test_process_keeps_hypothesis_tables_in_the_graders_folder_and_nothing_of_the_grading(
        tmp_path, monkeypatch):
    """hypothesis computes its tables of Unicode (1.5 s of CPU) where it may keep them: in a grading's fresh
    workspace, at every grading; in the grader's own folder, once. Nothing of a grading goes there: no grading
    profile has an example database."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    env = runner.hypothesis_storage()
    folder = tmp_path / "cache" / "resource-accounting" / "hypothesis"
    assert env == {"HYPOTHESIS_STORAGE_DIRECTORY": str(folder)} and folder.stat().st_mode & 0o777 == 0o700
    for _ in range(2):
        drawn = subprocess.run([sys.executable, "-c", DRAW_TEXT], cwd=tmp_path, env={**os.environ, **env},
                               capture_output=True, text=True, timeout=120)
        assert drawn.returncode == 0, drawn.stderr
    assert sorted(p.name for p in (folder / "unicode_data").glob("*/*")) == ["charmap.json.gz",
                                                                             "codec-v2-utf-8.json.gz"]
    assert not (folder / "examples").exists() and not (tmp_path / ".hypothesis").exists()
    assert all(settings.get_profile(p).database is None for p in profiles.GRADING_PROFILES)
    folder.chmod(0o777)  # a folder others may write in: not used
    assert runner.hypothesis_storage() == {}
