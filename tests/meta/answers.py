"""The oracles' answers computed once per process: for the runs that grade the same examples again and again.

The catalogue (tests/meta/mutation.py) and the nonsense (tests/meta/test_nonsense.py) run a problem's tests once
per mistake, in one process, under one seed: every run draws the same examples, and every run but the first asks
tests/oracles.py the same questions (FlopCounterMode on the same transformers, torch's AdamW on the same
trajectories), which took most of their CPU. `keep_oracle_answers()` makes each oracle answer a question once.

It changes nothing a test can see. A question is the call's arguments, when they are plain data (numbers,
strings, dtypes, and tuples, lists, dicts and dataclasses of them: a spec, a config); a call with any other
argument (a tensor, a model, a function) runs as before, and so does an oracle that modified its arguments (never
kept). An answer is the value returned (a copy each time: a test may modify it), and what the call did to the
global random generators (torch's and Python's): an oracle that left them as they were never drew from them, and
its answer stands whatever their state; one that moved them answers for the state they were in as it began, and
puts back the state it left them in; one that moved them to the same state with the same answer from two
states reseeds them itself, and its answer stands for any (putting back that same state).
"""

import copy
import dataclasses
import enum
import functools
import hashlib
import inspect
import pickle
import random

import torch

PLAIN = (type(None), bool, int, str, bytes, torch.dtype, torch.device)


def question(value):
    """A hashable key of plain data (floats by their repr: -0.0 and nan are questions of their own), or None
    where `value` holds anything else."""
    if isinstance(value, PLAIN) or isinstance(value, enum.Enum):
        return (type(value).__name__, value)
    if isinstance(value, float):
        return ("float", repr(value))
    if isinstance(value, (tuple, list)):
        parts = [question(v) for v in value]
        return None if None in parts else (type(value).__name__, tuple(parts))
    if isinstance(value, dict):
        parts = [(question(k), question(v)) for k, v in value.items()]
        return None if any(None in part for part in parts) else ("dict", tuple(parts))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = question([getattr(value, f.name) for f in dataclasses.fields(value)])
        return None if fields is None else (type(value).__qualname__, fields)
    return None


def _generators() -> tuple:
    """The global random generators' state: Python's, torch's."""
    return random.getstate(), torch.get_rng_state()


def _digest(state: tuple) -> bytes:
    return hashlib.sha256(pickle.dumps((state[0], state[1].numpy().tobytes()))).digest()


def _restore(state: tuple) -> None:
    random.setstate(state[0])
    torch.set_rng_state(state[1])


@dataclasses.dataclass
class _Answers:
    """What an oracle answered one question: `free` (it never moved the generators), `reseeded` (the same state
    and value from two states), else per state it began in (`by_state`: digest -> value, the state it left)."""

    free: tuple | None = None  # (value,)
    reseeded: tuple | None = None  # (value, state after)
    by_state: dict = dataclasses.field(default_factory=dict)  # digest of the state before -> (value, state after)


def kept(oracle):
    """`oracle`, answering each question once (the module docstring)."""
    answers: dict = {}

    @functools.wraps(oracle)
    def answer(*args, **kwargs):
        asked = question((args, kwargs))
        if asked is None:
            return oracle(*args, **kwargs)
        known = answers.setdefault(asked, _Answers())
        if known.free is not None:
            return copy.deepcopy(known.free[0])
        before = _generators()
        begun = _digest(before)
        found = known.reseeded or known.by_state.get(begun)
        if found is not None:
            _restore(found[1])
            return copy.deepcopy(found[0])
        value = oracle(*args, **kwargs)
        after = _generators()
        if question((args, kwargs)) != asked:  # it modified its arguments: never kept
            return value
        try:
            kept_value = copy.deepcopy(value)
        except RuntimeError:  # a tensor of an autograd graph: not copied, not kept
            return value
        left = _digest(after)
        if left == begun:
            known.free = (kept_value,)
        elif any(left == _digest(state) and _same(kept_value, other) for other, state in known.by_state.values()):
            known.reseeded = (kept_value, after)
        else:
            known.by_state[begun] = (kept_value, after)
        return value

    answer.kept_answers = answers
    return answer


def _same(a, b) -> bool:
    try:
        return pickle.dumps(a) == pickle.dumps(b)
    except (pickle.PicklingError, TypeError, AttributeError):
        return False


def keep_oracle_answers() -> dict:
    """Every function of tests/oracles.py answers each question once in this process, from now on (idempotent);
    the functions as they were, by name (`forget_oracle_answers` puts them back)."""
    from tests import oracles

    before = {}
    for name, function in list(vars(oracles).items()):
        if inspect.isfunction(function) and function.__module__ == oracles.__name__ and not name.startswith("_") \
                and not hasattr(function, "kept_answers"):
            before[name] = function
            setattr(oracles, name, kept(function))
    return before


def forget_oracle_answers(before: dict) -> None:
    """The oracles as they were before `keep_oracle_answers` returned `before`, their kept answers dropped."""
    from tests import oracles

    for name, function in before.items():
        setattr(oracles, name, function)
