"""The examples drawn once per process: a pytest plugin for the runs that test the same examples again and again.

The catalogue (tests/meta/mutation.py) and the nonsense (tests/meta/test_nonsense.py) run a problem's tests once
per mistake, in one process, under one seed. Until a test fails, hypothesis draws the same examples in the same
order whatever the code under test does, and drawing them (the strategies' work: op chains, layouts, lists of
floats) took about half of those runs. So the first run of each generated test that passes records what
hypothesis handed its body, example by example, and every later run of that test hands its body the same again,
without hypothesis:

- the body's arguments (a copy each time: a test may modify them), and the values its interactive draws
  (`st.data()`) returned, each with the strategy it was drawn from (or that the draw ended the example: its data
  ran out, or the strategy gave up on it: `reject()`, `assume()` or a filter within it);
- the global random generators (Python's, torch's, numpy's) as hypothesis left them when the body began;
- how each example ended: passed, or not valid (a failed `assume`, data that ran out).

A replayed test fails with the first example that fails, as hypothesis stops there (it then shrinks the example,
which changes what a failure says, not that it failed); the examples counted and the first that failed (the
report's, grader/harness/report.py) are the same. Where an example ends otherwise than recorded, short of
failing (not valid where it passed, or the other way round), or draws from another strategy or another number
of times, hypothesis would draw the following examples otherwise: the test runs again with hypothesis, from its
first example, as it would have. A test whose arguments cannot be copied is never replayed. A test that checks
something after all its examples (an audit's evidence: tests/audit_run.py `evidenced`) has its examples replayed
inside its `around_examples`, as hypothesis runs them inside it.
"""

import contextlib
import copy
import dataclasses
import random
import sys
import warnings

import pytest
import torch
from hypothesis.errors import HypothesisDeprecationWarning, StopTest, UnsatisfiedAssumption
from hypothesis.strategies._internal.core import DataObject

PASSED, INVALID = "passed", "not valid"
NOT_REPLAYED = None  # a test whose examples cannot be recorded


class Diverged(BaseException):
    """A replayed example ended otherwise than recorded: hypothesis would draw the next ones otherwise. Not an
    Exception, so that no test's `except Exception` takes it for the code under test's."""


@dataclasses.dataclass
class Example:
    args: tuple
    kwargs: dict  # the drawn arguments (not the fixtures'), a DataObject one recorded as DRAWN
    generators: tuple  # the global random generators' state as the body began
    draws: list = dataclasses.field(default_factory=list)  # (repr of the strategy, the value drawn)
    outcome: str = ""


DRAWN = "<the interactive draws of this example>"


def _generators() -> tuple:
    numpy = sys.modules.get("numpy")
    return (random.getstate(), torch.get_rng_state(), numpy.random.get_state() if numpy else None)


def _restore(state: tuple) -> None:
    random.setstate(state[0])
    torch.set_rng_state(state[1])
    if state[2] is not None:
        sys.modules["numpy"].random.set_state(state[2])


STOPPED = "<hypothesis' data ran out here>"
REJECTED = "<the strategy gave up on this example here>"  # reject(), assume() or a filter within it: not valid


class _Recording:
    """An interactive draw's stand-in while an example is recorded: each value drawn is kept (a copy)."""

    def __init__(self, data: DataObject, example: Example, unreplayable):
        self._data, self._example, self._unreplayable = data, example, unreplayable

    def draw(self, strategy, label=None):
        try:
            value = self._data.draw(strategy, label=label)
        except StopTest:
            self._example.draws.append((repr(strategy), STOPPED))
            raise
        except UnsatisfiedAssumption:
            self._example.draws.append((repr(strategy), REJECTED))
            raise
        try:
            self._example.draws.append((repr(strategy), copy.deepcopy(value)))
        except Exception:  # noqa: BLE001 - not copyable: the test is run by hypothesis each time
            self._unreplayable()
        return value

    def __getattr__(self, name):
        return getattr(self._data, name)


class _Replaying:
    """An interactive draw's stand-in while an example is replayed: the values recorded, in their order."""

    def __init__(self, example: Example):
        self._draws, self.used = example.draws, 0

    def draw(self, strategy, label=None):
        if self.used == len(self._draws) or self._draws[self.used][0] != repr(strategy):
            raise Diverged("another draw than recorded")
        self.used += 1
        value = self._draws[self.used - 1][1]
        if isinstance(value, str) and value == STOPPED:
            raise StopTest(0)
        if isinstance(value, str) and value == REJECTED:
            raise UnsatisfiedAssumption()
        return copy.deepcopy(value)


class ReplayExamples:
    """The pytest plugin (one per process: it keeps its recordings from one pytest.main to the next)."""

    def __init__(self):
        self.recorded: dict[str, list[Example] | None] = {}  # nodeid -> the examples of a run that passed

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        handle = getattr(pyfuncitem.obj, "hypothesis", None)
        nodeid = pyfuncitem.nodeid
        if handle is None or (nodeid in self.recorded and self.recorded[nodeid] is NOT_REPLAYED):
            return None  # pytest's own call
        fixtures = {arg: pyfuncitem.funcargs[arg] for arg in pyfuncitem._fixtureinfo.argnames}
        if self.recorded.get(nodeid):
            around = getattr(pyfuncitem.obj, "around_examples", None)  # a check after them all (an audit's evidence)
            try:
                with around(fixtures) if around else contextlib.nullcontext():
                    self._replay(handle, self.recorded[nodeid], fixtures)
                return True
            except Diverged:
                _forget_counts(pyfuncitem)
        examples: list[Example] = []
        replayable = [True]

        def unreplayable():
            replayable[0] = False

        inner = handle.inner_test
        handle.inner_test = self._recorder(inner, examples, set(fixtures), unreplayable)
        try:
            pyfuncitem.obj(**fixtures)
        finally:
            handle.inner_test = inner
        self.recorded[nodeid] = examples if replayable[0] else NOT_REPLAYED  # it passed: its whole run
        return True

    @staticmethod
    def _recorder(inner, examples: list[Example], fixtures: set[str], unreplayable):
        """`inner` (the test's body, as hypothesis calls it), recording each example into `examples`: its
        arguments but the `fixtures`' (the run's own: a replay passes its own run's)."""

        def recorded(*args, **kwargs):
            state = _generators()
            drawn = {k: DRAWN if isinstance(v, DataObject) else v for k, v in kwargs.items() if k not in fixtures}
            try:
                kept = copy.deepcopy((args, drawn))
            except Exception:  # noqa: BLE001 - not copyable: the test is run by hypothesis each time
                unreplayable()
                return inner(*args, **kwargs)
            example = Example(*kept, state)
            examples.append(example)
            kwargs = {k: _Recording(v, example, unreplayable) if isinstance(v, DataObject) else v
                      for k, v in kwargs.items()}
            try:
                result = inner(*args, **kwargs)
            except (UnsatisfiedAssumption, StopTest):
                example.outcome = INVALID
                raise
            example.outcome = PASSED  # a failing example ends the run, and a run that fails is not kept
            return result

        return recorded

    def _replay(self, handle, examples: list[Example], fixtures: dict) -> None:
        outer = _generators()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", HypothesisDeprecationWarning)  # `assume` outside hypothesis
                for example in examples:
                    self._replay_one(handle, example, fixtures)
        finally:
            _restore(outer)

    @staticmethod
    def _replay_one(handle, example: Example, fixtures: dict) -> None:
        args, kwargs = copy.deepcopy((example.args, example.kwargs))
        draws = _Replaying(example)
        kwargs = {**{k: draws if isinstance(v, str) and v == DRAWN else v for k, v in kwargs.items()}, **fixtures}
        _restore(example.generators)
        try:
            handle.inner_test(*args, **kwargs)
            outcome = PASSED
        except (UnsatisfiedAssumption, StopTest):
            outcome = INVALID
        # any other exception is the test's failure, at the same example as hypothesis finds it: it propagates
        if outcome != example.outcome or draws.used != len(example.draws):
            raise Diverged(f"an example ended {outcome} where it was recorded {example.outcome}")


def _forget_counts(item) -> None:
    """What a diverged replay counted of the item's examples (grader/harness/report.py): hypothesis counts again."""
    recorder = item.config.pluginmanager.get_plugin("ra-report")
    if recorder is not None:
        recorder.examples.pop(item.nodeid, None)
