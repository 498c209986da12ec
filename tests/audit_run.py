"""The run-time half of the oracle audits: the code under test answers the same with the oracle made unusable.

An audit fails only for what it audits: reaching the oracle. Whether the answer is right is the other tests'
business, so an audit compares the code under test with itself (the oracle usable, then unusable) and names the
call that differed or raised. It carries its own evidence (`evidenced`): it checks only the calls whose answer it
saw right (against the same independent answer as the function's own tests), and pays only where it saw enough
distinct right answers, so its points wait for no other test (grader/registry.py).
"""

import contextlib
import functools

SEAM_MODULE = "grader.harness"  # the worker's own failures (died, timed out): not an answer of the code under test


def own_run(call):
    """The code under test's own answer, the oracle usable: `call()`, or None where it raised an error of its own
    (a wrong answer: its own tests' business, which the audit does not judge; an audit's points wait for them,
    grader/registry.py). The stub's NotImplementedError and the worker's own failures are raised."""
    try:
        return call()
    except Exception as error:
        if type(error).__module__.startswith(SEAM_MODULE) or isinstance(error, NotImplementedError):
            raise
        return None


def run_without(impl, scenario, *args, what: str, oracle: str, hint: str):
    """`impl.run(scenario, *args)` (a scenario that makes `oracle` unusable around its run); raised as an
    AssertionError naming `what` where the code under test raised."""
    try:
        return impl.run(scenario, *args)
    except Exception as error:
        if type(error).__module__.startswith(SEAM_MODULE) or isinstance(error, NotImplementedError):
            raise
        first = str(error).splitlines()[0] if str(error) else ""
        raise AssertionError(f"{what} with {oracle} made unusable raised\n  {type(error).__name__}: {first}\n"
                             f"  hint: {hint}") from None


# -- evidence: the audit pays only where it saw right answers computed -------------------------------------------

NEEDED = 3  # distinct right answers: a constant gives one, nonsense right on one trivial input (a 0-d shape) one


class Evidence:
    """The distinct right answers an audit saw (each compared with an independent answer, then checked without
    the oracle), for one pytest item: its examples add to it, and `evidenced` asks for enough of them."""

    def __init__(self):
        self.right: set = set()
        self.needed = NEEDED

    def saw_right(self, answer, kinds: int | None = None) -> None:
        """A right answer (hashable) seen computed without the oracle; `kinds`: how many answers there are at all
        (2 for a bool: both must be seen right)."""
        self.right.add(answer)
        if kinds is not None:
            self.needed = min(self.needed, kinds)


_seen: list[Evidence] = []


def evidence() -> Evidence:
    """The evidence of the audit that runs now (inside an `evidenced` test)."""
    return _seen[-1]


def evidenced(subject, without: str):
    """An audit (a generated test, decorated below this) that pays only beside evidence of work: after all its
    examples passed, it fails unless they saw `Evidence.needed` distinct right answers, so that a constant, a
    table of the public inputs' answers or nonsense right on a trivial input earns nothing, while a slip that
    makes some answers wrong costs the audit nothing (its examples skip the wrong ones). `subject(kwargs)`: the
    function audited, named in the message. The generated test is `given_test`, where the grading's seed and
    budget go (grader/profiles.py); `around_examples(kwargs)`, the context its examples run in, which whatever
    runs them otherwise enters too (tests/meta/replay.py)."""

    @contextlib.contextmanager
    def around_examples(kwargs: dict):
        _seen.append(Evidence())
        try:
            yield
            seen = _seen[-1]
        finally:
            _seen.pop()
        name = subject(kwargs)
        assert len(seen.right) >= seen.needed, (
            f"the audit saw {len(seen.right) or 'no'} distinct right answer{'s' * (len(seen.right) != 1)} "
            f"from {name} on its inputs (it needs {seen.needed}): it pays for right answers computed without "
            f"{without}, and {name}'s own tests show where its answers are wrong")

    def decorate(given_test):
        @functools.wraps(given_test)
        def test(*args, **kwargs):
            with around_examples(kwargs):
                given_test(*args, **kwargs)

        test.given_test = given_test
        test.around_examples = around_examples
        return test

    return decorate
