"""Grading one submission: its workspace in a sandbox, the official tests run on it (grader/runner.py), the
score (grader/scoring.py), the review evidence, the fingerprints of what it failed, and its results.json,
written whatever happens. `resource-grader grade` and `batch` (grader/batch.py, grader/cluster.py) call it."""

import importlib.util
import json
import os
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from grader import fingerprints, has_reference, messages, registry, scoring
from grader.analysis import Analysis
from grader.harness.sandbox import Layers, warm_view
from grader.matches import Matches
from grader.runner import Limits, RunResult, run_tests
from grader.scoring import ProblemScore, known_mistakes, results_json, score_run, table
from grader.seed import seed_of
from grader.submission import SubmissionError, in_sandbox

EXIT_STATUS = {"ok": 0, "unreadable": 2, "error": 3, "review": 4}  # a grading's status -> `grade`'s exit code
@dataclass
class Graded:
    """One submission's outcome. `status`: ok, review (scored, but the worker's guard saw it do what no solution
    needs, grader/harness/guard.py: for a person to look at, the evidence in its results.json), unreadable (the
    submission), error (the grader, or a run whose report cannot be trusted: for a person to look at, never a
    score)."""

    submission: Path
    scores: list[ProblemScore]
    text: str
    status: str
    seconds: float
    fingerprints: Matches | None = None  # the catalogued mistakes its functions match, where they ran
    untouched: frozenset[str] = frozenset()  # problems left as the stub (sources.not_started): not started
    digest: dict | None = None  # its similarity digest (grader/similarity.py), where its analysis finished


# kept from the time limit for what follows the tests, and then the fingerprints: a sandbox's teardown (which waits
# up to 10 s for the uid's processes to be gone) and writing the results, so that results.json is there in time;
# at most a quarter of a short limit (`reserved`)
TEARDOWN_SECONDS = 15.0


def reserved(limit: float) -> float:
    """What a time limit of `limit` seconds keeps for the teardown and the results."""
    return min(TEARDOWN_SECONDS, limit / 4)


def grade_submission(submission: Path, out: Path, limits: Limits, problems: list[str] | None, layers: Layers,
                     secret: bytes | None, fingerprinter=None, cpu_share=None,
                     operator: list[str] | None = None, on_problem=None, kept: dict | None = None) -> Graded:
    """Grade one submission in a sandbox and write its results.json, in every case, once every process of
    the submission is dead. The generated tests draw their inputs from the course `secret` and the
    submission's modules (None: local mode, the public inputs). With a `fingerprinter` (grader/fingerprints/'s
    Fingerprinter) the functions of each problem it failed then run again, in a sandbox of their own, on
    compare's inputs, and the catalogued mistakes their answers match are named beside the failures. What
    went wrong on the grader's side goes to the operator (stderr; with `operator`, a list, appended to it
    instead: batch's workers send it back to the coordinator), never into the student's results. The tests
    stop `reserved` seconds (15, or a quarter of a short limit) before the submission's time limit, counted from
    here, so that results.json is written within it; with `cpu_share`
    (grader/cpushare.py) it gets that share of the CPUs. `on_problem(line)` is given a line per problem as
    its tests finish (its score by the tests alone, and its seconds), while the run goes on. `kept`: the scores and
    fingerprints (their data, as an earlier grading.json holds them) of problems graded before and not now, which
    the results show beside those of `problems` (grader/batch.py regrades what a grader fix touched alone)."""
    warm_view(layers)  # the page cache holds the workers' view before any of them runs (not the submission's time)
    start = time.monotonic()
    notes: list[str] = []
    scores = []
    status = "ok"
    evidence: list[str] = []
    to_print = operator is None
    operator = [] if operator is None else operator
    untouched: frozenset[str] = frozenset()
    missing: frozenset[str] = frozenset()
    broken: dict[str, str] = {}  # problem -> its module does not import, in one line
    lead: list[str] = []
    found = None
    run = None
    analysis = None
    digest = None
    try:
        with in_sandbox(submission, layers, limits.submission_seconds, limits.worker_memory_mb,
                        cpu_share.memory_parent if cpu_share else None) as (box, workspace):
            markers = " or ".join(problems) if problems else None
            if not has_reference():  # the student release: the differential tests would only skip
                markers = f"({markers}) and not differential" if markers else "not differential"
            modules = workspace.modules()  # read while the workspace exists: the sandbox removes it
            analysis = Analysis(modules)  # in a box of its own, beside the tests (grader/analysis.py)
            analysed_by = start + limits.submission_seconds - reserved(limits.submission_seconds)
            started = analysis.start(analysed_by)
            untouched = frozenset(started["untouched"])
            broken = {name: line for name, line in started["broken"].items() if name in workspace.taken}
            seed = None if secret is None else seed_of(secret, started["behaviour"] or modules)
            run = run_tests(workspace.root, limits, markers=markers, sandbox=box.spec(), seed=seed,
                            seconds=limits.submission_seconds - reserved(limits.submission_seconds)
                            - (time.monotonic() - start),
                            cpu_share=cpu_share,
                            on_problem=on_problem and (lambda *finished: on_problem(progress_line(*finished))))
        operator += box.teardown_failures
        if run.report_faults:
            status = "error"
            notes.append(messages.SET_ASIDE)
            operator += run.report_faults + ["pytest's output:\n" + run.log[-3000:]]
        else:
            scores = score_run(run)
            regraded = scores
            if kept:
                scores = _beside(scores, scoring.scores_from(kept["scores"]))
            graded = {p.id for p in scores}
            broken = {p: line for p, line in (scoring.import_errors(scores) | broken).items() if p in graded}
            missing = frozenset(m for m in workspace.missing if m in graded)
            if not workspace.taken:
                seen = ", ".join(workspace.seen[:8]) + (", ..." if len(workspace.seen) > 8 else "")
                lead.append(messages.NOTHING_UPLOADED.format(
                    expected=", ".join(f"{p.id}.py" for p in registry.PROBLEMS),
                    found=f"It holds: {seen}." if seen else "It is empty (or holds no Python file)."))
            elif missing:
                notes.append(messages.NOT_IN_SUBMISSION.format(modules=", ".join(f"{m}.py" for m in sorted(missing))))
            operator += ["an error of the grading code, not the submission's: " + line
                         for line in scoring.grader_errors(scores)]
            if not has_reference():
                notes.append(messages.LOCAL_TESTS_ONLY)
            elif secret is None:
                notes.append(messages.LOCAL_MODE)
            copies = analysis.copies(analysed_by)  # copies of an oracle or of the reference, data carried in
            digest = copies["digest"]
            evidence = run.evidence + copies["evidence"]  # one line per distinct report (grader/runner.py)
            if evidence:
                status = "review"
                copied = [line for line in evidence if line.startswith("[copy] ")]
                unanalysed = [line for line in evidence if line.startswith("[analysis] ")]
                notes += [messages.REVIEW_COPY] * bool(copied) + [messages.REVIEW_UNANALYSED] * bool(unanalysed) + \
                    [messages.REVIEW] * (len(copied) + len(unanalysed) < len(evidence))
                operator += ["flagged for review: " + line for line in evidence]
            if run.timed_out:
                notes.append(messages.TIME_LIMIT_REACHED.format(seconds=limits.submission_seconds))
            elif fingerprinter is not None:
                found = _fingerprint(fingerprinter, submission, regraded, untouched | set(broken), limits, start)
                if kept and kept.get("fingerprints"):
                    now = {p.id for p in regraded}
                    found = found.with_problems_of(Matches.from_data(kept["fingerprints"]),
                                                   [p.id for p in scores if p.id not in now])
                operator += [f"fingerprints: {found.error}"] * bool(found.error)
                evidence += [f"[fingerprints] {line}" for line in found.review]
                operator += ["flagged for review while fingerprinted: " + line for line in found.review]
                if found.review and messages.REVIEW not in notes:
                    status = "review"
                    notes.append(messages.REVIEW)
    except SubmissionError as exc:
        notes.append(messages.UNREADABLE.format(why=exc))
        status = "unreadable"
    except Exception:  # the grader's own failure must still leave a results.json
        notes.append(messages.GRADER_FAILED)
        operator.append(traceback.format_exc())
        status = "error"
    finally:
        if analysis is not None:
            analysis.close()
    known = known_mistakes(found)
    sections = dict(lead=lead, missing=missing, broken=broken)
    text = table(scores, notes, untouched, known, **sections)
    summary = table(scores, notes, untouched, known, failures=False, **sections)  # the failures are under the tests
    seconds = time.monotonic() - start
    write_atomically(out, json.dumps(results_json(scores, seconds=seconds, output=summary, review=evidence, known=known,
                                                  fingerprinted=_ran(found), broken=broken, missing=missing,
                                                  per_problem=figures_per_problem(run)), indent=1))
    for line in operator if to_print else ():
        print(f"resource-grader [{submission}]: {printable(line)}", file=sys.stderr)
    return Graded(submission, scores, text, status, seconds, found, untouched, digest)


def _beside(graded: list[ProblemScore], kept: list[ProblemScore]) -> list[ProblemScore]:
    """The problems graded now and those kept, in the registry's order (those graded now where both are)."""
    by_id = {p.id: p for p in kept} | {p.id: p for p in graded}
    return [by_id[p.id] for p in registry.PROBLEMS if p.id in by_id]


def progress_line(problem: str, collected: list[dict], records: dict[str, dict]) -> str:
    """A problem whose tests have all finished, as `grade` shows it while the others run: its score by its
    tests alone (the final table may still set points aside: a module that does not import, a review) and
    the seconds its tests took."""
    scores = score_run(RunResult(collected=collected, records=records), [registry.BY_ID[problem]])
    seconds = sum_per_problem(records.values(), "duration").get(problem, 0.0)
    score = f"{scores[0].score:5.2f} / {scores[0].points:g} points" if scores else "no graded tests here"
    return f"{problem:<26} {score:<20} {seconds:6.1f} s"


def sum_per_problem(records, field: str) -> dict[str, float]:
    """Problem -> the sum of `field` over its tests' report records (a record without it counts 0)."""
    sums: dict[str, float] = {}
    for record in records:
        if record.get("problem"):
            sums[record["problem"]] = sums.get(record["problem"], 0.0) + float(record.get(field) or 0)
    return sums


def figures_per_problem(run: RunResult | None) -> dict[str, dict[str, float]]:
    """For course staff (results.json's extra_data): the seconds each problem's tests took, and the examples
    its generated tests ran."""
    records = run.records.values() if run else ()
    return {"seconds_per_problem": {p: round(v, 1) for p, v in sum_per_problem(records, "duration").items()},
            "examples_per_problem": {p: int(v) for p, v in sum_per_problem(records, "examples").items()}}


def printable(text: str) -> str:
    """The operator's line with control characters escaped (a submission's evidence text must not fake log lines
    or move the terminal's cursor); the newlines of a traceback or of pytest's output stay."""
    return "".join(c if c == "\n" or c.isprintable() else ascii(c)[1:-1] for c in text)


def _ran(found: dict | None) -> dict | None:
    """For course staff (results.json's extra_data): what the fingerprints ran, where they ran something."""
    if not found or not (found.ran or found.error):
        return None
    return {"problems": found.ran, "seconds": round(found.seconds, 1), "timed_out": found.timed_out,
            "error": bool(found.error)}


FINGERPRINT_MIN_SECONDS = 30.0  # what must be left of the time limit to fingerprint at all


def _fingerprint(fingerprinter, submission: Path, scores: list[ProblemScore], untouched: frozenset[str],
                 limits: Limits, start: float) -> dict:
    """The fingerprints of the problems the submission started: those it failed run again, within what is left
    of its time limit less what is `reserved` (at most limits.fingerprint_seconds; none where less than
    FINGERPRINT_MIN_SECONDS is left), every wait on their workers ending there; those it passed count as
    agreeing."""
    started = [p for p in scores if p.id not in untouched]
    failed = [p.id for p in started if not all(t.passed for t in p.tests)]
    passed = [p.id for p in started if p.id not in failed]
    seconds = min(limits.fingerprint_seconds,
                  limits.submission_seconds - (time.monotonic() - start) - reserved(limits.submission_seconds))
    if seconds < FINGERPRINT_MIN_SECONDS:  # the catalogue's answers alone take longer: the limit would be passed
        failed = []
    return fingerprinter(submission, failed, passed, seconds)


def write_atomically(path: Path, text: str) -> None:
    """Readers see the old file or the whole new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.partial")
    partial.write_text(text)
    os.replace(partial, path)


def fingerprinter_available() -> bool:
    """Whether this tree has what the fingerprints need: the reference and the catalogue of mistakes (the course's
    tree and the autograder zip; not the student release)."""
    return has_reference() and importlib.util.find_spec("tests.mistakes") is not None


def fingerprinter(problems: list[str] | None, layers: Layers, limits: Limits, *, up_front: bool = False):
    """grader/fingerprints/'s Fingerprinter for `problems` (None: all), or, where there is no reference or no
    catalogue of mistakes (the student release), why there is none."""
    if not fingerprinter_available():
        return None, "they need the reference and the catalogue of mistakes (the course's tree)"
    return fingerprints.Fingerprinter(problems or [p.id for p in registry.PROBLEMS], layers, limits,
                                      up_front=up_front), None


