"""Run each catalogued mistake against the problem's oracle tests and say whether it was caught.

    python -m tests.meta.mutation                 # every problem's catalog, a table
    python -m tests.meta.mutation --problem flops
    python -m tests.meta.mutation --json FILE     # the results as JSON
    python -m tests.meta.mutation --profile grade --grading-seed 7   # under a grading seed, as the grader runs
    python -m tests.meta.mutation --graded --profile grade --grading-seed 11   # graded as `grade` grades (below)
    python -m tests.meta.mutation --automatic --sample 300   # automatic mutants (tests/mistakes/automatic.py)
    python -m tests.meta.mutation --differential --every-test   # the differential tests' data, for their budgets
    python -m tests.meta.mutation --every-test --profile grade --costs   # each catalogue's COSTS, as observed
    python -m tests.meta.mutation --nonsense --json FILE   # the nonsense, scored (tests/meta/test_nonsense.py)

Each caught mistake also records `examples`: the catching test's first failing example, counted from 1 (its
explicit examples included; 0 for a test that is not generated). Over several grading seeds, that is the data
the grading budget of examples is calibrated from (grader/harness/plugin.py).

A mistake is caught when the problem's tests, without the differential ones (the student release's
tests must catch it on their own), fail with the mistake swapped into the reference. All runs share one
process (pytest.main in a loop), so torch is imported once; and since every run draws the same examples,
hypothesis draws them once (tests/meta/replay.py) and the oracles answer each question once
(tests/meta/answers.py), which changes no result (`--fresh`: every run anew, to check that).

`--graded` is the catalogue as tests/meta/catalogue.py shares it with the meta-tests: every test of the
problem runs to its end, the differential ones too (the mistake in the package under test, the reference they
compare with untouched), as `grade` runs them; the run is scored as `grade` scores it (grader/scoring.py, its
gates applied), each behaviour's points, what it earned and how many of its tests failed (`behaviours`); and a
mistake of functions compare can call is compared as grading fingerprints it (`named`: the catalogued mistakes
compare names). `caught` and `failed` stay those of the tests without the differential ones.

`--nonsense` runs tests/mistakes/nonsense.py's implementations instead, as the student release runs them (no
differential test) under the `nonsense` profile (the `mutation` profile's examples, a failure not shrunk: a
smaller failing example changes what a failure says, never whether the test failed), each scored as the
catalogue is (`behaviours`, and `score`: the problem's).
"""

import argparse
import contextlib
import inspect
import io
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import Phase, settings

from grader import profiles, scoring
from grader.registry import BY_ID, PROBLEMS
from grader.runner import RunResult, read_report
from tests.meta.answers import keep_oracle_answers
from tests.meta.replay import ReplayExamples
from tests.mistakes import automatic, behaviours_of, catalog, find_mistake, returning
from tests.mistakes.nonsense import nonsense

ROOT = Path(__file__).resolve().parents[2]
NONSENSE_PROFILE = "nonsense"  # the mutation profile's examples; a failing test is not shrunk
settings.register_profile(NONSENSE_PROFILE, settings.get_profile("mutation"),
                          phases=[Phase.explicit, Phase.reuse, Phase.generate])
assert NONSENSE_PROFILE not in profiles.GRADING_PROFILES


class NamingTestsFirst:
    """A pytest plugin: the tests whose source names a function the mistake replaces run first, the others
    after them, each group in file order. Whether a mistake is caught (some test fails) does not depend on
    the order; how long it takes to find out does, with -x: a mistake is mostly caught by a test of the
    function it replaces, and its problem's other tests, which pass, no longer run before it."""

    def __init__(self, mistake):
        self.names = tuple(mistake.replaces)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items):
        items.sort(key=lambda item: not any(name in _source(item) for name in self.names))


def _source(item) -> str:
    try:
        return inspect.getsource(item.obj)
    except (AttributeError, OSError, TypeError):
        return ""


# A test that computes this long (CPU seconds of this process: a loaded machine slows it, never stops it) is caught
# (the grader's timeouts stop it): an automatic mutant can make a loop endless. A test of the reference takes 2 s
# at most here, so 30 s is far beyond it.
TEST_SECONDS = 30


class TestTimedOut(BaseException):
    """Raised in a test that ran past TEST_SECONDS. Not an Exception: hypothesis lets it through (it would take
    an Exception, or pytest's Failed, for a failing example and run that example again to report it: an endless
    loop again), and pytest reports the test failed."""


class StopAtTimeout:
    """A pytest plugin: a test that runs past TEST_SECONDS fails, and the run stops there (the mistake is caught,
    as the grader's timeouts catch it; an endless loop in a helper would make every later test wait too)."""

    @pytest.hookimpl
    def pytest_sessionstart(self, session):
        self.session = session

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        def expire(signum, frame):
            raise TestTimedOut(f"{item.name} ran past {TEST_SECONDS} s of CPU time")

        previous = signal.signal(signal.SIGPROF, expire)
        signal.setitimer(signal.ITIMER_PROF, TEST_SECONDS)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
            signal.signal(signal.SIGPROF, previous)

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report):
        if report.failed and "TestTimedOut" in str(report.longrepr):
            self.session.shouldstop = "a test timed out"


def run_mistake(mistake, profile: str, grading_seed: int | None = None, naming_first: bool = False,
                every_test: bool = False, differential: bool = False, graded: bool = False, plugins=(),
                scored: bool = False) -> dict:
    """Run the problem's oracle tests (with `differential`, its differential tests instead) on the reference
    with `mistake` swapped in; stop at the first failure (with `naming_first`, the tests that name a function
    it replaces run first: NamingTestsFirst), or with `every_test` run them all and record where each failing
    one first failed (`failed`: test -> example). With `graded`, every test of the problem, scored as `grade`
    scores it (`behaviours`: the module docstring); with `scored`, the tests run (every one) scored alike, and
    the problem's `score`. `plugins`: pytest's, for this run (`shared_work`).
    `cpu_seconds`: what the run took of this process's CPU."""
    every_test = every_test or graded or scored
    selection = mistake.problem if graded else f"{mistake.problem} and {'' if differential else 'not '}differential"
    start = time.process_time()
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as report:
        args = [f"tests/test_{mistake.problem}.py", "--impl", "reference",
                "--mutant", f"{mistake.problem}:{mistake.id}", "-m", selection,
                *(["--all-failures"] if every_test else ["-x"]),
                "-q", "--tb=no", "--no-header",
                f"--hypothesis-profile={profile}", f"--report={report.name}", f"--rootdir={ROOT}"]
        if grading_seed is not None:
            args.append(f"--grading-seed={grading_seed}")
        with contextlib.redirect_stdout(io.StringIO()):
            code = pytest.main(args, plugins=[StopAtTimeout(), *[NamingTestsFirst(mistake)] * naming_first, *plugins])
        run = RunResult(exit_code=int(code))
        read_report(Path(report.name), run)
    records = list(run.records.values())
    failed = [r for r in records if r["outcome"] == "failed" and not (graded and r["differential"])]
    result = {"problem": mistake.problem, "id": mistake.id, "description": mistake.description,
              "caught": code == pytest.ExitCode.TESTS_FAILED and bool(failed), "exit_code": int(code),
              "caught_by": failed[0]["nodeid"].split("::")[-1] if failed else None,
              "examples": failed[0].get("first_failing_example", 0) if failed else None}
    if every_test:
        result["failed"] = {r["nodeid"].split("::")[-1]: r.get("first_failing_example", 0) for r in failed}
    if graded:
        result["differential_failed"] = {r["nodeid"].split("::")[-1]: r.get("first_failing_example", 0)
                                         for r in records if r["outcome"] == "failed" and r["differential"]}
    if graded or scored:
        result["behaviours"] = graded_behaviours(run, mistake.problem)
        result["score"] = sum(b["score"] for b in result["behaviours"].values())
        result["report_faults"] = run.report_faults
    result["cpu_seconds"] = round(time.process_time() - start, 2)
    return result


def shared_work() -> list:
    """What the runs of this process share (the module docstring): the pytest plugins that replay the examples
    drawn before, and the oracles' answers kept (tests/meta/answers.py)."""
    keep_oracle_answers()
    return [ReplayExamples()]


def graded_behaviours(run: RunResult, problem: str) -> dict[str, dict]:
    """Each behaviour of `problem` that ran, scored as `grade` scores the run (grader/scoring.py, its gates
    applied): its points, what it earned, and how many of its tests failed."""
    scores = scoring.score_run(run, [BY_ID[problem]])
    return {b.name: {"points": b.points, "score": b.score, "failed": sum(not t.passed for t in b.tests)}
            for p in scores for b in p.behaviours}


def compare_names(mistake, comparer) -> list[str] | None:
    """The catalogued mistakes that compare names for a submission that makes `mistake`, as grading fingerprints
    it (until_unmatched: a function stops once no mistake can match it); None for a mistake of functions compare
    cannot call with plain inputs (grader/fingerprints/inputs.py NOT_COMPARABLE)."""
    from grader.fingerprints.comparer import Compared
    from grader.harness.local import LocalPackage

    if not set(mistake.replaces) <= comparable_names(mistake.problem):
        return None
    student = LocalPackage("reference", {f"{mistake.problem}.{n}": v for n, v in mistake.replaces.items()})
    report = comparer.compare(student, [mistake.problem], set(mistake.replaces), until_unmatched=True)
    return sorted({m.id for f in report.problems[0].functions if isinstance(f, Compared) for m in f.matches})


def comparable_names(problem: str) -> set[str]:
    """The public names of `problem` that compare calls with inputs of its own."""
    from grader.fingerprints import inputs

    return {n for e in inputs.entries(problem) for n in e.names}


def comparer_of(problems: list[str]):
    """compare's Comparer of the problems it has inputs for among `problems`: their inputs and the reference's
    and the catalogue's answers, kept between runs (grader/fingerprints/cache.py), computed where none are."""
    from grader.fingerprints import Comparer, compare_inputs_problems

    return Comparer([p for p in compare_inputs_problems() if p in problems])


def costs_text(results: list[dict], width: int = 120) -> str:
    """Each problem's COSTS, in its catalogue's order: the behaviours each mistake failed a test of."""
    blocks = []
    for problem in dict.fromkeys(r["problem"] for r in results):
        observed = {r["id"]: behaviours_of(problem, list(r.get("failed", {}))) for r in results
                    if r["problem"] == problem}
        rows = []
        for mistake in (m for m in catalog(problem) if m.id in observed):
            head = f"    {json.dumps(mistake.id)}: ("
            names = [json.dumps(name) for name in sorted(observed[mistake.id])]
            line = head
            for k, name in enumerate(names):
                piece = name + ("," if len(names) == 1 else "" if k == len(names) - 1 else ", ")
                if len(line) + len(piece) + 2 > width and line.strip() != head.strip():
                    rows.append(line.rstrip())
                    line = " " * len(head)
                line += piece
            rows.append(line + "),")
        blocks.append(f"# {problem}\nCOSTS = {{\n" + "\n".join(rows) + "\n}")
    return "\n\n".join(blocks)


def _seed_option(options) -> list[str]:
    return [] if options.grading_seed is None else ["--grading-seed", str(options.grading_seed)]


def _in_parallel(options, problems: list[str]) -> list[dict]:
    """Run the catalog in `options.jobs` child processes (each imports torch once) and merge their results."""
    with tempfile.TemporaryDirectory() as tmp:
        children = []
        for k in range(options.jobs):
            out = Path(tmp) / f"{k}.json"
            command = [sys.executable, "-m", "tests.meta.mutation", "--jobs", "1", "--shard", f"{k}/{options.jobs}",
                       "--profile", options.profile, *_seed_option(options), "--json", str(out),
                       *_automatic_options(options), *["--every-test"] * options.every_test,
                       *(["--rerun", options.rerun] if options.rerun else []), *["--graded"] * options.graded,
                       *["--naming-first"] * options.naming_first, *["--differential"] * options.differential,
                       *["--fresh"] * options.fresh, *["--nonsense"] * options.nonsense,
                       *[f"--problem={p}" for p in problems]]
            children.append((subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL), out))
        results = []
        for child, out in children:
            child.wait()
            results += json.loads(out.read_text()) if out.exists() else []
        return results


def _automatic_options(options) -> list[str]:
    if not options.automatic:
        return []
    return ["--automatic", *(["--sample", str(options.sample)] if options.sample else []),
            "--sample-seed", str(options.sample_seed)]


def _mistakes(options, problems: list[str]) -> list:
    if options.nonsense:
        return [m for p in problems if (ROOT / BY_ID[p].test_file).exists() for m in nonsense(p)]
    if options.rerun:
        wanted = {(r["problem"], r["id"]) for r in json.loads(Path(options.rerun).read_text())}
        mutants = {(m.problem, m.id): m for p in {p for p, _ in wanted} for m in automatic.automatic(p)}
        return [mutants.get(key) or find_mistake(":".join(key)) for key in sorted(wanted) if key[0] in problems]
    if not options.automatic:
        return [m for p in problems for m in returning(catalog(p))]  # a loop: tests/meta/test_loops.py
    mutants = [m for p in problems for m in automatic.automatic(p)]
    return automatic.sample(mutants, options.sample, options.sample_seed) if options.sample else mutants


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problem", action="append", help="only these problems (repeatable)")
    parser.add_argument("--profile", default="mutation", help="hypothesis profile (default: mutation, 10 examples)")
    parser.add_argument("--grading-seed", type=int, default=None, metavar="N",
                        help="draw every generated test's inputs from N, as the grader does (default: the profile's)")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--jobs", type=int, default=2, help="processes to spread the mistakes over (default 2)")
    parser.add_argument("--naming-first", action="store_true",
                        help="run the tests that name a replaced function first: the same verdicts, sooner (the test "
                             "that caught a mistake and its example are then not those of the file's order, which "
                             "the grading budgets are calibrated from)")
    parser.add_argument("--automatic", action="store_true",
                        help="the automatic mutants of the reference (tests/mistakes/automatic.py) instead of the "
                             "catalogue: some change nothing a test can see, so not all are caught")
    parser.add_argument("--sample", type=int, default=0, metavar="N",
                        help="with --automatic: N of them, drawn the same way each time (default: all)")
    parser.add_argument("--sample-seed", type=int, default=0, metavar="S",
                        help="with --sample: which N (default 0, the sample the budgets were calibrated on)")
    parser.add_argument("--rerun", metavar="FILE",
                        help="the mistakes and mutants of an earlier --json file, whatever they were")
    parser.add_argument("--every-test", action="store_true",
                        help="run every test, not only up to the first that fails, and record where each failing "
                             "one first failed (with --profile calibrate, which does not shrink: budget data)")
    parser.add_argument("--differential", action="store_true",
                        help="the differential tests alone (the mistake is in the package under test, the reference "
                             "they compare with is not): budget data for them, not the catalogue's verdicts")
    parser.add_argument("--graded", action="store_true",
                        help="every test, the differential ones too, scored as `grade` scores it, and compared as "
                             "grading fingerprints it: the catalogue the meta-tests share (tests/meta/catalogue.py)")
    parser.add_argument("--nonsense", action="store_true",
                        help="tests/mistakes/nonsense.py's implementations instead of the catalogue, each scored as "
                             "the student release's tests score it (tests/meta/test_nonsense.py)")
    parser.add_argument("--fresh", action="store_true",
                        help="every run draws its examples and asks the oracles anew (by default hypothesis draws a "
                             "test's examples once and the oracles answer a question once: tests/meta/replay.py and "
                             "answers.py); the same results, slower: what checks that sharing them changes nothing")
    parser.add_argument("--costs", action="store_true",
                        help="with --every-test: print each problem's COSTS (tests/mistakes/__init__.py), the "
                             "behaviours each mistake failed a test of, to review and paste into its catalogue")
    parser.add_argument("--shard", default="0/1", help=argparse.SUPPRESS)  # K/N: this process runs every N-th
    options = parser.parse_args(argv)
    problems = options.problem or [p.id for p in PROBLEMS]
    if options.nonsense:
        options.profile, options.every_test = NONSENSE_PROFILE, True
    mistakes = _mistakes(options, problems)
    if options.jobs > 1:
        expected = mistakes
        if options.graded:  # compare's answers computed here once, where none are kept, not by each child
            comparer_of(problems)
        results = _in_parallel(options, problems)
    else:
        k, n = map(int, options.shard.split("/"))
        expected = mistakes[k::n]
        plugins = [] if options.fresh else shared_work()
        comparer = comparer_of(problems) if options.graded else None
        results = []
        for m in expected:
            results.append(run_mistake(m, options.profile, options.grading_seed, options.naming_first,
                                       options.every_test, options.differential, options.graded, plugins,
                                       scored=options.nonsense))
            if comparer is not None:
                results[-1]["named"] = compare_names(m, comparer)
            if options.json:  # as it goes: a run stopped half-way keeps what it found
                Path(options.json).write_text(json.dumps(results, indent=1))
    ran = {(r["problem"], r["id"]) for r in results}
    results += [{"problem": m.problem, "id": m.id, "description": m.description, "caught": False, "exit_code": -1,
                 "caught_by": None} for m in expected if (m.problem, m.id) not in ran]  # a child that crashed
    for r in results:
        verdict = (f"caught by {r['caught_by']} (example {r['examples']})" if r["caught"]
                   else f"NOT CAUGHT (pytest exit {r['exit_code']})")
        print(f"{r['problem']:>24}:{r['id']:<28} {verdict}")
    print(f"{sum(r['caught'] for r in results)}/{len(results)} mistakes caught")
    if options.costs:
        print(costs_text(results))
    if options.json:
        Path(options.json).write_text(json.dumps(results, indent=1))
    return 0 if options.automatic or options.nonsense or all(r["caught"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
