"""Scores from test outcomes, the terminal table, and Gradescope's results.json.

The rule (stated in the handout, the weights in grader/registry.py): a problem's points go to its behaviours,
each worth its weight; a behaviour's points are split equally among its test functions, and a function's share
equally among its pytest items, each earned when the item passes. Where some behaviours of a problem did not
run at all (the student release leaves out the differential tests), the weights of those that ran are scaled
so that the problem is still out of its points. GPU tests are worth nothing. A test that never reported (the
run was killed at the submission's time limit) has failed.
"""

import re
from dataclasses import dataclass, field

from grader import messages, registry
from grader.matches import Matches
from grader.runner import RunResult

MESSAGE_LINES = 14
BEHAVIOUR_OUTPUT_LINES = 40
UNWEIGHTED = "unweighted tests (worth nothing: course staff, see grader/registry.py)"


@dataclass
class TestScore:
    nodeid: str
    problem: str
    max_score: float
    passed: bool
    status: str  # passed, failed, skipped, not run
    message: str = ""
    behaviour: str = ""
    raised_by: str = ""  # a failure's cause (grader/harness/record.py RAISED_BY)

    @property
    def grader_error(self) -> bool:
        """Whether it failed by an error of the grading code (never presented as the student's)."""
        return not self.passed and self.raised_by == "grader"

    @property
    def name(self) -> str:
        return self.nodeid.split("::", 1)[-1]

    @property
    def function(self) -> str:
        """The test function (the name without its parametrization)."""
        return self.name.split("[", 1)[0]

    @property
    def item(self) -> str:
        """Its parametrization id ("" for none): what a selector's part matches (registry.selects)."""
        name = self.name
        return name[name.index("[") + 1:-1] if name.endswith("]") and "[" in name else ""

    @property
    def score(self) -> float:
        return self.max_score if self.passed else 0.0


@dataclass
class BehaviourScore:
    name: str
    points: float  # its weight in this run (scaled when some behaviours of the problem did not run)
    tests: list[TestScore] = field(default_factory=list)
    requires: tuple[str, ...] = ()  # selectors of the evidence its tests wait for (registry.Behaviour)
    fixed: dict = field(default_factory=dict)  # selectors of fixed-input tests -> the evidence they wait for
    unmet: tuple[str, ...] = ()  # the selectors among those that did not pass in this run

    def __post_init__(self):
        if isinstance(self.requires, str):  # a grading.json of a grader from before several could be named
            self.requires = (self.requires,) if self.requires else ()
        self.requires = tuple(self.requires)
        self.fixed = {key: tuple(waits) for key, waits in dict(self.fixed).items()}
        self.unmet = tuple(self.unmet)

    def gate(self, test: TestScore) -> tuple[str, ...]:
        """The selectors `test` waits for (registry.Behaviour.gate)."""
        return next((waits for key, waits in self.fixed.items() if registry.selects(key, test.function, test.item)),
                    self.requires)

    def waiting(self, test: TestScore) -> tuple[str, ...]:
        """What `test` waits for that did not pass: while there is any, it earns nothing."""
        return tuple(s for s in self.gate(test) if s in self.unmet)

    @property
    def held(self) -> list[TestScore]:
        """Its tests that passed and earn nothing yet: what they wait for did not pass."""
        return [t for t in self.tests if t.passed and self.waiting(t)]

    @property
    def withheld(self) -> bool:
        """Whether its points wait, as a property's, for evidence that did not pass (`requires`)."""
        return bool(set(self.requires) & set(self.unmet))

    @property
    def fixed_waiting(self) -> list[str]:
        """Its fixed-input test functions that passed and earn nothing yet."""
        return list(dict.fromkeys(t.function for t in self.held if self.gate(t) is not self.requires))

    @property
    def score(self) -> float:
        return sum(t.score for t in self.tests if not self.waiting(t))

    @property
    def passed(self) -> bool:
        return all(t.passed for t in self.tests) and not self.held

    @property
    def tests_passed(self) -> int:
        return sum(t.passed for t in self.tests)


@dataclass
class ProblemScore:
    id: str
    title: str
    points: int
    behaviours: list[BehaviourScore] = field(default_factory=list)

    @property
    def tests(self) -> list[TestScore]:
        return [t for b in self.behaviours for t in b.tests]

    @property
    def score(self) -> float:
        return sum(b.score for b in self.behaviours)


@dataclass(frozen=True)
class KnownMistake:
    """A function of a submission whose answers are those of catalogued mistakes on every input compared
    (grader/fingerprints/): "problem.function", the public names it calls, {id: description}."""

    function: str
    names: tuple[str, ...]
    mistakes: dict
    inputs: int

    @property
    def problem(self) -> str:
        return self.function.split(".", 1)[0]

    def line(self) -> str:
        found = "; or of ".join(f"`{id}`: {description}" for id, description in self.mistakes.items())
        return f"{self.function}: on all {self.inputs} inputs tried, your answers are those of {found}"

    def explains(self, b: "BehaviourScore") -> bool:
        """Whether a failure of `b` is one of this function's (its message names the function)."""
        return any(re.search(rf"\b{re.escape(name)}\b", t.message) for t in b.tests if not t.passed
                   for name in self.names)


def known_mistakes(fingerprints: Matches | None) -> list[KnownMistake]:
    """The functions that differ from the reference and match a catalogued mistake, from a fingerprint result:
    one per function, its entries (inputs of several kinds) together."""
    if not fingerprints:
        return []
    groups: dict[tuple, list[str]] = {}
    for key, found in sorted(fingerprints.functions.items()):
        groups.setdefault((key.split(".", 1)[0], tuple(found.names)), []).append(key)
    known = []
    for (problem, names), keys in groups.items():
        entries = [fingerprints.functions[k] for k in keys]
        matched = [k for k, found in zip(keys, entries, strict=True) if not found.agree and found.matches]
        if matched:
            mistakes = {i: d for k in matched for i, d in fingerprints.descriptions[k].items()}
            function = f"{problem}.{names[0]}" if len(names) == 1 else matched[0]
            known.append(KnownMistake(function, names, mistakes, sum(found.of for found in entries)))
    return known


def _function(nodeid: str) -> str:
    return nodeid.split("::", 1)[-1].split("[", 1)[0]


def score_run(run: RunResult, problems=registry.PROBLEMS) -> list[ProblemScore]:
    """One ProblemScore per problem that has graded tests in this run, one BehaviourScore per behaviour of it
    that ran (in the registry's order)."""
    scores = []
    for problem in problems:
        graded = [c for c in run.collected if c["problem"] == problem.id and not c["gpu"]]
        if not graded:
            continue
        items: dict[str, list[dict]] = {}  # test function -> its collected items
        for test in graded:
            items.setdefault(_function(test["nodeid"]), []).append(test)
        ran = [(b, [f for f in b.tests if f in items]) for b in problem.behaviours]
        ran = [(b, functions) for b, functions in ran if functions]
        total = sum(b.points for b, _ in ran)
        scale = problem.points / total if total else 0.0
        result = ProblemScore(problem.id, problem.title, problem.points)
        for behaviour, functions in ran:
            score = BehaviourScore(behaviour.name, behaviour.points * scale, requires=behaviour.requires,
                                   fixed=dict(behaviour.fixed))
            for function in functions:
                share = score.points / len(functions) / len(items[function])
                score.tests += [_test_score(run, test, problem.id, share, behaviour.name) for test in items[function]]
            result.behaviours.append(score)
        _resolve_gates(result)
        weighed = {f for b in problem.behaviours for f in b.tests}
        unweighted = [test for function, tests in items.items() if function not in weighed for test in tests]
        if unweighted:  # a meta-test keeps this from happening (tests/meta/test_consistency.py)
            result.behaviours.append(BehaviourScore(UNWEIGHTED, 0.0, [
                _test_score(run, test, problem.id, 0.0, UNWEIGHTED) for test in unweighted]))
        scores.append(result)
    return scores


def scores_from(data: list[dict]) -> list[ProblemScore]:
    """ProblemScore objects from their asdict() form (a task's JSON, a grading.json)."""
    return [ProblemScore(p["id"], p["title"], p["points"],
                         [BehaviourScore(b["name"], b["points"], [TestScore(**t) for t in b["tests"]],
                                         requires=b.get("requires", ()), fixed=b.get("fixed", {}),
                                         unmet=b.get("unmet", b.get("requires", ()) if b.get("withheld") else ()))
                          for b in p["behaviours"]]) for p in data]


def _resolve_gates(result: ProblemScore) -> None:
    """Each behaviour's `unmet`: the selectors its tests wait for whose items did not all pass, or did not run
    (registry.Behaviour: a test that checks only a property, or fixed inputs, earns once its evidence passes)."""
    tests = result.tests
    for b in result.behaviours:
        wanted = {s for t in b.tests for s in b.gate(t)}
        b.unmet = tuple(sorted(s for s in wanted if not _passed(s, tests)))


def _passed(text: str, tests: list[TestScore]) -> bool:
    chosen = [t for t in tests if registry.selects(text, t.function, t.item)]
    return bool(chosen) and all(t.passed for t in chosen)


def _test_score(run: RunResult, test: dict, problem: str, share: float, behaviour: str) -> TestScore:
    record = run.records.get(test["nodeid"])
    if record is None:
        status, message = "not run", "did not run: the submission's time limit was reached first"
    else:
        status, message = record["outcome"], record["message"]
    return TestScore(test["nodeid"], problem, share, status == "passed", status, message, behaviour,
                     record.get("raised_by", "") if record else "")


def _short(message: str, lines: int = MESSAGE_LINES) -> str:
    kept = message.strip().splitlines()
    if len(kept) > lines:
        kept = kept[:lines] + [f"... ({len(kept) - lines} more lines)"]
    return "\n".join(kept)


_TOP_LEVEL_FRAME = re.compile(r'File "assignment/(\w+)\.py", line (\d+), in <module>')


def import_errors(scores: list["ProblemScore"]) -> dict[str, str]:
    """The problem modules whose import raised in the worker (a failure whose traceback ends at the module's top
    level), each with one line: file, line, error."""
    modules = {p.id: p.module for p in registry.PROBLEMS}
    found = {}
    for t in (t for p in scores for t in p.tests if not t.passed and t.raised_by == "submission"):
        frame = _TOP_LEVEL_FRAME.search(t.message)
        if frame and frame[1] == modules.get(t.problem) and frame[1] not in found:
            found[frame[1]] = f"{frame[1]}.py, line {frame[2]}: {t.message.strip().splitlines()[0]}"
    return found


def _points(value: float) -> str:
    """Points as everywhere in the grader's output: at most two decimals, no trailing zeros (2.7, 0.25, 10)."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _score(score: float, points: float) -> str:
    """"score / points" in one format, aligned on the slash."""
    return f"{_points(score):>7} / {_points(points):<6}"


NAME_WIDTH = 58


def table(scores: list[ProblemScore], notes: list[str], untouched: frozenset[str] = frozenset(),
          known: list[KnownMistake] = (), *, lead: list[str] = (), missing: frozenset[str] = frozenset(),
          broken: dict[str, str] | None = None, failures: bool = True) -> str:
    """The score table per problem, with its behaviours under it, the modules that do not import (`broken`:
    problem -> one line), the known mistakes the submission's answers match (`known`), then, with `failures`,
    each failure with its counterexample; `lead` first (what the student must read before anything), `notes`
    last. A problem in `untouched` (its module only raises NotImplementedError, `not_started`), `missing` (not
    in the upload) or `broken` is one line, whatever its tests reported: a test that catches the stub's error
    and reports it as a value would otherwise list a failure per test, and its behaviours are all 0. A failure
    raised by the grading code itself (TestScore.grader_error) says so; the header's "got is yours" is for the rest."""
    broken = broken or {}
    one_line = untouched | missing | set(broken)
    rule = "-" * (NAME_WIDTH + 30)
    rows = [*lead, ""] if lead else []
    rows += [f"{'problem / behaviour':<{NAME_WIDTH}}{'score':>15}  tests passed", rule]
    for p in scores:
        passed = sum(t.passed for t in p.tests)
        rows.append(f"{p.id:<{NAME_WIDTH}}{_score(p.score, p.points)}  {passed}/{len(p.tests)}")
        for b in p.behaviours if p.id not in one_line else ():
            rows.append(f"    {b.name:<{NAME_WIDTH - 4}}{_score(b.score, b.points)}  {b.tests_passed}/{len(b.tests)}")
            held = _held_lines(b, messages.PROPERTY_NOT_EARNED, messages.FIXED_NOT_EARNED)
            rows += ["        " + line for line in held]
    total, out_of = sum(p.score for p in scores), sum(p.points for p in scores)
    rows += [rule, f"{'total':<{NAME_WIDTH}}{_score(total, out_of)}"]
    failed = [t for p in scores if p.id not in missing and p.id not in broken for t in p.tests if not t.passed]
    unimplemented = [t for t in failed if t.problem in untouched or t.message.startswith("NotImplementedError")]
    if broken:
        rows += ["", messages.DOES_NOT_IMPORT_HEADER]
        rows += ["    " + broken[p.id] for p in scores if p.id in broken]
    if unimplemented:
        rows += ["", messages.NOT_IMPLEMENTED_HEADER]
        for p in scores:
            count = sum(t.problem == p.id for t in unimplemented)
            if not count:
                continue
            plural = "s" if count > 1 else ""
            if p.id in untouched:
                rows.append("    " + messages.NOT_STARTED.format(problem=p.id, tests=f"{count} test{plural}"))
                continue
            names = sorted({_stub_name(t.message) for t in unimplemented if t.problem == p.id})
            rows.append(f"    {p.id}: {count} test{plural} ({', '.join(names)})")
    failed = [t for t in failed if t not in unimplemented]
    typed = [t for t in failed if t.message.startswith(TYPE_CHECK)]  # the same line for every example: once each
    if typed:
        rows += ["", messages.TYPE_CHECKS_HEADER]
        for line, tests in _by_first_line(typed).items():
            rows.append(f"    {tests[0].problem}: {line.removeprefix(TYPE_CHECK)} ({_tests(tests)})")
    failed = [t for t in failed if t not in typed]
    if known:
        rows += ["", messages.KNOWN_MISTAKES] + ["    " + k.line() for k in known]
    if failed and failures:
        rows += ["", messages.FAILURES_HEADER]
        for t in failed:
            rows += ["", f"[{t.problem}: {t.behaviour}] {t.name}  ({t.status})", _indent(_failure_text(t))]
    elif failed:
        rows += ["", messages.FAILURES_BELOW.format(tests=f"{len(failed)} failed test{'s' * (len(failed) > 1)}")]
    if notes:
        rows += [""] + notes
    return "\n".join(rows)


def _held_lines(b: BehaviourScore, property_line: str, fixed_line: str) -> list[str]:
    """Why tests of `b` that passed earn nothing yet: its property's evidence (`requires`) did not pass, or the
    evidence its fixed-input tests wait for did not; each line names what they wait for."""
    held = b.held
    if not held:
        return []
    problem = held[0].problem
    lines = []
    if b.withheld and any(b.gate(t) is b.requires for t in held):
        unmet = tuple(s for s in b.requires if s in b.unmet)
        lines.append(property_line.format(awaited=registry.awaited(problem, unmet)))
    fixed = [t for t in held if b.gate(t) is not b.requires]
    if fixed:
        unmet = tuple(dict.fromkeys(s for t in fixed for s in b.waiting(t)))
        lines.append(fixed_line.format(tests=", ".join(dict.fromkeys(t.function for t in fixed)),
                                       awaited=registry.awaited(problem, unmet)))
    return lines


TYPE_CHECK = "StubTypeError: "  # a value a stub's annotation refuses (grader/harness/typecheck.py): its first line


def _by_first_line(tests: list[TestScore]) -> dict[str, list[TestScore]]:
    found: dict[str, list[TestScore]] = {}
    for t in tests:
        found.setdefault(t.message.strip().splitlines()[0], []).append(t)
    return found


def _tests(tests: list[TestScore]) -> str:
    return f"{len(tests)} test{'s' * (len(tests) > 1)}: " + ", ".join(t.name for t in tests[:3]) + \
        (", ..." if len(tests) > 3 else "")


def _failure_text(test: TestScore, lines: int = MESSAGE_LINES) -> str:
    """A failure's message, cut; one raised by the grading code itself says so first."""
    text = _short(test.message, lines)
    return f"{messages.GRADER_ERROR}\n{text}" if test.grader_error else text


def _stub_name(message: str) -> str:
    """The function a NotImplementedError names ("NotImplementedError: matmul_flops" -> "matmul_flops")."""
    first = message.splitlines()[0].removeprefix("NotImplementedError").lstrip(": ").strip()
    return first or "?"


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def behaviour_output(b: BehaviourScore, known: list[KnownMistake] = (), lines: int = BEHAVIOUR_OUTPUT_LINES,
                     broken: str | None = None, missing: bool = False) -> str:
    """What Gradescope shows under a behaviour: how many of its tests passed, the known mistakes that explain
    its failures (`known`), then each distinct failure once, with the tests that failed with it; where the
    problem's module does not import (`broken`, its one line) or is not in the upload (`missing`), that line
    instead of the failures."""
    rows = [f"{b.tests_passed}/{len(b.tests)} tests passed: {_points(b.score)} of {_points(b.points)} points."]
    if b.tests_passed < len(b.tests) and (broken or missing):
        module = b.tests[0].problem
        rows.append(messages.DOES_NOT_IMPORT.format(line=broken) if broken
                    else messages.NOT_UPLOADED.format(module=module))
        return "\n".join(rows)
    rows += _held_lines(b, messages.PROPERTY_ONLY, messages.FIXED_WAITING)
    rows += [f"Known mistake: {k.line()}" for k in known]
    by_message: dict[str, list[TestScore]] = {}
    for t in b.tests:
        if not t.passed:  # a stub's NotImplementedError once, whatever example it was called on
            key = t.message.strip()
            if key.startswith("NotImplementedError"):
                key = key.splitlines()[0] + " (not implemented yet)"
            elif key.startswith(TYPE_CHECK):  # the same line for every example it was seen on
                key = key.splitlines()[0]
            by_message.setdefault(key, []).append(t)
    for message, tests in by_message.items():
        names = ", ".join(f"{t.name} ({t.status})" for t in tests[:4])
        more = f" and {len(tests) - 4} more" if len(tests) > 4 else ""
        text = _short(message, MESSAGE_LINES)
        if tests[0].grader_error:
            text = f"{messages.GRADER_ERROR}\n{text}"
        rows += ["", f"{names}{more}:", _indent(text)]
    if len(rows) > lines:
        rows = rows[:lines] + [messages.MORE_LINES.format(count=len(rows) - lines)]
    return "\n".join(rows)


def code_block(text: str) -> str:
    """`text` as a Markdown code block (Gradescope's `md` format): shown as written, in a fixed-width font, and
    never read as Markdown or HTML; the fence is longer than any run of backticks in the text, so no text
    closes it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def grader_errors(scores: list[ProblemScore]) -> list[str]:
    """The failures raised by the grading code itself (TestScore.grader_error), one line each: for course staff."""
    return [f"[{t.name}] {t.message.strip().splitlines()[0]}" for p in scores for t in p.tests if t.grader_error]


def results_json(scores: list[ProblemScore], *, seconds: float, output: str, review: list[str] | None = None,
                 known: list[KnownMistake] = (), fingerprinted: dict | None = None,
                 broken: dict[str, str] | None = None, missing: frozenset[str] = frozenset(),
                 per_problem: dict[str, dict[str, float]] | None = None) -> dict:
    """Gradescope's autograder results format: one test per behaviour (its weight the max_score; its pytest
    items and their outcomes, and the ids of the known mistakes that explain its failures, in the test's
    `extra_data`), `output` (the score table and the notes, without the failures: they are under each test) at
    the top. Every text is a Markdown code block (`output_format` md), shown as written in a fixed-width font.
    What is for course staff alone goes where Gradescope stores it without showing it to students: `review`
    (the guard's evidence), `fingerprinted` (what the fingerprints ran), figures per problem (`per_problem`:
    the seconds its tests took, the examples they ran) and the errors of the grading code itself in the
    top-level `extra_data`; the grader's stdout and stderr (its operator's lines, tracebacks) are hidden from
    students (`stdout_visibility`)."""
    broken = broken or {}
    tests = []
    for i, p in enumerate(scores, start=1):
        for j, b in enumerate(p.behaviours, start=1):
            explaining = [k for k in known if k.problem == p.id and k.explains(b)]
            text = behaviour_output(b, explaining, broken=broken.get(p.id), missing=p.id in missing)
            tests.append({
                "name": f"{p.id}: {b.name}", "name_format": "text", "number": f"{i}.{j}",
                "score": round(b.score, 4), "max_score": round(b.points, 4),
                "status": "passed" if b.passed else "failed", "visibility": "visible",
                "output": code_block(text), "output_format": "md",
                "extra_data": {"problem": p.id, "tests": {t.name: t.status for t in b.tests},
                               **({"known_mistakes": {k.function: list(k.mistakes) for k in explaining}}
                                  if explaining else {})},
            })
    results = {
        "score": round(sum(p.score for p in scores), 2),
        "execution_time": round(seconds, 1),
        "output": code_block(output) if output else "",
        "output_format": "md",
        "test_output_format": "md",
        "test_name_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
    }
    staff = {"review": list(review or []), "fingerprints": fingerprinted, **(per_problem or {}),
             "grader_errors": grader_errors(scores)}
    staff = {key: value for key, value in staff.items() if value}
    if staff:
        results["extra_data"] = staff
    return results
