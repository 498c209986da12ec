"""The oracle left among the scenarios (issue 41): the worker imports every module of tests/scenarios before the
code under test, and a module already in `sys.modules` is handed out without asking any finder. A function there
that only the test process called used to be an answer for free (`param_count`, "the oracle for
transformer_param_count", 0.5 point): looked for in every scenario module, by name. tests/oracles.py holds them
now, outside the worker's tree (tests/meta/test_worker_world.py keeps it so).
"""
import sys as _sys


def _from_the_scenarios(*names):
    for module_name, module in list(_sys.modules.items()):
        if module_name.startswith("tests.scenarios"):
            for name in names:
                if callable(getattr(module, name, None)):
                    return getattr(module, name)
    raise NotImplementedError


def transformer_param_count(config):  # noqa: F811 - the attack replaces the stub
    return _from_the_scenarios("param_count", "oracle_parameters")(config)
