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
import sys
import time
import uuid
from dataclasses import replace
from pathlib import Path

from grader import registry, similarity
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
    from tqdm import tqdm

    command_started = time.monotonic()
    submissions = submissions_in(folder)
    past = similarity.base_digests(similarity_base) if similarity_base else {}  # a bad one fails before grading
    out.mkdir(parents=True, exist_ok=True)
    if scheduler is None and "user" in settings.layers.active and "namespaces" not in settings.layers.active:
        import os

        for private in (folder, out):  # a grading sees every file that other users may read
            os.chmod(private, os.stat(private).st_mode & 0o700)
            print(f"resource-grader batch: {private} made private to the grader's user (mode 0700), "
                  "so that no submission reads another's files or results", file=sys.stderr)
    ids = job.ids
    chosen = [registry.BY_ID[i] for i in ids]
    official, hashes = identity.official_hash(), identity.problem_hashes()
    job = replace(job, batch=uuid.uuid4().hex[:12], official=official,
                  secret_check=identity.secret_check(settings.secret), cpu_shares=jobs if scheduler is None else None)
    options = job.options()

    outcomes: dict[str, Outcome] = {}
    records: dict[str, Record] = {}
    todo: list[tuple[Path, bytes, str]] = []
    partly: dict[str, Job] = {}  # submission -> its job, where a grader fix touched some problems alone
    regrades: list[classreport.Regrade] = []
    kept: list[str] = []
    for submission in submissions:
        where = out / results_name(submission)
        previous, refused = _previous(where)
        try:
            data = pack(submission)
        except SubmissionError as exc:  # a folder with a file too large to send: read nothing of it
            outcomes[submission.name] = outcome = Outcome.unreadable(submission.name, str(exc))
            write_atomically(where / "results.json", json.dumps(outcome.results(), indent=1))
            continue
        content = hashlib.sha256(data).hexdigest()
        why = refused or ("--regrade" if regrade and previous else _why_regrade(previous, content, official, options))
        if why is None and previous and (where / "results.json").exists():
            outcomes[submission.name], records[submission.name] = previous.outcome, previous
            kept.append(submission.name)
            continue
        touched = _touched(previous, hashes, ids) if previous and why == "the grader changed" else None
        if previous and touched:
            why = f"the grader changed for {', '.join(touched)} alone: graded again, the other problems' results kept"
            partly[submission.name] = _partly(job, submission.name, previous, touched)
        if why != "new":
            regrades.append(classreport.Regrade(submission.name, why, previous and round(previous.outcome.total, 2),
                                                previous and previous.outcome.status))
        todo.append((submission, data, content))

    run = classreport.Run(kept=kept)
    found = classreport.Fingerprints()
    if not job.fingerprints:
        found.skipped = "turned off (`--no-fingerprints`)"
    with engine.open_engine(scheduler, jobs, retries) as running:
        run.engine = running.where
        engine.check_workers(running, job)
        if todo and job.fingerprints and scheduler is None:
            print("resource-grader batch: the reference's and the catalogued mistakes' answers, for the "
                  "fingerprints", file=sys.stderr)
            shared_fingerprinter(ids, job.sandbox, job.limits)  # once, for the engine's workers to share
        tasks = [(partly.get(s.name) or job.of(s.name), data) for s, data, _ in todo]
        start = time.monotonic()
        with tqdm(total=len(todo), desc="grading", unit="submission", file=sys.stderr, disable=None) as bar:
            for index, future in engine.completed(running, tasks):
                submission, _, content = todo[index]
                worker, outcome = _answer(future, submission.name)
                _write(out / results_name(submission), outcome)
                outcomes[submission.name] = outcome
                records[submission.name] = Record(content, official, options, outcome, hashes, worker)
                bar.set_postfix_str(submission.name[:40])
                bar.update()
        run.seconds = time.monotonic() - start
        starts = engine.starts(running, job.batch)
        if job.fingerprints and todo:
            found.descriptions, found.skipped = engine.descriptions(running, job)
    for submission, _, _ in todo:
        record = records.get(submission.name)
        if record is None:
            continue
        records[submission.name] = record = replace(record, attempts=max(len(starts.get(submission.name, [])), 1))
        write_atomically(out / results_name(submission) / RECORD, json.dumps(record.to_data(), indent=1))
        run.graded.append(submission.name)
        if record.worker:  # not a grading lost with its workers
            run.workers[record.worker] = run.workers.get(record.worker, 0) + 1
        if record.attempts > 1:
            run.retries[submission.name] = record.attempts - 1
    run.regrades = [replace(r, after=round(outcomes[r.name].total, 2), status_after=outcomes[r.name].status)
                    for r in regrades]
    run.command_seconds = time.monotonic() - command_started
    for name, outcome in outcomes.items():
        if outcome.fingerprints is not None:
            found.per_submission[name] = outcome.fingerprints
            for function, described in outcome.fingerprints.descriptions.items():  # those matched: what a batch
                found.descriptions.setdefault(function, {}).update(described)  # that kept every grading describes
    similar = _similar(submissions, outcomes, [p.module for p in chosen], past)
    rows = [outcomes[s.name].row(ids, attempts=records[s.name].attempts if s.name in records else 1,
                                 similar_to="; ".join(similar.found.similar_to(s.name))) for s in submissions]
    with open(out / "grades.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow([*ROW_HEADER[:3], *ids, *ROW_HEADER[3:]])
        writer.writerows(rows)
    ordered = [outcomes[s.name] for s in submissions]
    report = classreport.write(out, ordered, chosen, found, run, similar)
    try:
        pages = webreport.write(out, ordered, chosen, found, similar, paths={s.name: s for s in submissions},
                                base=similarity_base)
    except OSError as exc:  # the grades and report.md stand; a batch run again keeps every grading and writes them
        print(f"resource-grader batch: the class report's web pages could not be written ({exc}); grades.csv and "
              "report.md are complete, and the same batch run again keeps every grading and writes the pages",
              file=sys.stderr)
        pages = "no web pages"
    kept_line = f" ({len(run.kept)} kept from an earlier batch)" if run.kept else ""
    print(f"{len(rows)} submissions graded{kept_line} on {run.engine}; {out / 'grades.csv'}; class report {report} "
          f"and {pages}")
    return 0


def _similar(submissions: list[Path], outcomes: dict[str, Outcome], modules: list[str],
             base: dict[str, dict]):
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
