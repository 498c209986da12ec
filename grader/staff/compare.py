"""`resource-grader compare SUBMISSION --problem P`: a TA's view of one submission, function by function.

The submission's functions run the way grading runs them (the seam's worker, in the sandbox unless
--no-sandbox) and the reference's in this process, on the same inputs: drawn from the suite's hypothesis
strategies (grader/staff/compare_inputs.py) with a seed of their own per function, so a rerun shows the same
table. Per function: each input, both answers and the verdict (within the tolerance the tests use), the
first divergence marked `>>`; then the catalogued mistakes (tests/mistakes/) whose answers equal the
student's on every input ("fingerprints"). Functions that need a scenario say so instead.

Course staff's: it needs the reference and the catalogue, and is withheld from the student release.
"""

import copy
import dataclasses
import hashlib
import json
import math
import sys
import warnings
from pathlib import Path

from grader.matches import FunctionMatch, Matches
from grader.staff import answers_cache

EXAMPLES = 20  # the default number of inputs per function
CATALOGUE_MODULES = r"tests\.mistakes\."  # where the warnings of the catalogue's functions are raised
NOT_STARTED = ("not started: every function of its module only raises NotImplementedError (the stub), "
               "so nothing is compared")


def _prepare() -> None:
    """jaxtyping's shape checks on the reference (as the suite has them).
    The catalogue's wrong functions run in this process (their answers): what a library warns them about
    (`memory:allocates` creates tensors of torch's deprecated quantized dtypes) is not the operator's concern,
    and stays off their terminal."""
    warnings.filterwarnings("ignore", module=CATALOGUE_MODULES)
    if "reference" not in sys.modules:
        from grader.harness.typecheck import install_shape_checks

        install_shape_checks(["reference"])


# -- inputs ------------------------------------------------------------------------------------------------

def draw_inputs(strategy, n: int, key: str, pool: int = 10) -> list:
    """`n` distinct examples of `strategy` (fewer if it has fewer), the same ones every run: hypothesis
    generates up to `pool * n` distinct ones from a seed derived from `key`, with no example database, and
    the `n` kept are those first by a hash of their repr (hypothesis starts from the simplest inputs and
    varies them little by little: a spread of its examples, not its first ones)."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import seed as seeded

    from grader.seed import pin_hypothesis_constants

    pin_hypothesis_constants()  # the same inputs in `grade`'s process and in `batch`'s, whatever each imported
    found = {}

    @seeded(_digest(key))
    @settings(max_examples=pool * n, database=None, deadline=None, phases=[Phase.generate], derandomize=False,
              suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet)
    @given(strategy)
    def collect(example):
        text = repr(example)
        if text not in found:
            found[text] = example

    collect()
    return [found[text] for text in sorted(found, key=lambda text: _digest(f"{key}:{text}"))[:n]]


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


# -- answers -----------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Raised:
    """An exception as an answer: its class's name (the worker's, for the submission)."""

    name: str
    message: str

    def __eq__(self, other) -> bool:
        return isinstance(other, Raised) and other.name == self.name


def call(package, problem: str, entry, args: tuple, kwargs: dict):
    """The package's answer for one input (normalized as the entry says), or Raised."""
    args, kwargs = copy.deepcopy((args, kwargs))  # in-process code may modify its inputs
    try:
        if entry.scenario is not None:
            answer = package.run(entry.scenario, *args, **kwargs)
        else:
            answer = getattr(getattr(package, problem), entry.name)(*args, **kwargs)
        return entry.normalize(answer) if entry.normalize else answer
    except Exception as exc:  # noqa: BLE001 - any exception is an answer to compare
        name = getattr(exc, "remote_type", type(exc).__name__).rsplit(".", 1)[-1]
        return Raised(name, str(exc).split("\n", 1)[0][:200])


def same(got, expected, entry) -> bool:
    """The tests' verdict: equal within the entry's tolerance, types included."""
    import torch

    if isinstance(expected, Raised) or isinstance(got, Raised):
        return got == expected
    if isinstance(expected, torch.Tensor):
        return isinstance(got, torch.Tensor) and _same_tensor(got, expected, entry)
    if type(expected) is float and type(got) in (int, float):
        if math.isnan(expected) or math.isnan(got):
            return math.isnan(expected) and math.isnan(got)
        return math.isclose(got, expected, rel_tol=entry.rel, abs_tol=0.0) if entry.rel else got == expected
    if type(got) is not type(expected):
        return False
    if isinstance(expected, (list, tuple)):
        return len(got) == len(expected) and all(same(g, e, entry) for g, e in zip(got, expected, strict=True))
    if isinstance(expected, dict):
        return got.keys() == expected.keys() and all(same(got[k], expected[k], entry) for k in expected)
    if dataclasses.is_dataclass(expected):
        return all(same(getattr(got, f.name), getattr(expected, f.name), entry) for f in dataclasses.fields(expected))
    return got == expected


def _same_tensor(got, expected, entry) -> bool:
    import torch

    if got.shape != expected.shape or got.dtype != expected.dtype:
        return False
    if not (expected.is_floating_point() and expected.numel()):
        return torch.equal(got, expected)
    g, e = got.detach().double(), expected.detach().double()
    nan = e.isnan()
    if not torch.equal(g.isnan(), nan):
        return False
    g, e = g[~nan], e[~nan]
    rtol, atol = entry.tensor_tol.get(str(expected.dtype).removeprefix("torch."), (0.0, 0.0))
    if not (rtol or atol):  # bit for bit: the sign of zero too
        return torch.equal(g, e) and torch.equal(torch.signbit(g), torch.signbit(e))
    return bool(torch.allclose(g, e, rtol=rtol, atol=atol))


def short(value, limit: int = 70) -> str:
    """A one-line repr of at most `limit` characters (tensors by shape and dtype, then their first values)."""
    import torch

    def text(v) -> str:
        if isinstance(v, Raised):
            return f"raises {v.name}"
        if isinstance(v, torch.Tensor):
            values = v.detach().reshape(-1)[:4].tolist()
            shown = ", ".join(f"{x:.4g}" if isinstance(x, float) else str(x) for x in values)
            more = ", ..." if v.numel() > 4 else ""
            return f"tensor{list(v.shape)}:{str(v.dtype).removeprefix('torch.')}[{shown}{more}]"
        if isinstance(v, torch.dtype):
            return str(v).removeprefix("torch.")
        if isinstance(v, tuple):
            return "(" + ", ".join(map(text, v)) + ("," if len(v) == 1 else "") + ")"
        if isinstance(v, list):
            return "[" + ", ".join(map(text, v)) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{text(k)}: {text(x)}" for k, x in v.items()) + "}"
        if isinstance(v, float):
            out = f"{v:.10g}"
            return out if any(c in out for c in ".einaINA") else out + ".0"
        if dataclasses.is_dataclass(v) and type(v).__name__ in ("HardwareSpec", "TransformerConfig", "FloatFormat"):
            fields = [f"{f.name}={text(getattr(v, f.name))}" for f in dataclasses.fields(v)][:7]
            return f"{type(v).__name__}({', '.join(fields)})" if type(v).__name__ != "HardwareSpec" else v.name
        return repr(v)

    out = text(value)
    return out if len(out) <= limit else out[:limit - 3] + "..."


def _call_text(args: tuple, kwargs: dict) -> str:
    parts = [short(a, 200) for a in args] + [f"{k}={short(v, 200)}" for k, v in kwargs.items()]
    return "(" + ", ".join(parts) + ")"


# -- the comparison ----------------------------------------------------------------------------------------

class Comparer:
    """The inputs of the chosen problems and functions, with the reference's and the catalogued mistakes'
    answers (computed once, in this process), to compare any number of packages with."""

    def __init__(self, problems: list[str], functions: list[str] | None = None, examples: int = EXAMPLES):
        _prepare()
        from grader.harness.local import LocalPackage
        from grader.staff import compare_inputs

        self.reference = LocalPackage("reference")
        self.problems = problems
        self.examples = examples
        self.entries, self.inputs, self.expected = {}, {}, {}
        self.skipped = {}  # problem -> {function: reason}
        self._mistake_answers = {}
        for problem in problems:
            entries = [e for e in compare_inputs.entries(problem)
                       if not functions or e.name in functions or set(e.names) & set(functions)]
            self.entries[problem] = entries
            skipped = compare_inputs.NOT_COMPARABLE.get(problem, {})
            self.skipped[problem] = {name: why for name, why in skipped.items() if not functions or name in functions}
            whole = not functions and examples == EXAMPLES  # what the cache keeps: a problem's every function
            if whole and self._load(problem):
                continue
            for entry in entries:
                key = (problem, entry.key)
                self.inputs[key] = draw_inputs(entry.inputs, examples, f"compare:{problem}:{entry.key}",
                                              entry.pool)
                self.expected[key] = [call(self.reference, problem, entry, *x) for x in self.inputs[key]]
            if whole:
                self._store(problem)

    # the inputs and answers of a problem depend on the official tree alone: kept between runs (answers_cache)
    def _tables(self) -> dict:
        """What is kept of each problem: these tables' rows keyed by (problem, ...)."""
        return {"inputs": self.inputs, "expected": self.expected, "mistakes": self._mistake_answers}

    def _state(self, problem: str) -> dict:
        return {name: {key: value for key, value in table.items() if key[0] == problem}
                for name, table in self._tables().items()}

    def _load(self, problem: str) -> bool:
        state, tables = answers_cache.load(problem), self._tables()
        if not isinstance(state, dict) or state.keys() != tables.keys():
            return False
        for name, table in tables.items():
            table.update(state[name])
        return True

    def _store(self, problem: str) -> None:
        for entry in self.entries[problem]:
            for mistake in self.mistakes(problem, entry):
                self.mistake_answers(mistake, problem, entry)
        answers_cache.store(problem, self._state(problem))

    def mistakes(self, problem: str, entry) -> list:
        from tests.mistakes import catalog

        return [m for m in catalog(problem) if set(m.replaces) & set(entry.names)]

    def mistake_answers(self, mistake, problem: str, entry) -> list:
        key = (mistake.problem, mistake.id, entry.key)
        if key not in self._mistake_answers:
            from grader.harness.local import LocalPackage

            package = LocalPackage("reference", {f"{problem}.{n}": v for n, v in mistake.replaces.items()})
            self._mistake_answers[key] = [call(package, problem, entry, *x) for x in self.inputs[(problem, entry.key)]]
        return self._mistake_answers[key]

    def compare(self, package, problems: list[str] | None = None, names: set | None = None,
                until_unmatched: bool = False) -> dict:
        """The report (plain data) of `package` (a LocalPackage or the seam's IsolatedPackage) against the
        reference, with the mistakes that match it; only `problems` and the entries of the public `names`
        where given. `until_unmatched` (for fingerprints): a function stops at the first input after which
        it has differed from the reference and no mistake can match it any more (its rows end there)."""
        report = {"examples": self.examples, "problems": [], "review": []}
        for problem in problems or self.problems:
            if getattr(package, "isolated", False):
                package.worker.begin_test(f"compare::{problem}", problem)  # a fresh worker per problem, as graded
            functions = [self._function(package, problem, entry, until_unmatched) for entry in self.entries[problem]
                         if names is None or set(entry.names) & set(names)]
            functions += [{"function": name, "comparable": False, "reason": reason}
                          for name, reason in self.skipped[problem].items() if names is None or name in names]
            report["problems"].append({"problem": problem, "functions": functions})
        if getattr(package, "isolated", False):
            report["review"] = package.worker.take_evidence()
        return report

    def _function(self, package, problem: str, entry, until_unmatched: bool = False) -> dict:
        key = (problem, entry.key)
        inputs, expected = self.inputs[key], self.expected[key]
        mistakes = self.mistakes(problem, entry)
        answers = {m.id: self.mistake_answers(m, problem, entry) for m in mistakes}
        like_reference = [m.id for m in mistakes
                          if all(same(a, e, entry) for a, e in zip(answers[m.id], expected, strict=True))]
        candidates = {m.id for m in mistakes} - set(like_reference)
        got, differed = [], False
        for i, x in enumerate(inputs):
            got.append(call(package, problem, entry, *x))
            differed = differed or not same(got[-1], expected[i], entry)
            candidates = {m for m in candidates if same(got[-1], answers[m][i], entry)}
            if until_unmatched and differed and not candidates:
                break
        inputs, expected = inputs[:len(got)], expected[:len(got)]
        verdicts = [same(g, e, entry) for g, e in zip(got, expected, strict=True)]
        rows = [{"input": _call_text(*x), "student": short(g), "reference": short(e), "equal": v}
                for x, g, e, v in zip(inputs, got, expected, verdicts, strict=True)]
        matches, closest = [], []
        for mistake in mistakes:
            if mistake.id in like_reference:
                continue
            agree = sum(same(g, a, entry) for g, a in zip(got, answers[mistake.id], strict=False))
            found = {"id": mistake.id, "description": mistake.description, "agree": agree, "of": len(inputs)}
            (matches if agree == len(inputs) else closest).append(found)
        closest.sort(key=lambda m: -m["agree"])
        return {"function": entry.key, "names": list(entry.names), "comparable": True, "tolerance": entry.tolerance,
                "rows": rows,
                "agree": sum(verdicts), "of": len(inputs),
                "first_divergence": next((i for i, v in enumerate(verdicts) if not v), None),
                "matches": matches, "closest": closest[:1] if not matches and closest and closest[0]["agree"] else [],
                "like_reference": like_reference}


# -- the table ---------------------------------------------------------------------------------------------

def render(report: dict, summary: bool = False) -> str:
    lines = []
    for problem in report["problems"]:
        lines.append(f"== {problem['problem']} " + "=" * max(0, 90 - len(problem["problem"])))
        if problem.get("not_started"):
            lines.append(f"{problem['problem']}: {NOT_STARTED}")
        for f in problem["functions"]:
            name = f"{problem['problem']}.{f['function']}"
            if not f["comparable"]:
                lines.append(f"{name}: {f['reason']}")
                continue
            verdict = "agrees" if f["agree"] == f["of"] else "DIFFERS"
            lines.append(f"{name}: {verdict} - {f['agree']} of {f['of']} inputs equal ({f['tolerance']})")
            if not summary:
                width = max([len(r["student"]) for r in f["rows"]] + [7])
                for i, r in enumerate(f["rows"]):
                    mark = ">>" if i == f["first_divergence"] else ("  " if r["equal"] else " x")
                    lines.append(f"  {mark} {'equal  ' if r['equal'] else 'differs'}  student {r['student']:<{width}}  "
                                 f"reference {r['reference']}  <- {r['input']}")
            for m in f["matches"]:
                lines.append(f"  matches `{m['id']}`: {m['description']} - {m['agree']} of {m['of']} inputs")
            if f["agree"] < f["of"] and not f["matches"]:
                closest = "; closest: " + ", ".join(f"`{m['id']}` ({m['agree']} of {m['of']})" for m in f["closest"]) \
                    if f["closest"] else ""
                lines.append(f"  no catalogued mistake matches{closest}")
    for line in report.get("review", []):
        lines.append(f"guard: {line}")
    return "\n".join(lines)


# -- the command -------------------------------------------------------------------------------------------

def add_parser(commands) -> None:
    from grader.runner import Limits

    c = commands.add_parser("compare", help="course staff: one submission against the reference, function by "
                                            "function, with the catalogued mistakes it matches")
    c.add_argument("submission", type=Path)
    c.add_argument("--problem", action="append", required=True, help="the problem to compare (repeatable)")
    c.add_argument("--function", action="append", help="only this function (repeatable)")
    c.add_argument("--examples", type=int, default=EXAMPLES, help="inputs per function (default 20)")
    c.add_argument("--json", type=Path, default=None, metavar="OUT", help="also write the report as JSON")
    c.add_argument("--summary", action="store_true", help="one line per function, no rows")
    c.add_argument("--call-timeout", type=float, default=Limits().call_seconds, help="seconds per call")
    c.add_argument("--memory-mb", type=int, default=Limits().worker_memory_mb, help="address-space limit of the worker")
    c.add_argument("--sandbox", choices=["auto", "user", "none"], default="auto")
    c.add_argument("--no-sandbox", dest="sandbox", action="store_const", const="none",
                   help="the same as --sandbox none")


def run(options) -> int:
    from grader import has_reference, registry
    from grader.harness import sandbox
    from grader.scoring import not_started
    from grader.submission import SubmissionError, build_workspace

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
        with sandbox.Sandbox(layers, memory_mb=options.memory_mb) as box:
            workspace = build_workspace(options.submission, box.private)
            modules = workspace.modules()
            untouched = [p for p in options.problem if not_started(modules[registry.BY_ID[p].module])]
            started = [p for p in options.problem if p not in untouched]
            report = {"examples": comparer.examples, "problems": [], "review": []}
            if started:
                box.expose(workspace.root)
                from grader.harness.client import IsolatedPackage

                package = IsolatedPackage("assignment", workspace.root, call_timeout=options.call_timeout,
                                          memory_limit_mb=options.memory_mb, sandbox=sandbox.Spec.load(box.spec()))
                try:
                    report = comparer.compare(package, started)
                finally:
                    package.close()
    except SubmissionError as exc:
        print(f"resource-grader compare: {exc}", file=sys.stderr)
        return 2
    report["problems"] = [{"problem": p, "not_started": True, "functions": []} if p in untouched else
                          next(r for r in report["problems"] if r["problem"] == p) for p in options.problem]
    report["submission"] = str(options.submission)
    report["missing"] = [m for m in workspace.missing if m in options.problem]
    print(render(report, options.summary))
    if report["missing"]:
        print("not in the submission (compared as the untouched stub): " + ", ".join(report["missing"]))
    if options.json:
        options.json.parent.mkdir(parents=True, exist_ok=True)
        options.json.write_text(json.dumps(report, indent=1))
        print(f"report written to {options.json}")
    return 0


# -- fingerprints of a class (resource-grader batch) -------------------------------------------------------

class _Deadline:
    """The package, refusing every call once `seconds` have passed since it was made: the whole comparison
    of one submission stays within its time limit however many calls time out one by one."""

    def __init__(self, package, seconds: float):
        import time

        self._package, self._clock = package, time.monotonic
        self.deadline = self._clock() + seconds
        self.expired = False

    def _check(self) -> None:
        if self._clock() > self.deadline:
            self.expired = True
            raise TimeoutError("the submission's time limit for fingerprints was reached")

    def __getattr__(self, name: str):
        if name in ("isolated", "worker", "close", "name", "writable"):
            return getattr(self._package, name)
        if name == "run":
            return self._guarded(self._package.run)
        return _DeadlineModule(self, getattr(self._package, name))

    def _guarded(self, function):
        def guarded(*args, **kwargs):
            self._check()
            return function(*args, **kwargs)

        return guarded


class _DeadlineModule:
    def __init__(self, deadline: _Deadline, module):
        self._deadline, self._module = deadline, module

    def __getattr__(self, name: str):
        return self._deadline._guarded(getattr(self._module, name))


def class_comparer(problems: list[str], examples: int = EXAMPLES) -> Comparer:
    """A Comparer of `problems` with every catalogued mistake's answers computed up front, so that batch's
    threads share it (they only run submissions in their workers and compare answers)."""
    comparer = Comparer(problems, examples=examples)
    for problem in problems:
        for entry in comparer.entries[problem]:
            for mistake in comparer.mistakes(problem, entry):
                comparer.mistake_answers(mistake, problem, entry)
    return comparer


def _without_contradictions(functions: list[dict]) -> None:
    """Keep a function's match only where none of its entries (inputs of several kinds) contradicts it: on
    each entry the student's answers are the mistake's, or the reference's where the mistake answers as the
    reference does. A mistake matched on one kind of input is not named when another kind shows it is not."""
    groups: dict[tuple, list[dict]] = {}
    for f in functions:
        groups.setdefault(tuple(f["names"]), []).append(f)
    for group in groups.values():
        allowed = set.intersection(*({m["id"] for m in f["matches"]} |
                                     (set(f["like_reference"]) if f["agree"] == f["of"] else set()) for f in group))
        for f in group:
            f["matches"] = [m for m in f["matches"] if m["id"] in allowed]


def fingerprint(comparer: Comparer, submission: Path, layers, *, problems: list[str], agreed: list[str] = (),
                call_seconds: float, memory_mb: int, seconds: float) -> Matches:
    """The catalogued mistakes `submission` matches, function by function (plain data for the grader's
    output and the class report): its functions of `problems` run as `compare` runs them (the seam's worker,
    in the sandbox of `layers`, each call within `call_seconds` and the worker within `memory_mb`), all of
    it within `seconds` (no call starts after, no wait on the worker goes past), each function until no
    mistake can match it; those of `agreed` (problems whose every test passed) are not run and count as
    agreeing with the reference. Problems the comparer has no inputs for are left out. Never raises: what went
    wrong is in its `error`."""
    import time
    import traceback

    from grader.harness import sandbox
    from grader.submission import SubmissionError, build_workspace

    start = time.monotonic()
    run = [p for p in problems if p in comparer.problems]
    result = Matches(problems=run + [p for p in agreed if p in comparer.problems], ran=run)
    for problem in agreed:
        for entry in comparer.entries.get(problem, []):
            result.functions[f"{problem}.{entry.key}"] = FunctionMatch(True, list(entry.names), [], 0)
    try:
        if run:
            with sandbox.Sandbox(layers, seconds, memory_mb) as box:
                workspace = build_workspace(submission, box.private)
                box.expose(workspace.root)
                from grader.harness.client import IsolatedPackage

                package = IsolatedPackage("assignment", workspace.root, call_timeout=call_seconds,
                                          memory_limit_mb=memory_mb, sandbox=sandbox.Spec.load(box.spec()),
                                          deadline=start + seconds)  # every wait, a call's or a fork's, ends there
                limited = _Deadline(package, seconds)
                try:
                    report = comparer.compare(limited, run, until_unmatched=True)
                finally:
                    package.close()
            result.timed_out = limited.expired
            result.review = report["review"]
            for problem in report["problems"]:
                _without_contradictions([f for f in problem["functions"] if f["comparable"]])
                for f in problem["functions"]:
                    if f["comparable"]:
                        name = f"{problem['problem']}.{f['function']}"
                        result.functions[name] = FunctionMatch(f["agree"] == f["of"], f["names"],
                                                               [m["id"] for m in f["matches"]], f["of"])
                        if f["matches"]:
                            result.descriptions[name] = {m["id"]: m["description"] for m in f["matches"]}
    except SubmissionError as exc:
        result.error = f"unreadable: {exc}"
    except Exception:  # noqa: BLE001 - a fingerprint's failure never stops a grading or a batch
        result.error = traceback.format_exc()
    result.seconds = time.monotonic() - start
    return result


class Fingerprinter:
    """What grading calls (grader/grading.py) to fingerprint one graded submission: `fingerprint` with the limits
    of the grading. With `up_front` (batch) every catalogued answer of `problems` is computed now, once, for
    the threads to share; otherwise (grade) on the first call that has something to run, for the problems it
    is asked about: a grading that fingerprints nothing never imports torch in the grader's process."""

    def __init__(self, problems: list[str], layers, limits, *, up_front: bool = False):
        self.problems = list(problems)
        self.layers, self.limits = layers, limits
        comparable = [p for p in problems if p in compare_inputs_problems()] if up_front else []
        self.shared = class_comparer(comparable) if comparable else None

    def descriptions(self) -> dict:
        return mistake_descriptions(self.shared) if self.shared else {}

    def __call__(self, submission: Path, problems: list[str], agreed: list[str], seconds: float) -> Matches:
        run = [p for p in problems if p in self.problems]
        try:
            comparer = self.shared
            if comparer is None:
                run = [p for p in run if p in compare_inputs_problems()]
                if not run:
                    return Matches()
                comparer = Comparer(run)
        except Exception:  # noqa: BLE001 - the grade stands without its fingerprints
            import traceback

            return Matches(error=traceback.format_exc())
        return fingerprint(comparer, submission, self.layers, problems=run, agreed=agreed,
                           call_seconds=self.limits.call_seconds, memory_mb=self.limits.worker_memory_mb,
                           seconds=seconds)


def mistake_descriptions(comparer: Comparer) -> dict:
    """"problem.function" -> {mistake id: description} for every comparable function of the comparer."""
    out = {}
    for problem in comparer.problems:
        for entry in comparer.entries[problem]:
            out[f"{problem}.{entry.key}"] = {m.id: m.description for m in comparer.mistakes(problem, entry)}
    return out


def compare_inputs_problems() -> list[str]:
    """The problems compare has inputs for (the others' functions all need a scenario)."""
    _prepare()
    from grader.staff import compare_inputs

    return list(compare_inputs.BUILDERS)
