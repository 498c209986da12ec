"""`resource-grader batch FOLDER`: every submission of a folder, graded as Dask tasks (grader/cluster.py).

OUT/<name>/results.json for each submission, OUT/grades.csv with one row each (a status column and, for a
grading that could not finish, the reason; never an aborted batch), the class report OUT/report.md
(grader/classreport.py) with the copies between students (grader/similarity.py: every pair compared on the
digests the gradings return, with a base of past submissions at `similarity_base`; OUT/similarity.csv, and
grades.csv's similar_to column, never a results.json), and beside each results.json a grading.json: what was
graded (the submission's content hash, the grader's official hash, the options), its outcome and its similarity
digest, from which a later batch into the same OUT grades only what is new, changed (the submission, the grader
after a fix, the options) or did not finish, and keeps the rest, unless told to regrade everything.
"""

import csv
import hashlib
import json
import sys
import time
import uuid
from dataclasses import asdict
from pathlib import Path

from grader import analysis, cluster, registry, similarity
from grader.grading import Graded, printable, write_atomically
from grader.harness.sandbox import Layers
from grader.matches import Matches
from grader.messages import GRADER_FAILED, UNREADABLE
from grader.runner import Limits
from grader.scoring import results_json, scores_from, table
from grader.submission import SubmissionError

RECORD = "grading.json"


def submissions_in(folder: Path) -> list[Path]:
    if not folder.is_dir():
        raise SubmissionError(f"{folder} is not a folder of submissions")
    found = sorted(p for p in folder.iterdir() if p.is_dir() or p.suffix == ".zip")
    if not found:
        raise SubmissionError(f"{folder} holds no submissions (sub-folders or .zip files)")
    return found


def _record(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _why_regrade(previous: dict | None, content: str, official: str, options: dict) -> str | None:
    """Why a submission with this previous record must be graded (None: its results stand)."""
    if previous is None:
        return "new"
    if previous.get("status") == "error":
        return "its last grading did not finish"
    if previous.get("content") != content:
        return "the submission changed"
    if previous.get("options") != options:
        return "the grading options changed"
    if previous.get("grader") != official:
        return "the grader changed"
    return None


def _touched(previous: dict, hashes: dict[str, str], ids: list[str]) -> list[str] | None:
    """The problems of `ids` a grader change touched, where it touched their own files alone (cluster.problem_hashes)
    and the earlier grading was scored without a flag: those alone need grading again. None: all of them."""
    before = previous.get("hashes")
    if previous.get("status") != "ok" or not before or before.get("") != hashes[""]:
        return None
    touched = [p for p in ids if before.get(p) != hashes[p]]
    return touched if 0 < len(touched) < len(ids) else None


def _partly(previous: dict, touched: list[str]) -> dict:
    """What a job grading `touched` alone carries of the earlier grading: the other problems' results."""
    return {"problems": touched, "kept": {"scores": [p for p in previous["scores"] if p["id"] not in touched],
                                          "fingerprints": previous.get("fingerprints")}}


def batch(folder: Path, out: Path, limits: Limits, problems: list[str] | None, jobs: int, layers: Layers,
          secret: bytes, fingerprints: bool = True, *, mode: str = "auto", scheduler: str | None = None,
          secret_file: Path | None = None, retries: int = 2, regrade: bool = False,
          insecure_cluster: bool = False, similarity_base: Path | None = None) -> int:
    """Grade every submission in `folder` (each sub-folder or .zip) on the engine (`scheduler`: a running Dask
    cluster; None: this machine, `jobs` at a time), each in a sandbox of its own on the worker that grades it
    (`mode`, as `--sandbox`); with `fingerprints` the catalogued mistakes a failed problem's answers match.
    Submissions whose grading.json says they were graded with the same content, grader and options keep their
    results, unless `regrade`. Then every pair of submissions is compared for copies between students (and each
    with `similarity_base`'s submissions). Raises cluster.ClusterError when the cluster cannot grade (a worker
    refused), SubmissionError when `folder` or `similarity_base` cannot be read."""
    from tqdm import tqdm

    from grader import classreport

    command_started = time.monotonic()
    submissions = submissions_in(folder)
    past = similarity.base_digests(similarity_base, analysis.digests) if similarity_base else {}  # a bad one fails
    # before grading; each read in its analysis's box (grader/analysis.py)
    out.mkdir(parents=True, exist_ok=True)
    if scheduler is None and "user" in layers.active and "namespaces" not in layers.active:
        import os

        for private in (folder, out):  # a grading sees every file that other users may read
            os.chmod(private, os.stat(private).st_mode & 0o700)
            print(f"resource-grader batch: {private} made private to the grader's user (mode 0700), "
                  "so that no submission reads another's files or results", file=sys.stderr)
    chosen = [p for p in registry.PROBLEMS if not problems or p.id in problems]
    ids = [p.id for p in chosen]
    official, hashes = cluster.official_hash(), cluster.problem_hashes()
    check = cluster.secret_check(secret)
    options = {"problems": sorted(problems) if problems else None, "limits": asdict(limits),
               "fingerprints": fingerprints, "sandbox": mode, "secret": check}
    batch_id = uuid.uuid4().hex[:12]
    base = {"problems": problems, "limits": asdict(limits), "sandbox": mode, "fingerprints": fingerprints,
            "official": official, "secret_check": check, "batch": batch_id, "plain_tcp": insecure_cluster,
            "secret_file": str(secret_file.absolute()) if secret_file else None,
            "cpu_shares": jobs if scheduler is None else None}

    graded_all: dict[str, Graded] = {}
    records: dict[str, dict] = {}
    todo: list[tuple[Path, bytes, str]] = []
    partly: dict[str, dict] = {}  # submission -> what its job carries where a grader fix touched some problems alone
    regrades: list[dict] = []
    kept: list[str] = []
    for submission in submissions:
        where = out / submission.stem
        previous = _record(where / RECORD)
        try:
            data = cluster.pack(submission)
        except SubmissionError as exc:  # a folder with a file too large to send: read nothing of it
            graded_all[submission.name] = _unreadable(submission, where, str(exc))
            continue
        content = hashlib.sha256(data).hexdigest()
        why = "--regrade" if regrade and previous else _why_regrade(previous, content, official, options)
        if why is None and (where / "results.json").exists():
            graded_all[submission.name] = _graded_from(submission, previous)
            records[submission.name] = previous
            kept.append(submission.name)
            continue
        touched = _touched(previous, hashes, ids) if why == "the grader changed" else None
        if touched:
            why = f"the grader changed for {', '.join(touched)} alone: graded again, the other problems' results kept"
            partly[submission.name] = _partly(previous, touched)
        if why != "new":
            regrades.append({"name": submission.name, "why": why, "before": previous.get("total"),
                             "status_before": previous.get("status")})
        todo.append((submission, data, content))

    run = classreport.Run(kept=kept)
    found = classreport.Fingerprints()
    if not fingerprints:
        found.skipped = "turned off (`--no-fingerprints`)"
    with cluster.Engine(scheduler, jobs, retries) as engine:
        run.engine = engine.where
        engine.check_workers(base)
        if todo and fingerprints and scheduler is None:
            from grader.grading import fingerprinter

            print("resource-grader batch: the reference's and the catalogued mistakes' answers, for the "
                  "fingerprints", file=sys.stderr)
            cluster.fingerprinter_for(ids, mode, limits,
                                      build=lambda: fingerprinter(ids, layers, limits, up_front=True))
        jobs = [{**base, "name": s.name, "data": data, **partly.get(s.name, {})} for s, data, _ in todo]
        start = time.monotonic()
        with tqdm(total=len(todo), desc="grading", unit="submission", file=sys.stderr, disable=None) as bar:
            for index, future in engine.completed(jobs):
                submission, _, content = todo[index]
                result = _result(future)
                if "refused" in result:
                    raise cluster.ClusterError(result["refused"])
                graded, record = _write(submission, out / submission.stem, result, content, official, options)
                record["hashes"] = hashes
                graded_all[submission.name] = graded
                records[submission.name] = record
                bar.set_postfix_str(submission.name[:40])
                bar.update()
        run.seconds = time.monotonic() - start
        starts = engine.starts(batch_id)
        if fingerprints and todo:
            described = engine.descriptions(ids, mode, asdict(limits))
            found.descriptions, found.skipped = described["descriptions"], described["skipped"]
    for submission, _, _ in todo:
        record = records.get(submission.name)
        if record is None:
            continue
        record["attempts"] = max(len(starts.get(submission.name, [])), 1)
        write_atomically(out / submission.stem / RECORD, json.dumps(record, indent=1))
        run.graded.append(submission.name)
        if record["worker"]:  # not a grading lost with its workers
            run.workers[record["worker"]] = run.workers.get(record["worker"], 0) + 1
        if record["attempts"] > 1:
            run.retries[submission.name] = record["attempts"] - 1
    for entry in regrades:
        entry["after"], entry["status_after"] = records[entry["name"]]["total"], records[entry["name"]]["status"]
    run.regrades = regrades
    run.command_seconds = time.monotonic() - command_started
    for name, graded in graded_all.items():
        if graded.fingerprints is not None:
            found.per_submission[name] = graded.fingerprints
    similar = _similar(submissions, records, [p.module for p in chosen], past)
    rows = [_row(graded_all[s.name], records.get(s.name, {}), ids) + ["; ".join(similar.found.similar_to(s.name))]
            for s in submissions]
    with open(out / "grades.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["submission", "status", "total", *ids, "seconds", "attempts", "reason", "similar_to"])
        writer.writerows(rows)
    ordered = [graded_all[s.name] for s in submissions]
    report = classreport.write(out, ordered, chosen, found, run, similar)
    kept = f" ({len(run.kept)} kept from an earlier batch)" if run.kept else ""
    print(f"{len(rows)} submissions graded{kept} on {run.engine}; {out / 'grades.csv'}; class report {report}")
    return 0


def _similar(submissions: list[Path], records: dict[str, dict], modules: list[str],
             base: dict[str, dict]):
    """The copies between the class's submissions on `modules`, from the digests their gradings returned (kept in
    their grading.json), and with the `base`'s: a classreport.Similar."""
    from grader import classreport

    digests, missing = {}, {}
    for submission in submissions:
        record = records.get(submission.name)
        digest = record and record.get("similarity")
        if digest is None:
            missing[submission.name] = ("unreadable" if record is None else "its grading did not finish"
                                        if record.get("status") == "error" else
                                        "kept from a batch before the similarity digest (`--regrade` gives one)")
            continue
        digests[submission.name] = {m: d for m, d in digest.items() if m in modules}
    start = time.monotonic()
    found = similarity.compare_class(digests, {n: {m: d for m, d in b.items() if m in modules}
                                               for n, b in base.items()})
    return classreport.Similar(found, None, missing, time.monotonic() - start, similarity.thresholds())


def _result(future) -> dict:
    """The task's JSON, or what stands for it when the task did not finish (its worker died too often: Dask's
    KilledWorker; any other failure of the engine)."""
    try:
        return json.loads(future.result())
    except Exception as exc:  # noqa: BLE001 - one submission's failure never stops the batch
        kind = type(exc).__name__
        if kind == "KilledWorker":
            last = getattr(getattr(exc, "last_worker", None), "address", "?")
            reason = (f"its worker died each of the {getattr(exc, 'allowed_failures', 0) + 1} times it was given "
                      f"one (KilledWorker; the last: {last})")
        else:
            reason = f"the grading task failed ({kind}: {exc})"
        return {"status": "error", "reason": reason, "worker": "", "seconds": 0.0, "scores": [],
                "fingerprints": None, "operator": [reason], "results": None}


def _write(submission: Path, where: Path, result: dict, content: str, official: str, options: dict):
    """Write one task's results.json (a set-aside one where it has none) and return its Graded and record. What
    went wrong or was flagged goes to stderr in one line (above the progress bar), every line of it to the
    grading's record."""
    from tqdm import tqdm

    lines = result["operator"]
    if lines:
        more = f" (and {len(lines) - 1} more lines in {where / RECORD})" if len(lines) > 1 else ""
        first = printable(lines[0]).splitlines()[0] if printable(lines[0]) else ""
        tqdm.write(f"resource-grader [{submission.name}]: {first}{more}", file=sys.stderr)
    text = result["results"]
    if text is None:
        text = json.dumps(results_json([], seconds=0.0, output=table([], [GRADER_FAILED], frozenset(), [])), indent=1)
    write_atomically(where / "results.json", text)
    scores = scores_from(result["scores"])
    record = {"content": content, "grader": official, "options": options, "status": result["status"],
              "reason": result.get("reason", ""), "seconds": result["seconds"], "worker": result["worker"],
              "total": round(sum(p.score for p in scores), 2), "scores": result["scores"],
              "fingerprints": result["fingerprints"], "untouched": result.get("untouched", []),
              "similarity": result.get("similarity"),
              "operator": [printable(line) for line in lines]}
    return _graded_from(submission, record), record


def _graded_from(submission: Path, record: dict) -> Graded:
    found = record.get("fingerprints")
    return Graded(submission, scores_from(record["scores"]), "", record["status"], record["seconds"],
                  found and Matches.from_data(found), frozenset(record.get("untouched", [])))


def _unreadable(submission: Path, where: Path, why: str) -> Graded:
    text = table([], [UNREADABLE.format(why=why)], frozenset(), [])
    write_atomically(where / "results.json", json.dumps(results_json([], seconds=0.0, output=text), indent=1))
    return Graded(submission, [], text, "unreadable", 0.0)


def _row(graded: Graded, record: dict, ids: list[str]) -> list:
    by_id = {p.id: round(p.score, 2) for p in graded.scores}
    return [graded.submission.name, graded.status, round(sum(by_id.values()), 2), *[by_id.get(i, "") for i in ids],
            round(graded.seconds, 1), record.get("attempts", 1), record.get("reason", "")]
