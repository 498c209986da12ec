"""`resource-grader batch FOLDER`: every submission of a folder, graded as tasks of an engine
(grader/batch/engine.py: Dask, on this machine or a cluster; grader/batch/task.py the task).

OUT/<name>/results.json for each submission, OUT/grades.csv with one row each (a status column and, for a
grading that could not finish, the reason; never an aborted batch), the class report OUT/report.md
(grader/batch/classreport.py) and its web pages, OUT/report.html and OUT/report/ (grader/batch/webreport.py), with
the copies between students (grader/similarity.py: every pair compared on the digests the gradings return, with a
base of past submissions at `similarity_base`; OUT/similarity.csv, and grades.csv's similar_to column, never a
results.json), and beside each results.json a grading.json (grader/batch/records.py): what was graded and its
outcome, from which a later batch into the same OUT grades only what is new, changed (the submission, the grader
after a fix, the options) or did not finish, and keeps the rest, unless told to regrade everything.
"""

import csv
import hashlib
import json
import os
import sys
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from grader import analysis, registry, similarity
from grader.batch import classreport, engine, identity, webreport
from grader.batch.engine import ClusterError
from grader.batch.records import RECORD, Record, RecordError, read_record
from grader.batch.submissions import pack, submissions_in
from grader.grading import printable, write_atomically
from grader.job import Job, Settings, shared_fingerprinter
from grader.outcome import ROW_HEADER, Outcome
from grader.submission import SubmissionError, results_name


def _previous(where: Path) -> tuple[Record | None, str | None]:
    """The record of an earlier grading in `where`, or why there is none to use: None where there is no record; a
    record that cannot be used is said on stderr, and its submission graded again."""
    try:
        return read_record(where / RECORD), None
    except RecordError as exc:
        kind = "from an older grader" if exc.old else "corrupt"
        why = f"its {RECORD} is {kind} ({exc})"
        print(f"resource-grader batch: {where / RECORD} is {kind} ({exc}): its submission is graded again",
              file=sys.stderr)
        return None, why


def _why_regrade(previous: Record | None, content: str, official: str, options: dict) -> str | None:
    """Why a submission with this previous record must be graded (None: its results stand)."""
    if previous is None:
        return "new"
    if previous.outcome.status == "error":
        return "its last grading did not finish"
    if previous.content != content:
        return "the submission changed"
    if previous.options != options:
        return "the grading options changed"
    if previous.grader != official:
        return "the grader changed"
    return None


def _touched(previous: Record, hashes: dict[str, str], ids: list[str]) -> list[str] | None:
    """The problems of `ids` a grader change touched, where it touched their own files alone (identity.problem_hashes)
    and the earlier grading was scored without a flag: those alone need grading again. None: all of them."""
    before = previous.hashes
    if previous.outcome.status != "ok" or not before or before.get("") != hashes[""]:
        return None
    touched = [p for p in ids if before.get(p) != hashes[p]]
    return touched if 0 < len(touched) < len(ids) else None


def _partly(job: Job, name: str, previous: Record, touched: list[str]) -> Job:
    """The job of a submission whose earlier grading a grader fix touched for `touched` alone: those graded again,
    the other problems' results kept."""
    kept = previous.outcome.but(scores=[p for p in previous.outcome.scores if p.id not in touched])
    return replace(job.of(name, kept), problems=tuple(touched))


def batch(folder: Path, out: Path, job: Job, settings: Settings, *, jobs: int, scheduler: str | None = None,
          retries: int = 2, regrade: bool = False, similarity_base: Path | None = None) -> int:
    """Grade every submission in `folder` (each sub-folder or .zip) as `job` asks, on the engine (`scheduler`: a
    running Dask cluster; None: this machine, `jobs` at a time), each in a sandbox of its own on the worker that
    grades it; `settings`: the job as this machine resolved it. Submissions whose grading.json says they were
    graded with the same content, grader and options keep their results, unless `regrade`. Then every pair of
    submissions is compared for copies between students (and each with `similarity_base`'s submissions). Raises
    ClusterError when the cluster cannot grade (a worker refused), SubmissionError when `folder` or
    `similarity_base` cannot be read."""
    started = time.monotonic()
    submissions = submissions_in(folder)
    past = similarity.base_digests(similarity_base, analysis.digests) if similarity_base else {}  # a bad one fails
    # before grading; each read in its analysis's box (grader/analysis.py)
    out.mkdir(parents=True, exist_ok=True)
    if scheduler is None and "user" in settings.layers.active and "namespaces" not in settings.layers.active:
        for private in (folder, out):  # a grading sees every file that other users may read
            os.chmod(private, os.stat(private).st_mode & 0o700)
            print(f"resource-grader batch: {private} made private to the grader's user (mode 0700), "
                  "so that no submission reads another's files or results", file=sys.stderr)
    job = replace(job, batch=uuid.uuid4().hex[:12], official=identity.official_hash(),
                  secret_check=identity.secret_check(settings.secret), cpu_shares=jobs if scheduler is None else None)
    run = _Batch(out, job, identity.problem_hashes())
    for submission in submissions:
        run.plan(submission, regrade)
    with engine.open_engine(scheduler, jobs, retries) as running:
        run.grade(running)
    run.report.command_seconds = time.monotonic() - started
    rows = run.write_reports(submissions, past, similarity_base)
    kept = f" ({len(run.report.kept)} kept from an earlier batch)" if run.report.kept else ""
    print(f"{rows} submissions graded{kept} on {run.report.engine}; {out / 'grades.csv'}; class report "
          f"{out / 'report.md'} and {run.pages}")
    return 0


@dataclass
class _Batch:
    """One batch into `out`: what each submission needs (`plan`), its gradings on an engine (`grade`), the files
    written from them (`write_reports`)."""

    out: Path
    job: Job
    hashes: dict[str, str]  # identity.problem_hashes, for the records
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    records: dict[str, Record] = field(default_factory=dict)
    todo: list[tuple[Path, Job, bytes, str]] = field(default_factory=list)  # submission, its job, data, content
    regrades: list[classreport.Regrade] = field(default_factory=list)
    report: classreport.Run = field(default_factory=classreport.Run)
    found: classreport.Fingerprints = field(default_factory=classreport.Fingerprints)
    pages: Path | str = "no web pages"

    def plan(self, submission: Path, regrade: bool) -> None:
        """Keep `submission`'s earlier results where they stand, else put it in `todo` (with why, where it was
        graded before); one that cannot be packed is unreadable at once."""
        where = self.out / results_name(submission)
        previous, refused = _previous(where)
        try:
            data = pack(submission)
        except SubmissionError as exc:  # a folder with a file too large to send: read nothing of it
            self.outcomes[submission.name] = outcome = Outcome.unreadable(submission.name, str(exc))
            write_atomically(where / "results.json", json.dumps(outcome.results(), indent=1))
            return
        content = hashlib.sha256(data).hexdigest()
        why = refused or ("--regrade" if regrade and previous else
                          _why_regrade(previous, content, self.job.official or "", self.job.options()))
        if previous is not None and why is None:
            if (where / "results.json").exists():
                self.outcomes[submission.name], self.records[submission.name] = previous.outcome, previous
                self.report.kept.append(submission.name)
                return
            why = "its results.json is missing"
        job = self.job.of(submission.name)
        touched = _touched(previous, self.hashes, self.job.ids) if previous and why == "the grader changed" else None
        if previous and touched:
            why = f"the grader changed for {', '.join(touched)} alone: graded again, the other problems' results kept"
            job = _partly(self.job, submission.name, previous, touched)
        if why != "new":
            self.regrades.append(classreport.Regrade(
                submission.name, why or "", round(previous.outcome.total, 2) if previous else None,
                previous.outcome.status if previous else None))
        self.todo.append((submission, job, data, content))

    def grade(self, running: engine.Engine) -> None:
        """Every submission of `todo` graded on `running`: its results.json written as it ends, its record once
        the engine says how many times it was given a worker."""
        from tqdm import tqdm

        self.report.engine = running.where
        if not self.job.fingerprints:
            self.found.skipped = "turned off (`--no-fingerprints`)"
        engine.check_workers(running, self.job)
        if self.todo and self.job.fingerprints and running.address is None:
            print("resource-grader batch: the reference's and the catalogued mistakes' answers, for the "
                  "fingerprints", file=sys.stderr)
            shared_fingerprinter(self.job.ids, self.job.sandbox, self.job.limits)  # once, for the engine's workers
        start = time.monotonic()
        with tqdm(total=len(self.todo), desc="grading", unit="submission", file=sys.stderr, disable=None) as bar:
            for index, future in engine.completed(running, [(job, data) for _, job, data, _ in self.todo]):
                submission, _, _, content = self.todo[index]
                worker, outcome = _answer(future, submission.name)
                _write(self.out / results_name(submission), outcome)
                self.outcomes[submission.name] = outcome
                self.records[submission.name] = Record(content, self.job.official or "", self.job.options(), outcome,
                                                       self.hashes, worker)
                bar.set_postfix_str(submission.name[:40])
                bar.update()
        self.report.seconds = time.monotonic() - start
        starts = engine.starts(running, self.job.batch)
        if self.job.fingerprints and self.todo:
            self.found.descriptions, self.found.skipped = engine.descriptions(running, self.job)
        for submission, _, _, _ in self.todo:
            self._keep(submission, max(len(starts.get(submission.name, [])), 1))

    def _keep(self, submission: Path, attempts: int) -> None:
        """The record of a grading done now, with the `attempts` it took, written to its grading.json."""
        record = replace(self.records[submission.name], attempts=attempts)
        self.records[submission.name] = record
        write_atomically(self.out / results_name(submission) / RECORD, json.dumps(record.to_data(), indent=1))
        self.report.graded.append(submission.name)
        if record.worker:  # not a grading lost with its workers
            self.report.workers[record.worker] = self.report.workers.get(record.worker, 0) + 1
        if record.attempts > 1:
            self.report.retries[submission.name] = record.attempts - 1

    def write_reports(self, submissions: list[Path], past: dict[str, dict[str, Any]], base: Path | None) -> int:
        """grades.csv, report.md and the web pages, with the copies between students; the rows written."""
        self.report.regrades = [replace(r, after=round(self.outcomes[r.name].total, 2),
                                        status_after=self.outcomes[r.name].status) for r in self.regrades]
        for name, outcome in self.outcomes.items():
            if outcome.fingerprints is not None:
                self.found.per_submission[name] = outcome.fingerprints
                for function, described in outcome.fingerprints.descriptions.items():  # those matched: what a
                    self.found.descriptions.setdefault(function, {}).update(described)  # batch that kept all says
        chosen = [registry.BY_ID[i] for i in self.job.ids]
        similar = _similar(submissions, self.outcomes, [p.module for p in chosen], past)
        found = similar.found
        rows = [self.outcomes[s.name].row(self.job.ids, attempts=self.records[s.name].attempts if s.name in
                                          self.records else 1,
                                          similar_to="; ".join(found.similar_to(s.name)) if found else "")
                for s in submissions]
        with open(self.out / "grades.csv", "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow([*ROW_HEADER[:3], *self.job.ids, *ROW_HEADER[3:]])
            writer.writerows(rows)
        ordered = [self.outcomes[s.name] for s in submissions]
        classreport.write(self.out, ordered, chosen, self.found, self.report, similar)
        try:
            self.pages = webreport.write(self.out, ordered, chosen, self.found, similar,
                                         paths={s.name: s for s in submissions}, base=base)
        except OSError as exc:  # the grades and report.md stand; a batch run again keeps every grading, writes them
            print(f"resource-grader batch: the class report's web pages could not be written ({exc}); grades.csv "
                  "and report.md are complete, and the same batch run again keeps every grading and writes the "
                  "pages", file=sys.stderr)
        return len(rows)


def _similar(submissions: list[Path], outcomes: dict[str, Outcome], modules: list[str],
             base: dict[str, dict[str, Any]]) -> classreport.Similar:
    """The copies between the class's submissions on `modules`, from the digests their gradings returned (kept in
    their grading.json), and with the `base`'s: a classreport.Similar."""
    digests, missing = {}, {}
    for submission in submissions:
        outcome = outcomes[submission.name]
        if outcome.digest is None:
            missing[submission.name] = ("unreadable" if outcome.status == "unreadable" else
                                        "its grading did not finish" if outcome.status == "error" else
                                        "its similarity digest could not be computed")
            continue
        digests[submission.name] = {m: d for m, d in outcome.digest.items() if m in modules}
    start = time.monotonic()
    found = similarity.compare_class(digests, {n: {m: d for m, d in b.items() if m in modules}
                                               for n, b in base.items()})
    return classreport.Similar(found, None, missing, time.monotonic() - start, similarity.thresholds())


def _answer(future, name: str) -> tuple[str, Outcome]:
    """The worker and the outcome of a task (grader/batch/task.py `grade_task`'s answer), or, when the task did not
    finish (its worker died too often: Dask's KilledWorker; any other failure of the engine), an error outcome with the
    reason. Raises ClusterError where the worker refused the task."""
    try:
        answer = json.loads(future.result())
    except Exception as exc:  # noqa: BLE001 - one submission's failure never stops the batch
        kind = type(exc).__name__
        if kind == "KilledWorker":
            last = getattr(getattr(exc, "last_worker", None), "address", "?")
            reason = (f"its worker died each of the {getattr(exc, 'allowed_failures', 0) + 1} times it was given "
                      f"one (KilledWorker; the last: {last})")
        else:
            reason = f"the grading task failed ({kind}: {exc})"
        return "", Outcome.failed(name, reason)
    if "refused" in answer:
        raise ClusterError(answer["refused"])
    return answer["worker"], Outcome.from_data(answer["outcome"])


def _write(where: Path, outcome: Outcome) -> None:
    """Write one grading's results.json. What went wrong or was flagged goes to stderr in one line (above the
    progress bar), every line of it to the grading's record."""
    from tqdm import tqdm

    lines = outcome.operator
    if lines:
        more = f" (and {len(lines) - 1} more lines in {where / RECORD})" if len(lines) > 1 else ""
        first = printable(lines[0]).splitlines()[0] if printable(lines[0]) else ""
        tqdm.write(f"resource-grader [{outcome.name}]: {first}{more}", file=sys.stderr)
    write_atomically(where / "results.json", json.dumps(outcome.results(), indent=1))
