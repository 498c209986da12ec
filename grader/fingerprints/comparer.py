"""The comparison engine: a submission's functions and the reference's run on the same inputs, drawn from the
suite's hypothesis strategies (grader/fingerprints/inputs.py) with a seed of their own per function, so that a
rerun draws the same ones; per function, each input's answers and verdict (within the tolerance the tests use),
and the catalogued mistakes (tests/mistakes/) whose answers equal the submission's on every input.

It needs the reference and the catalogue: in the student release `Comparer` cannot be built (grading then
fingerprints nothing, grader/grading.py), and the reference and the catalogue run in the grader's process,
never in a worker.
"""


import copy
import dataclasses
import hashlib
import math
import warnings

from grader.fingerprints import cache

EXAMPLES = 20  # the default number of inputs per function
CATALOGUE_MODULES = r"tests\.mistakes\."  # where the warnings of the catalogue's functions are raised
NOT_STARTED = ("not started: every function of its module only raises NotImplementedError (the stub), "
               "so nothing is compared")


def prepare() -> None:
    """The catalogue's wrong functions run in this process (their answers): what a library warns them about
    (`memory:allocates` creates tensors of torch's deprecated quantized dtypes) is not the operator's concern,
    and stays off their terminal."""
    warnings.filterwarnings("ignore", module=CATALOGUE_MODULES)


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
        prepare()
        from grader.fingerprints import inputs as compare_inputs
        from grader.harness.local import LocalPackage

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

    # the inputs and answers of a problem depend on the official tree alone: kept between runs (cache.py)
    def _tables(self) -> dict:
        """What is kept of each problem: these tables' rows keyed by (problem, ...)."""
        return {"inputs": self.inputs, "expected": self.expected, "mistakes": self._mistake_answers}

    def _state(self, problem: str) -> dict:
        return {name: {key: value for key, value in table.items() if key[0] == problem}
                for name, table in self._tables().items()}

    def _load(self, problem: str) -> bool:
        state, tables = cache.load(problem), self._tables()
        if not isinstance(state, dict) or state.keys() != tables.keys():
            return False
        for name, table in tables.items():
            table.update(state[name])
        return True

    def _store(self, problem: str) -> None:
        for entry in self.entries[problem]:
            for mistake in self.mistakes(problem, entry):
                self.mistake_answers(mistake, problem, entry)
        cache.store(problem, self._state(problem))

    def mistakes(self, problem: str, entry) -> list:
        from tests.mistakes import catalog, returning

        return [m for m in returning(catalog(problem)) if set(m.replaces) & set(entry.names)]

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


