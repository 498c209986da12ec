"""The class report's web pages (grader/webreport.py) for a synthetic class of 600: the CPU time to write them, and
their number and size.

    python -m tests.benchmarks.web_report [--size 600] [--seed 0]

The class is the similarity benchmark's (tests/meta/classmates.py: a module per problem each, a group of copies per
problem), compared as batch compares it, so the reported pairs are shown side by side from the submissions' files.
Each submission is given a made-up grading of every problem (each behaviour passed or failed at random, a failure
with a message of a few lines, written into its results.json by grader/scoring.py as a grading writes it), one in
ten a flag of a copy of the reference with its lines, one in three a catalogued mistake matched.
"""

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from grader import registry, scoring, similarity, webreport
from grader.classreport import Fingerprints, Similar
from grader.grading import Graded
from grader.matches import FunctionMatch, Matches
from grader.submission import read_modules
from tests.meta import classmates


def made_up_scores(rng: random.Random) -> list[scoring.ProblemScore]:
    scores = []
    for problem in registry.PROBLEMS:
        behaviours = []
        for b in problem.behaviours:
            passed = rng.random() < 0.7
            message = "" if passed else "\n".join([
                f"AssertionError: {b.name} is wrong on {rng.randrange(10**6)}", f"  expected: {rng.randrange(1000)}",
                f"  got: {rng.randrange(1000)}", "  hint: check the formula", "Falsifying example: ..."])
            tests = [scoring.TestScore(f"{problem.test_file}::{name}", problem.id, 1.0, passed,
                                       "passed" if passed else "failed", message) for name in b.tests]
            behaviours.append(scoring.BehaviourScore(b.name, b.points, tests))
        scores.append(scoring.ProblemScore(problem.id, problem.title, problem.points, behaviours))
    return scores


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args(argv)
    rng = random.Random(options.seed)
    with tempfile.TemporaryDirectory(prefix="ra-web-report-") as tmp:
        made = classmates.build(Path(tmp) / "class", options.size, options.seed)
        digests = {s: similarity.digest(read_modules(made.folder / s)) for s in made.students}
        found = similarity.compare_class(digests)
        out = Path(tmp) / "grades"
        graded, fingerprints = [], Fingerprints(descriptions={"flops.matmul_flops": {"macs": "counts MACs"}})
        for i, student in enumerate(made.students):
            scores = made_up_scores(rng)
            matches = Matches({"flops.matmul_flops": FunctionMatch(False, ["matmul_flops"], ["macs"], 20)},
                              dict(fingerprints.descriptions), ["flops"], ["flops"]) if i % 3 == 0 else None
            review = ["[copy] flops.py: 300 of its 400 fingerprints (75%) are in the reference's source (renaming and "
                      "layout ignored): flops.py lines 13-60 ~ reference/flops.py lines 13-60 (120 fingerprints)"] \
                if i % 10 == 0 else []
            known = scoring.known_mistakes(matches)
            text = scoring.table(scores, [], frozenset(), known)
            (out / student).mkdir(parents=True)
            (out / student / "results.json").write_text(json.dumps(scoring.results_json(
                scores, seconds=1.0, output=text, review=review, known=known)))
            graded.append(Graded(made.folder / student, scores, "", "review" if review else "ok", 1.0, matches))
            if matches:
                fingerprints.per_submission[student] = matches
        similar = Similar(found, None, {}, 0.0, similarity.thresholds())
        start = time.process_time()
        index = webreport.write(out, graded, list(registry.PROBLEMS), fingerprints, similar)
        seconds = time.process_time() - start
        sizes = sorted(p.stat().st_size for p in (out / webreport.FOLDER).glob("*.html"))
        index_size = index.stat().st_size
    print(f"class of {options.size}: {len(found.pairs)} pairs reported, {len(found.clusters)} clusters")
    print(f"web report written in {seconds:.1f} s CPU: report.html {index_size / 2**10:.0f} KiB and {len(sizes)} "
          f"pages, {sum(sizes) / 2**20:.1f} MiB (the largest {sizes[-1] / 2**10:.0f} KiB, the median "
          f"{sizes[len(sizes) // 2] / 2**10:.0f} KiB)")


if __name__ == "__main__":
    main()
