"""A pytest plugin for the lookup-table attack's meta-test: records every call the tests make into one
problem module of the package under test, in-process, as {function: {repr((args, kwargs)): result}}.

    pytest --impl reference -p tests.meta.recorder --record-calls=calls.json --record-module=flops
"""

import json
import types

import pytest

from grader.harness import local

_calls: dict[str, dict[str, object]] = {}


def pytest_addoption(parser):
    parser.addoption("--record-calls", default=None)
    parser.addoption("--record-module", default=None)


def _recording(module: types.ModuleType) -> types.ModuleType:
    copy = types.ModuleType(module.__name__, module.__doc__)
    copy.__dict__.update(module.__dict__)
    for name, value in vars(module).items():
        if callable(value) and not isinstance(value, type) and not name.startswith("_"):
            def wrapper(*args, _name=name, _fn=value, **kwargs):
                result = _fn(*args, **kwargs)
                if isinstance(result, (int, float)) and not isinstance(result, bool):
                    _calls.setdefault(_name, {})[repr((args, kwargs))] = result
                return result
            setattr(copy, name, wrapper)
    return copy


def pytest_configure(config):
    target = config.getoption("--record-module")
    if not target:
        return
    load = local.LocalPackage._load

    def _load(self, module):
        real = load(self, module)
        return _recording(real) if module == target else real

    local.LocalPackage._load = _load


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    if config.getoption("--record-calls"):
        with open(config.getoption("--record-calls"), "w") as file:
            json.dump(_calls, file)
