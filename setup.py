"""The build step pyproject.toml cannot state: a wheel (`pip install .`, not editable) carries a copy of the
official tree inside the grader package (grader/official/), since the grader grades with the assignment's
own tests, conftest.py and pytest settings, which are not packages. grader.OFFICIAL_ROOT finds it there.
An editable install (`pip install -e .`, `make venv`) uses the repository itself and copies nothing."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

TREE = ("assignment", "reference", "tests", "conftest.py", "pyproject.toml")  # grader/harness/boundary.py WORKSPACE
LEFT_OUT = shutil.ignore_patterns("__pycache__", "*.pyc", "meta")  # meta: tests/meta, the repository's own checks


class BuildWithTree(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib, "grader", "official")
        shutil.rmtree(target, ignore_errors=True)  # an in-tree build/ kept from an earlier build
        target.mkdir(parents=True)
        for entry in TREE:
            source = Path(entry)
            if source.is_dir():
                shutil.copytree(source, target / entry, ignore=LEFT_OUT)
            elif source.is_file():  # the student release has no reference/
                shutil.copy2(source, target / entry)


setup(cmdclass={"build_py": BuildWithTree})
