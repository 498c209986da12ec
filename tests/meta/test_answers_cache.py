"""grader/fingerprints/cache.py: compare's inputs and answers, kept between runs, are read back as they were
computed, and never from a file that another user could have written or that another tree made."""

import os
import shutil
from pathlib import Path

import pytest

import grader
from grader.fingerprints import cache as answers_cache
from grader.fingerprints import comparer
from grader.fingerprints.comparer import Comparer

pytestmark = [pytest.mark.meta]

PROBLEM = "activation_checkpointing"  # the cheapest to compute


@pytest.fixture
def kept(tmp_path, monkeypatch):
    """A cache folder of this test's, holding PROBLEM's state; the state as computed."""
    monkeypatch.setenv(answers_cache.FOLDER_ENV, str(tmp_path / "cache"))
    return Comparer([PROBLEM])._state(PROBLEM)


def test_a_kept_problem_is_read_back_as_it_was_computed(kept, monkeypatch):
    assert answers_cache.path(PROBLEM).exists() and kept["inputs"] and kept["mistakes"]

    def drawn(*_):
        raise AssertionError("drew the inputs again instead of reading them back")

    monkeypatch.setattr(comparer, "draw_inputs", drawn)
    again = Comparer([PROBLEM])._state(PROBLEM)
    assert repr(again) == repr(kept)


def test_a_file_that_others_could_have_written_is_not_read(kept):
    file = answers_cache.path(PROBLEM)
    assert answers_cache.load(PROBLEM) is not None
    for where, mode in ((file, 0o622), (file.parent, 0o777)):
        before = where.stat().st_mode
        os.chmod(where, mode)
        assert answers_cache.load(PROBLEM) is None, f"read with {where} mode {oct(mode)}"
        os.chmod(where, before)
    if os.geteuid() == 0:
        os.chown(file, 12345, -1)
        assert answers_cache.load(PROBLEM) is None, "read a file of another user"


def test_a_change_to_the_tree_names_another_file(kept, tmp_path, monkeypatch):
    tree = tmp_path / "tree"
    for part in ("reference", "tests"):
        shutil.copytree(grader.OFFICIAL_ROOT / part, tree / part, ignore=shutil.ignore_patterns("meta", "__pycache__"))
    (tree / "assignment").mkdir()
    shutil.copy(grader.OFFICIAL_ROOT / "assignment" / "given.py", tree / "assignment")
    same = answers_cache.path(PROBLEM)
    monkeypatch.setattr(grader, "OFFICIAL_ROOT", tree)
    answers_cache.digest.cache_clear()
    try:
        assert answers_cache.path(PROBLEM) == same  # a copy of the same sources
        with open(tree / "reference" / f"{PROBLEM}.py", "a") as f:
            f.write("\n# a change\n")
        answers_cache.digest.cache_clear()
        assert answers_cache.path(PROBLEM) != same and answers_cache.load(PROBLEM) is None
    finally:
        answers_cache.digest.cache_clear()


def test_nothing_fails_where_nothing_can_be_kept(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(answers_cache.FOLDER_ENV, str(blocker / "cache"))  # a folder below a file: not creatable
    assert Comparer([PROBLEM]).inputs
    assert answers_cache.load(PROBLEM) is None


@pytest.fixture
def others_home(tmp_path, monkeypatch) -> Path:
    """$HOME set to a folder another user owns (sudo keeps the caller's), and no $XDG_CACHE_HOME."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to give the home to another user")
    others = tmp_path / "someone-elses-home"
    others.mkdir()
    os.chown(others, 12345, 12345)
    monkeypatch.setenv("HOME", str(others))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    return others


def test_each_user_keeps_their_own_even_with_another_users_home(others_home, tmp_path, monkeypatch):
    """$HOME that is another user's (sudo keeps it) is not where this user keeps answers: they would be read back as
    not private to this user, and computed again at every run."""
    from grader import kept

    assert not kept.folder("compare").is_relative_to(others_home)
    mine = tmp_path / "my-home"
    mine.mkdir()
    monkeypatch.setenv("HOME", str(mine))
    assert kept.folder("compare") == mine / ".cache" / "resource-accounting" / "compare"


def test_a_user_the_password_database_does_not_know_keeps_in_a_folder_named_by_their_uid(others_home, tmp_path,
                                                                                       monkeypatch):
    """A grader run as a uid with no entry in the password database, its $HOME another user's (a container run with
    `--user 2021100`): what it keeps goes to a folder of its own in the temporary one, never fails the grading."""
    import pwd
    import tempfile

    from grader import kept

    def unknown(uid):
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    monkeypatch.setattr(pwd, "getpwuid", unknown)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert kept.folder("compare") == tmp_path / f"resource-accounting-uid{os.geteuid()}" / "resource-accounting" / \
        "compare"
    kept.store(kept.folder("compare") / "kept.pickle", {"answers": 42})
    assert kept.load(kept.folder("compare") / "kept.pickle") == {"answers": 42}
