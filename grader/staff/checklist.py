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
    return None if problem in measured else f"grader/staff/figures.json has no figures for {problem}"


MISTAKES = 6
WRITE = "python -m grader.staff.checklist --write"
STEPS = [
    Step("The stub `assignment/<problem>.py`: public names in `__all__`, every function raising "
         "`NotImplementedError`, docstrings that are the spec (the errors they promise go in `tests/documented.py`).",
         _stub),
    Step("The reference `reference/<problem>.py`, the same API.", _file("reference/{}.py")),
    Step("The tests `tests/test_<problem>.py`, marked `pytestmark = pytest.mark.<problem>`, their oracles named in "
         "the module docstring with the tolerances and why; their strategies in `tests/strategies/<problem>.py`, "
         "what the staff tools share with them in `tests/common/<problem>.py`, code the worker must run "
         "(scenarios) in `tests/scenarios/<problem>.py`, where the problem has any.", _tests),
    Step("The problem and its weights in `grader/registry.py` (`PROBLEMS`, `BEHAVIOURS`; its oracles in `ORACLES`, "
         "which makes them absent from its worker).", _registry),
    Step("The 100 points rebalanced: the problems' points in `grader/registry.py` add up to 100.", _hundred),
    Step(f"At least {MISTAKES} catalogued mistakes in `tests/mistakes/<problem>.py`, each with what it costs "
         "(`COSTS`).", _mistakes),
    Step("A handout section `## Problem (<problem>): ...` with its weight table under `### Points` "
         "(`python -m grader.staff.checklist --write` writes the tables from the registry).", _handout),
    Step("compare's inputs in `grader/fingerprints/inputs.py` (`BUILDERS`), or why a function is not comparable "
         "(`NOT_COMPARABLE`).", _compare_inputs),
    Step("Its generated tests' grading budgets in `grader/grading_budget.py`, from the mutation data "
         "(`python -m tests.meta.calibrate`, the commands in its docstring).", _budget),
    Step("The grader's figures measured again with it (`python -m grader.staff.bench --grade-only --record`: "
         "`grader/staff/figures.json` and the table in docs/graders.md).", _figures),
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


def with_weight_tables(text: str) -> str:
    """handout.md's text with the table under each problem's `### Points` rewritten from the registry."""
    for problem in PROBLEMS:
        heading = text.index("\n### Points\n", text.index(f"## Problem ({problem.id}): "))
        start = text.index("\n|", heading) + 1
        end = text.find("\n", start)
        while text.startswith("|", end + 1):
            end = text.find("\n", end + 1)
        text = text[:start] + weight_table(problem) + text[end:]
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
