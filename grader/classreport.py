"""The class report of `resource-grader batch`: OUT/report.md beside grades.csv, with its histograms.

    - a histogram of the scores per problem and of the totals (PNG files next to report.md, matplotlib's Agg
      backend), linked from it;
    - each behaviour's failure rate across the submissions that started its problem (a behaviour fails when
      any of its tests fails), the worst first: a screenful, the rest summed up in a line;
    - per function, how many submissions match each catalogued mistake (the fingerprints of
      grader/fingerprints/, given to `write` as plain data: this module never runs the reference or the
      catalogue, so it is also the student release's);
    - how the batch ran (`Run`): where, the throughput, the gradings per worker and the retries, and what a resumed
      batch kept or regraded, with the scores that moved;
    - copies between students (grader/similarity.py's findings, given to `write`): the pairs and clusters past its
      thresholds, strongest first, with the matched lines on each side; every pair in OUT/similarity.csv
      (`write_similarity_csv`). For course staff: none of it reaches a results.json, and no score depends on it.

Only submissions with a score (status ok or review) count; the others are listed by status.
"""

import csv
from dataclasses import dataclass, field
from pathlib import Path

from grader.matches import Matches

SCORED = ("ok", "review")
SHOWN_BEHAVIOURS = 20  # the table's rows (a screenful); the rest in one line
SHOWN_PAIRS = 40  # similar pairs in the report (the strongest); every one in similarity.csv
SIMILARITY_CSV = "similarity.csv"


@dataclass
class Fingerprints:
    """The catalogued mistakes the class matches: per submission name, what its fingerprints found; the
    descriptions, "problem.function" -> {mistake id: description}. `skipped`: why there are none."""

    per_submission: dict[str, Matches] = field(default_factory=dict)
    descriptions: dict[str, dict[str, str]] = field(default_factory=dict)
    skipped: str | None = None


@dataclass
class Run:
    """How the batch ran: `engine` (where), `seconds` (the wall time of its gradings), `command_seconds` (of the
    whole command, from reading the submissions to the report: the fingerprints' answers too), `graded` (the submissions
    graded in this batch), `kept` (those whose earlier results stand), `workers` (worker -> gradings it finished),
    `retries` (submission -> how often it was given to another worker after its worker died), `regrades` (one
    dict per submission graded again: name, why, before/after (totals), status_before/status_after)."""

    engine: str = ""
    seconds: float = 0.0
    command_seconds: float = 0.0
    graded: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    workers: dict[str, int] = field(default_factory=dict)
    retries: dict[str, int] = field(default_factory=dict)
    regrades: list[dict] = field(default_factory=list)


def _histogram(path: Path, values: list[float], out_of: float, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 3.2), dpi=100)
    bins = [out_of * i / 10 for i in range(11)]
    axes.hist([min(max(v, 0.0), out_of) for v in values], bins=bins, color="#4c72b0", edgecolor="white")
    axes.set_xlim(0, out_of)
    axes.set_xlabel(f"score (out of {out_of:g})")
    axes.set_ylabel("submissions")
    axes.set_title(title)
    axes.yaxis.get_major_locator().set_params(integer=True)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


def _pct(count: int, of: int) -> str:
    return f"{count / of:.0%}" if of else "-"


def failure_rates(graded: list) -> list[dict]:
    """One row per behaviour that some scored submission started (a problem left as the stub, `untouched`,
    is not a failure of its behaviours: it is not counted): how many of those submissions failed it (`failing`:
    their names), worst first (the failure rate, then the points lost, then the registry's order)."""
    rows: dict[tuple[str, str], dict] = {}
    order = []
    for g in graded:
        if g.status not in SCORED:
            continue
        for p in g.scores:
            if p.id in g.untouched:
                continue
            for b in p.behaviours:
                key = (p.id, b.name)
                if key not in rows:
                    rows[key] = {"problem": p.id, "behaviour": b.name, "failed": 0, "of": 0, "lost": 0.0,
                                 "failing": []}
                    order.append(key)
                row = rows[key]
                row["of"] += 1
                row["failed"] += not b.passed
                row["failing"] += [g.submission.name] * (not b.passed)
                row["lost"] += max(b.points - b.score, 0.0)
    ranked = sorted(order, key=lambda k: (-rows[k]["failed"] / rows[k]["of"], -rows[k]["lost"], order.index(k)))
    return [rows[k] for k in ranked]


def behaviour_lines(graded: list, problems, shown: int = SHOWN_BEHAVIOURS) -> list[str]:
    """The report's "Behaviours by failure rate": a table of the `shown` worst, the rest in one line."""
    rows = failure_rates(graded)
    table = [row for row in rows if row["failed"]][:shown]  # a behaviour no one failed is in the line below
    lines = ["A behaviour fails for a submission when any of its tests fails; it counts only the submissions that "
             "started its problem (a problem left as the stub is not started), and the points lost are summed over "
             f"them. The {len(table)} worst of {len(rows)}:" if table else
             f"A behaviour fails for a submission when any of its tests fails: none of the {len(rows)} failed for any "
             "submission that started its problem.",
             *(["", "| problem | behaviour | failed | rate | points lost |", "| --- | --- | ---: | ---: | ---: |"]
               if table else [])]
    for row in table:
        lines.append(f"| {row['problem']} | {row['behaviour']} | {row['failed']} of {row['of']} | "
                     f"{_pct(row['failed'], row['of'])} | {row['lost']:.2f} |")
    rest = rows[len(table):]
    if rest:
        failing = [r for r in rest if r["failed"]]
        worst = max((r["failed"] / r["of"] for r in failing), default=0.0)
        lines += ["", f"The other {len(rest)}: {len(failing)} failed by some (at most {worst:.0%}; "
                      f"{sum(r['lost'] for r in rest):.2f} points lost in all), {len(rest) - len(failing)} by none."]
    started = {r["problem"] for r in rows}
    unstarted = [p.id for p in problems if p.id not in started]
    if unstarted:
        lines += ["", f"Started by no scored submission: {', '.join(unstarted)}."]
    return lines


@dataclass
class FunctionMistakes:
    """One comparable function ("problem.function") over the class: the submissions compared on it (`compared`),
    those whose answers differ from the reference's (`differ`) and, of those, the ones that match each catalogued
    mistake (`matches`: id -> names) and those that match none (`unexplained`)."""

    compared: list[str] = field(default_factory=list)
    differ: list[str] = field(default_factory=list)
    unexplained: list[str] = field(default_factory=list)
    matches: dict[str, list[str]] = field(default_factory=dict)


def mistakes_by_function(fingerprints: Fingerprints) -> dict[str, FunctionMistakes]:
    """"problem.function" -> who matched what (a submission whose fingerprints failed is not counted)."""
    found: dict[str, FunctionMistakes] = {}
    for name, result in fingerprints.per_submission.items():
        if result.error:
            continue
        for function, match in result.functions.items():
            f = found.setdefault(function, FunctionMistakes())
            f.compared.append(name)
            if not match.agree:
                f.differ.append(name)
                f.unexplained += [name] * (not match.matches)
            for mistake in match.matches:
                f.matches.setdefault(mistake, []).append(name)
    return found


def mistake_counts(fingerprints: Fingerprints) -> dict[str, dict]:
    """"problem.function" -> {"of": submissions compared on it, "differ": how many disagree with the
    reference, "unexplained": of those, how many match no mistake, "mistakes": {id: count}}."""
    return {function: {"of": len(f.compared), "differ": len(f.differ), "unexplained": len(f.unexplained),
                       "mistakes": {m: len(names) for m, names in f.matches.items()}}
            for function, f in mistakes_by_function(fingerprints).items()}


@dataclass
class Similar:
    """What batch gives the report of copies between students: `found` (grader/similarity.py's Similarity; None
    where the comparison did not run, `skipped` says why), `not_compared` (submissions without a digest, and
    why), `seconds` (the comparison's), `thresholds` (how a pair is reported, in words)."""

    found: object = None
    skipped: str | None = None
    not_compared: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    thresholds: str = ""


@dataclass(frozen=True)
class ScoreFigure:
    """The scores of the scored submissions on one problem (`name`: its id) or on all of them ("total"), out of
    `out_of`."""

    name: str
    title: str
    values: list[float]
    out_of: float

    @property
    def label(self) -> str:
        return self.name if self.name == "total" else f"{self.name}: {self.title}"

    @property
    def stats(self) -> list[float]:
        """The mean, the median, the least and the most ([] where no submission has a score)."""
        if not self.values:
            return []
        ordered, middle = sorted(self.values), len(self.values) // 2
        median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
        return [sum(ordered) / len(ordered), median, ordered[0], ordered[-1]]


def score_figures(scored: list, problems) -> list[ScoreFigure]:
    """The totals' figure, then each problem's (a problem a submission was not graded on counts 0)."""
    figures = [ScoreFigure("total", "all problems", [sum(p.score for p in g.scores) for g in scored],
                           sum(p.points for p in problems))]
    for problem in problems:
        figures.append(ScoreFigure(problem.id, problem.title, [next((p.score for p in g.scores if p.id == problem.id),
                                                                    0.0) for g in scored], problem.points))
    return figures


def write(out: Path, graded: list, problems, fingerprints: Fingerprints, run: Run | None = None,
          similar: Similar | None = None) -> Path:
    """Write OUT/report.md and its PNGs for `graded` (grading.Graded, one per submission) on `problems` (the
    registry's Problem objects graded in this batch), how it ran (`run`) and the copies between students
    (`similar`: also OUT/similarity.csv); the path of report.md."""
    scored = [g for g in graded if g.status in SCORED]
    lines = ["# Class report", "",
             f"{len(graded)} submissions, {len(scored)} with a score (status ok or review)."]
    others = {}
    for g in graded:
        if g.status not in SCORED:
            others.setdefault(g.status, []).append(g.submission.name)
    for status, names in sorted(others.items()):
        lines.append(f"Status `{status}` (no score, not counted below): {', '.join(sorted(names))}.")

    lines += ["", "## Scores", "", "| | out of | mean | median | min | max | histogram |",
              "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    figures = score_figures(scored, problems)
    for figure in figures:
        png = f"hist_{figure.name}.png"
        _histogram(out / png, figure.values, figure.out_of, figure.label)
        stats = [f"{v:.2f}" for v in figure.stats] or ["-"] * 4
        lines.append(f"| {figure.name} | {figure.out_of:g} | {' | '.join(stats)} | [{png}]({png}) |")
    lines += [""] + [f"![{f.name}](hist_{f.name}.png)" for f in figures]

    lines += ["", "## Behaviours by failure rate", ""] + behaviour_lines(graded, problems)

    lines += ["", "## Catalogued mistakes", ""]
    if fingerprints.skipped:
        lines.append(f"Not computed: {fingerprints.skipped}.")
    else:
        lines += _mistake_lines(fingerprints)
    if similar is not None:
        lines += similarity_lines(similar)
        if similar.found is not None:
            write_similarity_csv(out / SIMILARITY_CSV, similar.found)
    if run is not None:
        lines += run_lines(run)
    path = out / "report.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def _mistake_lines(fingerprints: Fingerprints) -> list[str]:
    lines = ["The functions of each problem a submission failed run again on `resource-grader compare`'s inputs "
             "(tests/mistakes/ names what they match); a problem it passed counts as agreeing with the reference, "
             "and a function counts the submissions that had started its problem. Problems left as the stub are "
             "not compared, nor submissions whose grading reached its time limit.", ""]
    failed = {name: r.error for name, r in fingerprints.per_submission.items() if r.error}
    timed_out = sorted(name for name, r in fingerprints.per_submission.items() if r.timed_out)
    counts = mistake_counts(fingerprints)
    any_found = False
    for function in sorted(counts):
        c = counts[function]
        if not c["differ"]:
            continue
        any_found = True
        descriptions = fingerprints.descriptions.get(function, {})
        for mistake, n in sorted(c["mistakes"].items(), key=lambda item: (-item[1], item[0])):
            lines.append(f"- {function}: {_pct(n, c['of'])} ({n} of {c['of']}) match `{mistake}`: "
                         f"{descriptions.get(mistake, '')}".rstrip(": "))
        if c["unexplained"]:
            lines.append(f"- {function}: {_pct(c['unexplained'], c['of'])} ({c['unexplained']} of {c['of']}) "
                         "differ from the reference and match no catalogued mistake")
    if not any_found:
        lines.append("Every compared function agrees with the reference.")
    seconds = [r.seconds for r in fingerprints.per_submission.values()]
    if seconds:
        lines += ["", f"Fingerprints took {sum(seconds) / len(seconds):.1f} s per submission on average "
                      f"(at most {max(seconds):.1f} s; a problem passed is not run again)."]
    if timed_out:
        lines.append(f"Stopped at the submission's time limit (the rest counts as differing): {', '.join(timed_out)}.")
    for name, error in sorted(failed.items()):
        lines.append(f"Not fingerprinted: {name}: {error.strip().splitlines()[-1]}")
    return lines


def run_lines(run: Run) -> list[str]:
    """The report's "How it ran" part: throughput, gradings per worker, retries, regrades."""
    lines = ["", "## How it ran", "", f"Graded on {run.engine}."]
    done = len(run.graded)
    if done:
        whole = max(run.command_seconds, run.seconds)
        rate = f"{done / whole * 3600:.0f} submissions per hour for the whole command" if whole > 0 else "-"
        lines.append(f"{done} gradings in {run.seconds:.0f} s, the whole command in {whole:.0f} s: {rate}.")
    if run.kept:
        lines.append(f"Kept from an earlier batch (same submission, grader and options; `--regrade` grades them "
                     f"again): {len(run.kept)}.")
    if run.workers:
        lines += ["", "| worker | gradings |", "| --- | ---: |"]
        lines += [f"| {worker} | {n} |" for worker, n in sorted(run.workers.items())]
    lines.append("")
    if run.retries:
        given = ", ".join(f"{name} ({n})" for name, n in sorted(run.retries.items()))
        lines.append(f"Given to another worker after theirs died: {_times(sum(run.retries.values()))}, for {given}.")
    else:
        lines.append("No grading was lost with its worker.")
    if run.regrades:
        moved = [r for r in run.regrades if r["before"] != r["after"] or r["status_before"] != r["status_after"]]
        lines += ["", f"Graded again: {len(run.regrades)} ("
                  + "; ".join(f"{r['name']}: {r['why']}" for r in run.regrades) + ")."]
        if moved:
            lines += ["", "| submission | why | before | after |", "| --- | --- | ---: | ---: |"]
            lines += [f"| {r['name']} | {r['why']} | {r['before']} ({r['status_before']}) | {r['after']} "
                      f"({r['status_after']}) |" for r in moved]
        else:
            lines.append("No score moved.")
    return lines


def _lines_of(pair, side: str) -> str:
    """The matched line ranges of one side of a pair, in the order of the other side's: "module.py 10-24; 31-35"."""
    ranges = [getattr(span, f"{side}_lines") for span in pair.spans]
    return f"{pair.module}.py " + "; ".join(f"{a}-{b}" for a, b in ranges) if ranges else "-"


def similarity_lines(similar: Similar) -> list[str]:
    """The report's "Copies between students": how they were compared, the clusters, the strongest pairs."""
    lines = ["", "## Copies between students", ""]
    if similar.found is None:
        return lines + [f"Not compared: {similar.skipped}."]
    found = similar.found
    compared = max(found.compared.values(), default=0)
    base = (f", and each with the {found.base} submissions of the base (`--similarity-base`; never with each "
            "other)") if found.base else ""
    lines += [f"Every pair of submissions compared per problem module (up to {compared} a module){base}: names, "
              "literals, comments and layout ignored, the stub's code and what the class writes alike left out "
              f"({similar.thresholds}). {found.candidates} pairs shared something; {len(found.pairs)} are reported, "
              f"in {similar.seconds:.1f} s. For course staff: no student sees this, and it changes no score. Each "
              f"pair's matched lines are side by side; every pair is in [{SIMILARITY_CSV}]({SIMILARITY_CSV}).", ""]
    for i, cluster in enumerate(found.clusters):
        lines.append(f"- cluster {cluster.problem}-{i + 1}: {len(cluster.members)} submissions share one source on "
                     f"{cluster.problem}: {', '.join(cluster.members)}")
    if found.clusters:
        lines.append("")
    if found.pairs:
        lines += ["| problem | strength | submission | its lines | submission | its lines | shared | run | "
                  "in order |", "| --- | ---: | --- | --- | --- | --- | ---: | ---: | ---: |"]
        for pair in found.pairs[:SHOWN_PAIRS]:
            lines.append(f"| {pair.problem} | {pair.strength:.0%} | {pair.a} | {_lines_of(pair, 'a')} | {pair.b} | "
                         f"{_lines_of(pair, 'b')} | {pair.shared} | {pair.longest} | {pair.in_order} |")
        if len(found.pairs) > SHOWN_PAIRS:
            lines += ["", f"And {len(found.pairs) - SHOWN_PAIRS} weaker pairs, in {SIMILARITY_CSV}."]
    else:
        lines.append("No pair is past the thresholds.")
    for name, why in sorted(similar.not_compared.items()):
        lines.append(f"Not compared: {name}: {why}.")
    return lines


SIMILARITY_COLUMNS = ["problem", "strength", "submission_a", "lines_a", "submission_b", "lines_b", "shared", "a_own",
                      "b_own", "share", "longest_run", "statements_in_order", "cluster", "from_base"]


def write_similarity_csv(path: Path, found) -> None:
    """One row per reported pair, strongest first: the matched line ranges of each side in the same order
    ("module.py 10-24; 31-35"), the figures, the cluster it is part of ("problem-N: its members")."""
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(SIMILARITY_COLUMNS)
        for pair in found.pairs:
            cluster = found.clusters[pair.cluster] if pair.cluster is not None else None
            writer.writerow([pair.problem, f"{pair.strength:.2f}", pair.a, _lines_of(pair, "a"), pair.b,
                             _lines_of(pair, "b"), pair.shared, pair.a_own, pair.b_own, f"{pair.share:.2f}",
                             pair.longest, pair.in_order,
                             f"{cluster.problem}-{pair.cluster + 1}: {' '.join(cluster.members)}" if cluster else "",
                             pair.from_base])
