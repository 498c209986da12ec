"""From mutation data to grading budgets: for each generated test, the latest example at which it caught a
mistake, and the budget that keeps every such catch (twice that example, at least MINIMUM, at most FLOOR); a
generated test that caught nothing in the data (the --costs report lists every generated test) runs MINIMUM.

    python -m tests.meta.mutation --every-test --profile calibrate --grading-seed 1 --json catalogue.json
    python -m tests.meta.mutation --every-test --profile calibrate --grading-seed 1 --automatic --json auto.json
    python -m tests.meta.calibrate catalogue.json auto.json [--costs report.jsonl]

`--every-test` records, for each mistake, every test that failed and the example at which it first failed
(the `calibrate` profile is `grade` without shrinking). A budget of twice a test's latest catch keeps every
recorded catch of every test, not only one catch per mistake: a mistake caught by two tests today is caught
by both. `--costs` (a `--report` of the suite run under the grade profile) adds what each budget saves, in
seconds. The budgets go into grader/grading_budget.py by hand, with their reasons; tests/meta/test_mistakes.py
then checks the catalogue under a seed they were not calibrated on.
"""

import argparse
import json
import re
from collections import defaultdict

from grader import grading_budget

MARGIN = 2  # a budget is twice the latest catch: another seed's inputs reach the same case later


def function_of(test: str) -> str:
    """"test_x[param]" -> "test_x": a budget is per test function, shared by its parametrized items."""
    return re.sub(r"\[.*\]$", "", test)


def today(test: str, ran: dict[str, int] | None = None) -> int:
    """The test's examples under the grade profile today: its budget, or FLOOR; or, for a test with settings of
    its own and no budget, what a run of it counted."""
    if test in grading_budget.BUDGET:
        return grading_budget.BUDGET[test][0]
    if ran and ran.get(test, 0) > 2 * grading_budget.FLOOR:
        return ran[test]
    return grading_budget.FLOOR


def latest_catches(results: list[dict]) -> dict[str, tuple[int, str]]:
    """Per test function: the latest example at which it first failed on a caught mistake, and that mistake."""
    latest: dict[str, tuple[int, str]] = {}
    for result in results:
        for test, example in (result.get("failed") or {}).items():
            name = function_of(test)
            if example and example > latest.get(name, (0, ""))[0]:
                latest[name] = (example, f"{result['problem']}:{result['id']}")
    return latest


def propose(latest: dict[str, tuple[int, str]], ran: dict[str, int] | None = None) -> dict[str, int]:
    """A budget for each test that caught something: twice its latest catch, at least MINIMUM, at most FLOOR.
    A test with a budget over FLOOR keeps it (a rare case, found on other seeds, or settings of its own)."""
    budgets = {}
    for test, (example, _) in latest.items():
        before = today(test, ran)
        fitted = min(grading_budget.FLOOR, max(MARGIN * example, grading_budget.MINIMUM))
        budgets[test] = before if before > grading_budget.FLOOR else fitted
    return budgets


def caught_nothing(latest: dict[str, tuple[int, str]], ran: dict[str, int]) -> list[str]:
    """The generated tests of the --costs report that caught no mistake nor mutant of the data, whose budget
    is not over FLOOR (settings of their own keep theirs)."""
    return sorted(test for test in ran if test not in latest and today(test, ran) <= grading_budget.FLOOR)


def lost(results: list[dict], budgets: dict[str, int], ran: dict[str, int] | None = None) -> list[str]:
    """The mistakes caught today that no test would catch within `budgets` (where a test absent from `budgets`
    keeps today's), as recorded: the examples before a budget are the same whatever the budget."""
    missed = []
    for result in results:
        failed = result.get("failed") or {}
        if failed and not any(example <= budgets.get(function_of(test), today(function_of(test), ran))
                              for test, example in failed.items()):
            missed.append(f"{result['problem']}:{result['id']}")
    return missed


def read_costs(report: str) -> tuple[dict[str, float], dict[str, int]]:
    """From a --report of the suite under the grade profile: per test function, the seconds one example of
    all its items takes, and the examples one item ran."""
    seconds, examples, items, ran = defaultdict(float), defaultdict(int), defaultdict(int), {}
    with open(report, encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            if record.get("examples"):
                name = function_of(record["nodeid"].split("::")[-1])
                seconds[name] += record["duration"]
                examples[name] += record["examples"]
                items[name] += 1
                ran[name] = max(ran.get(name, 0), record["examples"])
    return {name: seconds[name] / examples[name] * items[name] for name in seconds}, ran


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", nargs="+", help="tests.meta.mutation --every-test --json files")
    parser.add_argument("--costs", help="a --report of the suite under the grade profile: seconds per example")
    parser.add_argument("--python", action="store_true",
                        help="print the budgets as grader/grading_budget.py's BUDGET entries instead of a table")
    options = parser.parse_args(argv)
    results = [r for path in options.data for r in json.loads(open(path, encoding="utf-8").read())]
    costs, ran = read_costs(options.costs) if options.costs else ({}, {})
    latest = latest_catches(results)
    budgets = propose(latest, ran)
    idle = caught_nothing(latest, ran)
    if options.python:
        reasons = {test: f"{latest[test][1]} caught at example {latest[test][0]}" for test in latest}
        reasons |= {test: "caught nothing in the data" for test in idle}
        budgets |= {test: grading_budget.MINIMUM for test in idle}
        for test in sorted(reasons):
            if budgets[test] != grading_budget.FLOOR:
                print(f'    "{test}": ({budgets[test]}, "{reasons[test]}"),')
        return 0
    saved_total = 0.0
    print(f"{'test':<62} {'today':>5} {'latest':>6} {'budget':>6} {'saved':>6}  latest catch")
    for test in sorted(latest, key=lambda t: -costs.get(t, 0) * (today(t, ran) - budgets[t])):
        example, mistake = latest[test]
        saved = costs.get(test, 0.0) * (today(test, ran) - budgets[test])
        saved_total += saved
        print(f"{test[:62]:<62} {today(test, ran):>5} {example:>6} {budgets[test]:>6} {saved:>5.2f}s  {mistake}")
    caught = sum(bool(r.get("failed")) for r in results)
    missed = lost(results, budgets, ran)
    print(f"{len(results)} mistakes, {caught} caught; lost under the proposed budgets: {missed or 'none'}")
    if costs:
        saved_total += sum(costs.get(test, 0.0) * (today(test, ran) - grading_budget.MINIMUM) for test in idle)
        print(f"saved per grading, as measured: {saved_total:.1f} s; generated tests that caught nothing (MINIMUM "
              f"proposed): {', '.join(idle) or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
