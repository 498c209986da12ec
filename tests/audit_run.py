"""The run-time half of the oracle audits: the code under test answers the same with the oracle made unusable.

An audit fails only for what it audits: reaching the oracle. Whether the answer is right is the other tests'
business, so an audit compares the code under test with itself (the oracle usable, then unusable), never
with the oracle's answer, and names the call that differed or raised.
"""

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
