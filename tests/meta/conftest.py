"""The meta-tests in parallel (`make meta` runs them on pytest-xdist's workers, `--dist loadgroup`).

- Each test file is one group, run by one worker in order: its module fixtures (a grading, a built image) are
  made once. The hostile corpus is a group per mode, so that its two gradings of the corpus run side by side.
- Each xdist worker's gradings take their sandbox uids from a range of their own: a test that checks what its
  gradings' uids left behind (processes, files, IPC objects) sees only its own gradings'.
"""

import os

import pytest

from grader.harness import sandbox

_WORKER = os.environ.get("PYTEST_XDIST_WORKER")  # "gw0", "gw1", ...: set in each xdist worker
if _WORKER:
    sandbox.UID_BASE += 10_000 * (1 + int(_WORKER.removeprefix("gw")))
    os.environ["RA_SANDBOX_UID_BASE"] = str(sandbox.UID_BASE)  # the gradings this worker starts


def group_of(item) -> str:
    params = getattr(getattr(item, "callspec", None), "params", {})
    if "corpus" in params:
        return f"{item.path.stem}[{params['corpus']}]"
    return item.path.stem


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.xdist_group(group_of(item)))
