"""Scenario for the einops audits: which einops functions run while the code under test runs.

A profiler hook (sys.setprofile, after the one already set, if any) records every Python function entered in
the einops package, however the code under test reached it (`import einops`, `from einops import rearrange`,
an alias, a helper).
"""

import importlib.util
import os
import sys
from pathlib import Path

_SPEC = importlib.util.find_spec("einops")  # a stub without a location in mini_einops's worker (its oracle)
EINOPS_DIR = str(Path(_SPEC.origin).parent) + os.sep if _SPEC is not None and _SPEC.has_location else None
PUBLIC = ("einsum", "rearrange", "reduce", "repeat")


def einops_calls(pkg, module: str, name: str, args: list, kwargs: dict) -> dict:
    """Scenario: `pkg.<module>.<name>(*args, **kwargs)` under a profiler. Returns {"einops": sorted names of
    einops' public functions that ran, "result": what the call returned (None if it raised), "error": the
    exception's text or None}."""
    entered: set[str] = set()

    def hook(frame, event, arg):
        if previous is not None:  # a grading worker's own profile function (grader/harness/guard.py) stays on
            previous(frame, event, arg)
        code = frame.f_code
        if event == "call" and EINOPS_DIR and code.co_filename.startswith(EINOPS_DIR) and code.co_name in PUBLIC:
            entered.add(code.co_name)

    function = getattr(getattr(pkg, module), name)
    result, error = None, None
    previous = sys.getprofile()
    sys.setprofile(hook)
    try:
        result = function(*args, **kwargs)
    except NotImplementedError:  # an untouched stub: a failure, not an answer
        raise
    except Exception as exc:  # the test reports it; the audit is about what ran
        error = f"{type(exc).__name__}: {exc}"
    finally:
        sys.setprofile(previous)
    return {"einops": sorted(entered), "result": result, "error": error}
