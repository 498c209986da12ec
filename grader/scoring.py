"""Scores from test outcomes, the terminal table, and Gradescope's results.json.

The rule (stated in the handout): a problem's points are split equally among its graded tests, and a
test earns its share when it passes. GPU tests are worth nothing. A test that never reported (the run
was killed at the submission's time limit) has failed.
"""

import ast
from dataclasses import dataclass, field

from grader import registry
from grader.runner import RunResult

MESSAGE_LINES = 14


@dataclass
class TestScore:
    nodeid: str
    problem: str
    max_score: float
    passed: bool
    status: str  # passed, failed, skipped, not run
    message: str = ""

    @property
    def name(self) -> str:
        return self.nodeid.split("::", 1)[-1]

    @property
    def score(self) -> float:
        return self.max_score if self.passed else 0.0


@dataclass
class ProblemScore:
    id: str
    title: str
    points: int
    tests: list[TestScore] = field(default_factory=list)

    @property
    def score(self) -> float:
        return sum(t.score for t in self.tests)


def score_run(run: RunResult, problems=registry.PROBLEMS) -> list[ProblemScore]:
    """One ProblemScore per problem that has graded tests in this run."""
    scores = []
    for problem in problems:
        graded = [c for c in run.collected if c["problem"] == problem.id and not c["gpu"]]
        if not graded:
            continue
        share = problem.points / len(graded)
        result = ProblemScore(problem.id, problem.title, problem.points)
        for test in graded:
            record = run.records.get(test["nodeid"])
            if record is None:
                status, message = "not run", "did not run: the submission's time limit was reached first"
            else:
                status, message = record["outcome"], record["message"]
            result.tests.append(TestScore(test["nodeid"], problem.id, share, status == "passed", status, message))
        scores.append(result)
    return scores


def _short(message: str, lines: int = MESSAGE_LINES) -> str:
    kept = message.strip().splitlines()
    if len(kept) > lines:
        kept = kept[:lines] + [f"... ({len(kept) - lines} more lines)"]
    return "\n".join(kept)


def not_started(source: bytes | str) -> bool:
    """Whether every function and method of a problem module only raises NotImplementedError (after its
    docstring and, in a class, a `super().__init__(...)`): the untouched stub, or one with nothing written
    yet. Read from the source (it is parsed, never run)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    return bool(functions) and all(_only_raises_not_implemented(f.body) for f in functions)


def _only_raises_not_implemented(body: list[ast.stmt]) -> bool:
    *before, last = body
    if not (isinstance(last, ast.Raise) and last.exc is not None):
        return False
    raised = last.exc.func if isinstance(last.exc, ast.Call) else last.exc
    if not (isinstance(raised, ast.Name) and raised.id == "NotImplementedError"):
        return False
    for i, statement in enumerate(before):
        value = statement.value if isinstance(statement, ast.Expr) else None
        docstring = i == 0 and isinstance(value, ast.Constant) and isinstance(value.value, str)
        super_call = (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                      and isinstance(value.func.value, ast.Call) and isinstance(value.func.value.func, ast.Name)
                      and value.func.value.func.id == "super")
        if not (docstring or super_call):
            return False
    return True


def table(scores: list[ProblemScore], notes: list[str], untouched: frozenset[str] = frozenset()) -> str:
    """The score table per problem, then each failure with its counterexample. A problem in `untouched` (its
    module only raises NotImplementedError, `not_started`) is one line, whatever its tests reported: a test
    that catches the stub's error and reports it as a value would otherwise list a failure per test."""
    rows = [f"{'problem':<26}{'score':>14}  tests passed", "-" * 56]
    for p in scores:
        passed = sum(t.passed for t in p.tests)
        rows.append(f"{p.id:<26}{p.score:>7.2f} / {p.points:<4}  {passed}/{len(p.tests)}")
    total, out_of = sum(p.score for p in scores), sum(p.points for p in scores)
    rows += ["-" * 56, f"{'total':<26}{total:>7.2f} / {out_of:<4}"]
    failures = [t for p in scores for t in p.tests if not t.passed]
    unimplemented = [t for t in failures if t.problem in untouched or t.message.startswith("NotImplementedError")]
    if unimplemented:
        rows += ["", "Not implemented yet (the stub raised NotImplementedError):"]
        for p in scores:
            count = sum(t.problem == p.id for t in unimplemented)
            if not count:
                continue
            plural = "s" if count > 1 else ""
            if p.id in untouched:
                rows.append(f"    {p.id}: not started, every function raises NotImplementedError "
                            f"({count} test{plural})")
                continue
            names = sorted({_stub_name(t.message) for t in unimplemented if t.problem == p.id})
            rows.append(f"    {p.id}: {count} test{plural} ({', '.join(names)})")
    failures = [t for t in failures if t not in unimplemented]
    if failures:
        rows += ["", "Failures (expected is the oracle's or the reference's answer; got is yours):"]
        for t in failures:
            rows += ["", f"[{t.problem}] {t.name}  ({t.status})", _indent(_short(t.message))]
    if notes:
        rows += [""] + notes
    return "\n".join(rows)


def _stub_name(message: str) -> str:
    """The function a NotImplementedError names ("NotImplementedError: matmul_flops" -> "matmul_flops")."""
    first = message.splitlines()[0].removeprefix("NotImplementedError").lstrip(": ").strip()
    return first or "?"


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def results_json(scores: list[ProblemScore], *, seconds: float, output: str, review: list[str] | None = None) -> dict:
    """Gradescope's autograder results format; `review`, the evidence for course staff, goes in `extra_data`,
    which Gradescope stores and does not show to students."""
    tests = []
    for i, p in enumerate(scores, start=1):
        for j, t in enumerate(p.tests, start=1):
            tests.append({
                "name": f"{p.id}: {t.name}", "number": f"{i}.{j}", "score": round(t.score, 4),
                "max_score": round(t.max_score, 4), "status": "passed" if t.passed else "failed",
                "visibility": "visible", "output": _short(t.message, 40),
            })
    return {
        "score": round(sum(p.score for p in scores), 2),
        "execution_time": round(seconds, 1),
        "output": output,
        "visibility": "visible",
        "stdout_visibility": "visible",
        "tests": tests,
        **({"extra_data": {"review": list(review)}} if review else {}),
    }
