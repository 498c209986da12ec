"""Adding a problem, from code: every part a problem needs, each with the check that finds it missing.
docs/contributing.md's "Adding a problem" is rendered from STEPS, and tests/meta/test_consistency.py names what
each problem lacks.

    python -m grader.staff.checklist                   # docs/contributing.md's list, as Markdown
    python -m grader.staff.checklist --missing NAME    # what problem NAME lacks, step by step
    python -m grader.staff.checklist --write           # that list and handout.md's weight tables,
                                                       # rewritten from this table and grader/registry.py
"""

import argparse
import ast
import json
import re
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

from grader import OFFICIAL_ROOT as ROOT
from grader.registry import BEHAVIOURS, BY_ID, PROBLEMS, weight_table


@dataclass(frozen=True)
class Step:
    text: str  # the list's item (Markdown; `<problem>` stands for the problem's id)
    missing: Callable[[str], str | None]  # why the problem lacks it, or None


def _file(path: str) -> Callable[[str], str | None]:
    return lambda problem: None if (ROOT / path.format(problem)).is_file() else f"no {path.format(problem)}"


def _stub(problem: str) -> str | None:
    path = ROOT / "assignment" / f"{problem}.py"
    if not path.is_file():
        return f"no assignment/{problem}.py"
    names = {t.id for n in ast.parse(path.read_text()).body if isinstance(n, ast.Assign) for t in n.targets
             if isinstance(t, ast.Name)}
    return None if "__all__" in names else f"assignment/{problem}.py has no __all__"


def _tests(problem: str) -> str | None:
    path = ROOT / "tests" / f"test_{problem}.py"
    if not path.is_file():
        return f"no tests/test_{problem}.py"
    return None if f"pytest.mark.{problem}" in path.read_text() else f"tests/test_{problem}.py is not marked {problem}"


def _registry(problem: str) -> str | None:
    return None if problem in BY_ID and problem in BEHAVIOURS else f"grader/registry.py has no {problem!r}"


def _hundred(problem: str) -> str | None:
    total = sum(p.points for p in PROBLEMS)
    return None if total == 100 else f"the problems' points add up to {total:g}, not 100"


def _mistakes(problem: str) -> str | None:
    from tests.mistakes import catalog

    if not (ROOT / "tests" / "mistakes" / f"{problem}.py").is_file():
        return f"no tests/mistakes/{problem}.py"
    found = len(catalog(problem))
    return None if found >= MISTAKES else f"tests/mistakes/{problem}.py has {found} mistakes, fewer than {MISTAKES}"


def _handout(problem: str) -> str | None:
    if f"## Problem ({problem}):" not in (ROOT / "handout.md").read_text():
        return f"no section '## Problem ({problem}): ...' in handout.md"
    if problem in BY_ID and handout_weight_tables().get(problem) != weight_table(BY_ID[problem]):
        return f"handout.md's weight table for {problem} is not the registry's (`{WRITE}`)"
    return None


def _compare_inputs(problem: str) -> str | None:
    from grader.fingerprints import inputs

    known = problem in inputs.BUILDERS or problem in inputs.NOT_COMPARABLE
    return None if known else f"grader/fingerprints/inputs.py has neither BUILDERS[{problem!r}] nor NOT_COMPARABLE"


def _budget(problem: str) -> str | None:
    from grader.grading_budget import BUDGET

    tests = {t for b in BEHAVIOURS.get(problem, ()) for t in b.tests}
    return None if tests & BUDGET.keys() else f"no test of {problem} in grader/grading_budget.py BUDGET"


def _figures(problem: str) -> str | None:
    figures = json.loads((ROOT / "grader" / "staff" / "figures.json").read_text())
    measured = figures["gradings"][0]["seconds_per_problem"]
    return None if problem in measured else (
        f"grader/staff/figures.json has no figures for {problem}: run `{RECORD}` on a quiet machine (it grades four "
        "submissions on one core) to rewrite it and docs/graders.md's table")


MISTAKES = 6
WRITE = "python -m grader.staff.checklist --write"
RECORD = "python -m grader.staff.bench --grade-only --record"
MUTATION = "python -m tests.meta.mutation --problem <problem> --every-test"
STEPS = [
    Step("The stub `assignment/<problem>.py`: public names in `__all__`, every function raising "
         "`NotImplementedError`, docstrings that are the spec (the errors they promise go in `tests/documented.py`).",
         _stub),
    Step("The reference `reference/<problem>.py`, the same API.", _file("reference/{}.py")),
    Step("The tests `tests/test_<problem>.py`, marked `pytestmark = pytest.mark.<problem>`, their oracles named in "
         "the module docstring with the tolerances and why. A test calls `impl.<module>.<function>(...)` with plain "
         "data, and a scenario (`impl.run(scenarios.f, ...)`, in `tests/scenarios/<problem>.py`) only for objects "
         "built beside the code under test (a model, an optimizer); it checks answers with `tests/checks.py` "
         "(`expect_int`, `expect_close`, `expect_equal`), whose `hint=` is what the student reads; a test that takes "
         "`ref` is a differential one. Its strategies in `tests/strategies/<problem>.py`; what the staff tools share "
         "with the tests, if anything, in `tests/common/<problem>.py`.", _tests),
    Step("The problem and its weights in `grader/registry.py` (`PROBLEMS`, `BEHAVIOURS`; in `ORACLES` the modules "
         "whose answers the code under test could take instead of computing its own, which are made absent from "
         "its worker: a problem with oracles gets a worker of its own).", _registry),
    Step("The 100 points rebalanced: the problems' points in `grader/registry.py` add up to 100 (`--write`, step "
         "7, rewrites every heading's points and the number of problems in handout.md; the prose is yours).",
         _hundred),
    Step(f"At least {MISTAKES} catalogued mistakes in `tests/mistakes/<problem>.py`, each with what it costs "
         f"(`COSTS`: `{MUTATION} --profile grade --grading-seed 11 --costs` prints what each one fails).",
         _mistakes),
    Step(f"A handout section `## Problem (<problem>): ...`; then `{WRITE}` writes its heading's points and its "
         "`### Points` (the weight table) from the registry.", _handout),
    Step("compare's inputs in `grader/fingerprints/inputs.py` (`BUILDERS`), or why a function is not comparable "
         "(`NOT_COMPARABLE`): inputs that reach each documented error too (compare tells errors apart by class); a "
         "mistake no answer shows goes into `tests/meta/test_compare.py` `UNFINGERPRINTABLE`, with why.",
         _compare_inputs),
    Step("Its generated tests' grading budgets in `grader/grading_budget.py` (`BUDGET`, by test function) from the "
         f"mutation data: `{MUTATION} --profile calibrate --grading-seed N --json cat-N.json` for N = 1, 2, 3, the "
         "same with `--differential` once, then `python -m tests.meta.calibrate cat-*.json --python`.", _budget),
    Step(f"The grader's figures measured again with it (`{RECORD}`, on a quiet machine: `grader/staff/figures.json` "
         "and the table in docs/graders.md); until then this step's check fails.", _figures),
]


def missing(problem: str) -> list[str]:
    """What `problem` lacks: "N. why", one per step it fails."""
    return [f"{i}. {why}" for i, step in enumerate(STEPS, 1) if (why := step.missing(problem))]


def readme_section() -> str:
    """docs/contributing.md's "Adding a problem" list."""
    return "\n".join(textwrap.fill(f"{i}. {step.text}", width=115, subsequent_indent="   ", break_on_hyphens=False)
                     for i, step in enumerate(STEPS, 1))


# -- the handout's weight tables -------------------------------------------------------------------------------

def handout_weight_tables(text: str | None = None) -> dict[str, str]:
    """problem id -> the table under its section's `### Points` heading in handout.md."""
    text = (ROOT / "handout.md").read_text() if text is None else text
    sections = re.split(r"^## Problem \((\w+)\): .*$", text, flags=re.M)
    tables = {}
    for problem, body in zip(sections[1::2], sections[2::2], strict=True):
        points = body.split("\n### Points\n", 1)
        lines = points[1].splitlines() if len(points) == 2 else []
        start = next((i for i, line in enumerate(lines) if line.startswith("|")), len(lines))
        end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
        tables[problem] = "\n".join(lines[start:end])
    return tables


COUNTS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
          "thirteen", "fourteen", "fifteen", "sixteen")
PROBLEM_COUNT = re.compile(r"^There are (\w+) problems, 100 points\.", re.M)


def points_block(problem) -> str:
    """What follows a problem's `### Points` heading: its points, by behaviour, in the registry's table."""
    return (f"The {problem.points} points of this problem, by behaviour (`grader/registry.py`; how they are shared "
            "out:\n[How points are computed](#how-points-are-computed)):\n\n" + weight_table(problem))


def with_weight_tables(text: str) -> str:
    """handout.md's text with what the registry decides rewritten from it: the number of problems, each problem's
    heading (its title and points) and its `### Points` block (put at the end of its section where it has none).
    A problem without a section is refused, with the step that adds it."""
    text = PROBLEM_COUNT.sub(f"There are {COUNTS[len(PROBLEMS)]} problems, 100 points.", text, count=1)
    for problem in PROBLEMS:
        heading = re.search(rf"^## Problem \({problem.id}\): .*$", text, re.M)
        if heading is None:
            raise SystemExit(f"handout.md has no section '## Problem ({problem.id}): ...' (docs/contributing.md, "
                             f"step 7): write it, then run `{WRITE}` again, which writes its ### Points")
        text = text[:heading.start()] + f"## Problem ({problem.id}): {problem.title} ({problem.points} points)" \
            + text[heading.end():]
        start = heading.start()
        after = re.search(r"^## ", text[start + 1:], re.M)
        end = start + 1 + after.start() if after else len(text)
        section = text[start:end].rstrip("\n") + "\n"
        head, found, body = section.partition("\n### Points\n")
        lines = body.split("\n") if found else []
        table = next((i for i, line in enumerate(lines) if line.startswith("|")), None)
        stop = table if table is None else next(
            (i for i in range(table, len(lines)) if not lines[i].startswith("|")), len(lines))
        rest = "\n".join(lines[stop:] if table is not None else lines).strip("\n")  # what follows the table
        section = f"{head}\n### Points\n\n{points_block(problem)}\n" + (f"\n{rest}\n" if rest else "")
        text = text[:start] + section + "\n" * bool(after) + text[end:]
    return text


CONTRIBUTING = "docs/contributing.md"
README_SECTION = re.compile(r"(## Adding a problem\n\n.*?\n\n)(1\. .*?)(\n\n|\n?$)", re.S)


def with_readme_section(text: str) -> str:
    return README_SECTION.sub(lambda m: m[1] + readme_section() + m[3], text, count=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.staff.checklist")
    parser.add_argument("--missing", metavar="PROBLEM", help="what PROBLEM lacks, step by step")
    parser.add_argument("--write", action="store_true", help="rewrite the list and the handout's tables")
    options = parser.parse_args(argv)
    if options.missing:
        lacks = missing(options.missing)
        print("\n".join(lacks) if lacks else f"{options.missing}: every step is there")
        return 1 if lacks else 0
    if options.write:
        for name, rewrite in ((CONTRIBUTING, with_readme_section), ("handout.md", with_weight_tables)):
            (ROOT / name).write_text(rewrite((ROOT / name).read_text()))
        print(f"{CONTRIBUTING}'s 'Adding a problem' and handout.md's weight tables rewritten")
        return 0
    print(readme_section())
    return 0


if __name__ == "__main__":
    sys.exit(main())
