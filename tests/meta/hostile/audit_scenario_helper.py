"""The oracle audits (issue 22): a helper of tests/scenarios that runs the oracle, called from the code under
test (its innermost caller is scenario code). No scenario the worker imports runs an oracle: the oracle runs
are in tests/oracles.py, which is not in the worker's tree, and the oracle itself is absent.
"""
import importlib.util as _util
import sys as _sys
from pathlib import Path as _Path


def _oracle_count():
    scenarios = _sys.modules.get("tests.scenarios." + "flops")
    found = getattr(scenarios, "oracle_" + "count", None)
    if found is None and scenarios is not None:  # the test process's module, loaded from its file
        path = _Path(scenarios.__file__).parents[1] / ("ora" + "cles.py")
        spec = _util.spec_from_file_location("ra_hostile_oracles", path)
        module = _util.module_from_spec(spec)
        spec.loader.exec_module(module)
        found = module.oracle_count
    return found


try:
    _count = _oracle_count()
except Exception:
    _count = None


class FlopCounter:  # noqa: F811 - the attack replaces the stub
    def __init__(self):
        self.total, self.by_op = 0, {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def matmul_flops(b, d, k):  # noqa: F811 - the attack replaces the stub
    return _count({"kind": "program", "ops": [("mm", b, d, k)]})["total"]
