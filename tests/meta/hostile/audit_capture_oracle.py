"""The oracle audits: FlopCounterMode reached with its name split (the static audit sees nothing) and captured
at import time (before the audit scenario disables it), then the audit scenario replaced by the plain one.
The worker's guard fails every call that runs the oracle, and reports the replaced scenario.
# expect: review
"""
import importlib as _importlib
import sys as _sys

_Oracle = getattr(_importlib.import_module("torch.utils." + "flop_" + "counter"), "FlopCounter" + "Mode")
_scenarios = _sys.modules.get("tests.scenarios." + "flops")
if _scenarios is not None:
    _scenarios.count_without_oracle = _scenarios.count


class FlopCounter(_Oracle):  # noqa: F811 - the attack replaces the stub
    def __init__(self):
        super().__init__(display=False)

    @property
    def total(self):
        return self.get_total_flops()

    @property
    def by_op(self):
        return {str(op): n for op, n in self.get_flop_counts().get("Global", {}).items()}
