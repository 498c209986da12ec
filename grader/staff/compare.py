"""`resource-grader compare SUBMISSION --problem P`: a TA's view of one submission, function by function.

The submission's functions run the way grading runs them (the seam's worker, in the sandbox unless
--no-sandbox) and the reference's in this process, on the same inputs: drawn from the suite's hypothesis
strategies (grader/fingerprints/inputs.py) with a seed of their own per function, so a rerun shows the same
table. Per function: each input, both answers and the verdict (within the tolerance the tests use), the
first divergence marked `>>`; then the catalogued mistakes (tests/mistakes/) whose answers equal the
student's on every input ("fingerprints"). Functions that need a scenario say so instead.

Course staff's: it needs the reference and the catalogue, and is withheld from the student release.
"""

import json
import sys
from pathlib import Path

from grader.fingerprints.comparer import EXAMPLES, NOT_STARTED, Compared, Comparer, ProblemReport, Report

# -- the table ---------------------------------------------------------------------------------------------

def render(report: Report, summary: bool = False) -> str:
    lines = []
    for problem in report.problems:
        lines.append(f"== {problem.problem} " + "=" * max(0, 90 - len(problem.problem)))
        if problem.not_started:
            lines.append(f"{problem.problem}: {NOT_STARTED}")
        for f in problem.functions:
            name = f"{problem.problem}.{f.function}"
            if not isinstance(f, Compared):
                lines.append(f"{name}: {f.reason}")
                continue
            lines += _function_lines(name, f, summary)
    lines += [f"guard: {line}" for line in report.review]
    return "\n".join(lines)


def _function_lines(name: str, f: Compared, summary: bool) -> list[str]:
    verdict = "agrees" if f.agree == f.of else "DIFFERS"
    lines = [f"{name}: {verdict} - {f.agree} of {f.of} inputs equal ({f.tolerance})"]
    if not summary:
        width = max([len(r.student) for r in f.rows] + [7])
        for i, r in enumerate(f.rows):
            mark = ">>" if i == f.first_divergence else ("  " if r.equal else " x")
            lines.append(f"  {mark} {'equal  ' if r.equal else 'differs'}  student {r.student:<{width}}  "
                         f"reference {r.reference}  <- {r.input}")
    lines += [f"  matches `{m.id}`: {m.description} - {m.agree} of {m.of} inputs" for m in f.matches]
    if f.agree < f.of and not f.matches:
        closest = "; closest: " + ", ".join(f"`{m.id}` ({m.agree} of {m.of})" for m in f.closest) if f.closest else ""
        lines.append(f"  no catalogued mistake matches{closest}")
    return lines


# -- the command -------------------------------------------------------------------------------------------

def add_parser(commands) -> None:
    from grader.cli import add_worker_options

    c = commands.add_parser("compare", help="course staff: one submission against the reference, function by "
                                            "function, with the catalogued mistakes it matches")
    c.add_argument("submission", type=Path)
    c.add_argument("--problem", action="append", required=True, help="the problem to compare (repeatable)")
    c.add_argument("--function", action="append", help="only this function (repeatable)")
    c.add_argument("--examples", type=int, default=EXAMPLES, help="inputs per function (default 20)")
    c.add_argument("--json", type=Path, default=None, metavar="OUT", help="also write the report as JSON")
    c.add_argument("--summary", action="store_true", help="one line per function, no rows")
    add_worker_options(c)


def run(options) -> int:
    from grader import has_reference, registry
    from grader.harness import sandbox
    from grader.sources import not_started
    from grader.submission import SubmissionError, in_sandbox, isolated_package

    if not has_reference():
        print("resource-grader compare: needs the reference solution (the course's tree)", file=sys.stderr)
        return 2
    unknown = [p for p in options.problem if p not in registry.BY_ID]
    if unknown or options.examples < 1:
        print(f"resource-grader compare: unknown problem(s) {unknown}; known: {', '.join(registry.BY_ID)}"
              if unknown else "resource-grader compare: --examples must be at least 1", file=sys.stderr)
        return 2
    layers = sandbox.detect(options.sandbox)
    if not layers.sandboxed:
        print(layers.describe(), file=sys.stderr)
    comparer = Comparer(options.problem, options.function, options.examples)
    known = {e.name for es in comparer.entries.values() for e in es} | {n for s in comparer.skipped.values() for n in s}
    missing = [f for f in options.function or [] if f not in known]
    if missing:
        print(f"resource-grader compare: no function {missing} in {', '.join(options.problem)}", file=sys.stderr)
        return 2
    try:
        with in_sandbox(options.submission, layers, memory_mb=options.memory_mb) as (box, workspace):
            modules = workspace.modules()
            untouched = [p for p in options.problem if not_started(modules[registry.BY_ID[p].module])]
            started = [p for p in options.problem if p not in untouched]
            report = Report(comparer.examples)
            if started:
                package = isolated_package(box, workspace, call_timeout=options.call_timeout,
                                           memory_mb=options.memory_mb)
                try:
                    report = comparer.compare(package, started)
                finally:
                    package.close()
    except SubmissionError as exc:
        print(f"resource-grader compare: {exc}", file=sys.stderr)
        return 2
    report.problems = [ProblemReport(p, not_started=True) if p in untouched else
                       next(r for r in report.problems if r.problem == p) for p in options.problem]
    report.submission = str(options.submission)
    report.missing = [m for m in workspace.missing if m in options.problem]
    print(render(report, options.summary))
    if report.missing:
        print("not in the submission (compared as the untouched stub): " + ", ".join(report.missing))
    if options.json:
        options.json.parent.mkdir(parents=True, exist_ok=True)
        options.json.write_text(json.dumps(report.to_data(), indent=1))
        print(f"report written to {options.json}")
    return 0


