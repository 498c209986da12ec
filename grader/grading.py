"""Grading one submission: its workspace in a sandbox, the official tests run on it (grader/runner.py), the
score (grader/scoring.py), the review evidence, the fingerprints of what it failed, and its results.json,
written whatever happens; all of it one Outcome (grader/outcome.py). `resource-grader grade` and `batch`
(grader/batch/task.py) call it."""

import json
import os
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from grader import has_reference, messages, registry, scoring
from grader.analysis import Analysis
from grader.harness.record import CollectedTest, ReportRecord
from grader.harness.sandbox import warm_view
from grader.job import Settings
from grader.matches import Matches
from grader.outcome import Figures, Outcome
from grader.runner import Limits, RunResult, run_tests
from grader.scoring import ProblemScore, score_run
from grader.seed import seed_of
from grader.submission import SubmissionError, Workspace, in_sandbox

EXIT_STATUS = {"ok": 0, "unreadable": 2, "error": 3, "review": 4}  # a grading's status -> `grade`'s exit code

# kept from the time limit for what follows the tests, and then the fingerprints: a sandbox's teardown (which waits
# up to 10 s for the uid's processes to be gone) and writing the results, so that results.json is there in time;
# at most a quarter of a short limit (`reserved`)
TEARDOWN_SECONDS = 15.0


def reserved(limit: float) -> float:
    """What a time limit of `limit` seconds keeps for the teardown and the results."""
    return min(TEARDOWN_SECONDS, limit / 4)


@dataclass
class _Draft:
    """What a grading has found so far: its Outcome once it ends, however it ends."""

    name: str
    status: str = "ok"
    scores: list[ProblemScore] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    lead: list[str] = field(default_factory=list)
    untouched: frozenset[str] = frozenset()
    missing: frozenset[str] = frozenset()
    broken: dict[str, str] = field(default_factory=dict)  # problem -> its module does not import, in one line
    evidence: list[str] = field(default_factory=list)
    fingerprints: Matches | None = None
    operator: list[str] = field(default_factory=list)
    run: RunResult | None = None
    digest: dict | None = None  # its similarity digest (grader/similarity.py), where its analysis finished

    def outcome(self, seconds: float) -> Outcome:
        return Outcome(self.name, self.status, seconds, self.scores, self.notes, self.lead, self.untouched,
                       self.missing, self.broken, self.evidence, self.fingerprints, figures_per_problem(self.run),
                       operator=self.operator, digest=self.digest)


def grade_submission(submission: Path, out: Path, settings: Settings, *, cpu_share=None, on_problem=None,
                     kept: Outcome | None = None) -> Outcome:
    """Grade one submission in a sandbox of `settings.layers` and write its results.json, in every case, once every
    process of the submission is dead; return its Outcome. The generated tests draw their inputs from the course
    secret (`settings.secret`) and the submission's modules (None: local mode, the public inputs). With a
    fingerprinter (grader/fingerprints/'s Fingerprinter) the functions of each problem it failed then run again, in
    a sandbox of their own, on compare's inputs, and the catalogued mistakes their answers match are named beside
    the failures. What went wrong on the grader's side is in the outcome's `operator` lines, never in the student's
    results. The tests stop `reserved` seconds (15, or a quarter of a short limit) before the submission's time
    limit, counted from here, so that results.json is written within it; with `cpu_share` (grader/batch/cpushare.py) it
    gets that share of the CPUs. `on_problem(line)` is given a line per problem as its tests finish (its score by
    the tests alone, and its seconds), while the run goes on. `kept`: an earlier grading of the submission whose
    problems not graded now the results show beside those of `settings.problems` (grader/batch/run.py regrades what a
    grader fix touched alone)."""
    limits, secret, fingerprinter = settings.limits, settings.secret, settings.fingerprinter
    warm_view(settings.layers)  # the page cache holds the workers' view before any runs (not the student's time)
    start = time.monotonic()
    draft = _Draft(submission.name or str(submission))
    analysis = None
    try:
        with in_sandbox(submission, settings.layers, limits.submission_seconds, limits.worker_memory_mb,
                        cpu_share.memory_parent if cpu_share else None) as (box, workspace):
            modules = workspace.modules()  # read while the workspace exists: the sandbox removes it
            analysis = Analysis(modules)  # in a box of its own, beside the tests (grader/analysis.py)
            analysed_by = start + limits.submission_seconds - reserved(limits.submission_seconds)
            started = analysis.start(analysed_by)
            draft.untouched = frozenset(started["untouched"])
            draft.broken = {name: line for name, line in started["broken"].items() if name in workspace.taken}
            seed = None if secret is None else seed_of(secret, started["behaviour"] or modules)
            draft.run = run = run_tests(
                workspace.root, limits, markers=_markers(settings.problems), sandbox=box.spec(), seed=seed,
                seconds=limits.submission_seconds - reserved(limits.submission_seconds) - (time.monotonic() - start),
                cpu_share=cpu_share, on_problem=on_problem and (lambda *done: on_problem(progress_line(*done))))
        draft.operator += box.teardown_failures
        if run.report_faults:
            draft.status = "error"
            draft.notes.append(messages.SET_ASIDE)
            draft.operator += run.report_faults + ["pytest's output:\n" + run.log[-3000:]]
        else:
            regraded = _score(draft, run, workspace, kept, local=secret is None)
            copies = analysis.copies(analysed_by)  # copies of an oracle or of the reference, data carried in
            draft.digest = copies["digest"]
            _flag(draft, run.evidence + copies["evidence"])
            if run.timed_out:
                draft.notes.append(messages.TIME_LIMIT_REACHED.format(seconds=limits.submission_seconds))
            elif fingerprinter is not None:
                _add_fingerprints(draft, fingerprinter, submission, regraded, limits, start, kept)
    except SubmissionError as exc:
        draft.notes.append(messages.UNREADABLE.format(why=exc))
        draft.status = "unreadable"
    except Exception:  # the grader's own failure must still leave a results.json
        draft.notes.append(messages.GRADER_FAILED)
        draft.operator.append(traceback.format_exc())
        draft.status = "error"
    finally:
        if analysis is not None:
            analysis.close()
    outcome = draft.outcome(time.monotonic() - start)
    write_atomically(out, json.dumps(outcome.results(), indent=1))
    return outcome


def _markers(problems: list[str] | None) -> str | None:
    """pytest's -m for `problems` (None: all); the student release runs no differential test (they would skip)."""
    markers = " or ".join(problems) if problems else None
    if not has_reference():
        markers = f"({markers}) and not differential" if markers else "not differential"
    return markers


def _score(draft: _Draft, run: RunResult, workspace: Workspace, kept: Outcome | None, *,
           local: bool) -> list[ProblemScore]:
    """The scores of a run whose report holds, beside those `kept` of problems not graded now, and what the
    student reads first and last about the upload and the mode; the scores of this run alone returned."""
    regraded = score_run(run)
    draft.scores = _beside(regraded, kept.scores) if kept else regraded
    graded = {p.id for p in draft.scores}
    draft.broken = {p: line for p, line in (scoring.import_errors(draft.scores) | draft.broken).items()
                    if p in graded}
    draft.missing = frozenset(m for m in workspace.missing if m in graded)
    if not workspace.taken:
        seen = ", ".join(workspace.seen[:8]) + (", ..." if len(workspace.seen) > 8 else "")
        draft.lead.append(messages.NOTHING_UPLOADED.format(
            expected=", ".join(f"{p.id}.py" for p in registry.PROBLEMS),
            found=f"It holds: {seen}." if seen else "It is empty (or holds no Python file)."))
    elif draft.missing:
        draft.notes.append(messages.NOT_IN_SUBMISSION.format(
            modules=", ".join(f"{m}.py" for m in sorted(draft.missing))))
    draft.operator += ["an error of the grading code, not the submission's: " + line
                       for line in scoring.grader_errors(draft.scores)]
    if not has_reference():
        draft.notes.append(messages.LOCAL_TESTS_ONLY)
    elif local:
        draft.notes.append(messages.LOCAL_MODE)
    return regraded


def _flag(draft: _Draft, evidence: list[str]) -> None:
    """`evidence` (one line per distinct report) sends the grading to a person: status review, and the note that
    says why (a copy, or something no solution needs to do)."""
    draft.evidence = evidence
    if evidence:
        draft.status = "review"
        copied = [line for line in evidence if line.startswith("[copy] ")]
        unanalysed = [line for line in evidence if line.startswith("[analysis] ")]
        draft.notes += [messages.REVIEW_COPY] * bool(copied) + [messages.REVIEW_UNANALYSED] * bool(unanalysed) + \
            [messages.REVIEW] * (len(copied) + len(unanalysed) < len(evidence))
        draft.operator += ["flagged for review: " + line for line in evidence]


def _add_fingerprints(draft: _Draft, fingerprinter, submission: Path, regraded: list[ProblemScore], limits: Limits,
                      start: float, kept: Outcome | None) -> None:
    """The fingerprints of the problems graded now, beside those `kept`; what they saw, as evidence."""
    found = _fingerprint(fingerprinter, submission, regraded, draft.untouched | set(draft.broken), limits, start,
                         draft.run.ran_out if draft.run else None)
    if kept and kept.fingerprints:
        now = {p.id for p in regraded}
        found = found.with_problems_of(kept.fingerprints, [p.id for p in draft.scores if p.id not in now])
    draft.fingerprints = found
    draft.operator += [f"fingerprints: {found.error}"] * bool(found.error)
    draft.evidence += [f"[fingerprints] {line}" for line in found.review]
    draft.operator += ["flagged for review while fingerprinted: " + line for line in found.review]
    if found.review and messages.REVIEW not in draft.notes:
        draft.status = "review"
        draft.notes.append(messages.REVIEW)


def _beside(graded: list[ProblemScore], kept: list[ProblemScore]) -> list[ProblemScore]:
    """The problems graded now and those kept, in the registry's order (those graded now where both are)."""
    by_id = {p.id: p for p in kept} | {p.id: p for p in graded}
    return [by_id[p.id] for p in registry.PROBLEMS if p.id in by_id]


def progress_line(problem: str, collected: list[CollectedTest], records: dict[str, ReportRecord]) -> str:
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


def figures_per_problem(run: RunResult | None) -> Figures | None:
    """For course staff (results.json's extra_data): the seconds each problem's tests took, the examples its
    generated tests ran, and the functions that ran out of time (None: no run)."""
    if run is None:
        return None
    records = run.records.values()
    return Figures({p: round(v, 1) for p, v in sum_per_problem(records, "duration").items()},
                   {p: int(v) for p, v in sum_per_problem(records, "examples").items()},
                   sorted(run.ran_out))  # not called again (grader/harness/client.py)


def printable(text: str) -> str:
    """The operator's line with control characters escaped (a submission's evidence text must not fake log lines
    or move the terminal's cursor); the newlines of a traceback or of pytest's output stay."""
    return "".join(c if c == "\n" or c.isprintable() else ascii(c)[1:-1] for c in text)


FINGERPRINT_MIN_SECONDS = 30.0  # what must be left of the time limit to fingerprint at all


def _fingerprint(fingerprinter, submission: Path, scores: list[ProblemScore], untouched: frozenset[str],
                 limits: Limits, start: float, ran_out: dict[str, str] | None = None) -> Matches:
    """The fingerprints of the problems the submission started: those it failed run again, within what is left
    of its time limit less what is `reserved` (at most limits.fingerprint_seconds; none where less than
    FINGERPRINT_MIN_SECONDS is left), every wait on their workers ending there, and what ran out of time in the
    tests (`ran_out`) not called again; those it passed count as agreeing."""
    started = [p for p in scores if p.id not in untouched]
    failed = [p.id for p in started if not all(t.passed for t in p.tests)]
    passed = [p.id for p in started if p.id not in failed]
    seconds = min(limits.fingerprint_seconds,
                  limits.submission_seconds - (time.monotonic() - start) - reserved(limits.submission_seconds))
    if seconds < FINGERPRINT_MIN_SECONDS:  # the catalogue's answers alone take longer: the limit would be passed
        failed = []
    return fingerprinter(submission, failed, passed, seconds, ran_out=ran_out or {})


def write_atomically(path: Path, text: str) -> None:
    """Readers see the old file or the whole new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.partial")
    partial.write_text(text)
    os.replace(partial, path)
