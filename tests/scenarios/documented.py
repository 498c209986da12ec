"""The scenario behind each problem's `test_documented_errors_are_raised` (the table is tests/documented.py).

A documented error's call may need arguments that are not data (a model, a loss function, a callable to
time): the table names them as placeholders, `{"$object": name}`, and the scenario builds them here, next
to the code under test.
"""

import torch
import torch.nn.functional as F
from torch import nn


def _three_layers():
    torch.manual_seed(0)
    return nn.Sequential(*[nn.Linear(3, 3, dtype=torch.float64) for _ in range(3)])


def _linear():
    torch.manual_seed(0)
    return nn.Linear(3, 1, dtype=torch.float64)


OBJECTS = {
    "three layers": _three_layers,  # an nn.Sequential of 3 Linear(3, 3), float64
    "linear": _linear,  # nn.Linear(3, 1), float64
    "mse_loss": lambda: F.mse_loss,
    "two parameters": lambda: [nn.Parameter(torch.zeros(2)), nn.Parameter(torch.ones(3))],
    "no-op": lambda: (lambda: None),  # a callable to time, or a sync
}


def _build(value):
    if type(value) is dict and set(value) == {"$object"}:
        return OBJECTS[value["$object"]]()
    if type(value) is list:
        return [_build(v) for v in value]
    return value


def raised(pkg, module: str, function: str, args: list, kwargs: dict) -> list[str] | None:
    """Scenario: `pkg.<module>.<function>(*args, **kwargs)` (placeholders built); the names of the classes of
    the exception it raises (its type's MRO, the type first), or None if it returns."""
    fn = getattr(getattr(pkg, module), function)
    try:
        fn(*_build(list(args)), **{k: _build(v) for k, v in kwargs.items()})
    except NotImplementedError:  # an untouched stub: a failure, not an answer
        raise
    except Exception as exc:  # noqa: BLE001 - the type is the answer
        return [cls.__name__ for cls in type(exc).__mro__]
    return None
