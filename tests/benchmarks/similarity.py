"""The comparison between students (grader/similarity.py) on a synthetic class of 600, and its growth from 150.

    python -m tests.benchmarks.similarity [--size 600] [--from 150] [--seed 0] [--show 5]

Builds the class as the meta-test does (tests/meta/classmates.py: honest modules of every problem, one group of
copies per problem), digests each submission as a grading does (the worker's cost, printed per submission), then
compares the first 150, 300, ... submissions where the results are gathered, in this process (one core), and prints
each comparison's CPU time, the pairs that shared something (compared in full) and the growth against the smallest
class: the index keeps it near the growth of the matches, not of the square of the class (x16 from 150 to 600).
"""

import argparse
import tempfile
import time
from pathlib import Path

from grader import similarity
from grader.submission import read_modules
from tests.meta import classmates


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=600)
    parser.add_argument("--from", dest="smallest", type=int, default=150)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--show", type=int, default=5, help="reported pairs that were not planted, shown")
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ra-similarity-") as tmp:
        start = time.process_time()
        made = classmates.build(Path(tmp) / "class", options.size, options.seed)
        print(f"class of {options.size} built in {time.process_time() - start:.1f} s CPU "
              f"({len(classmates.MODULES)} modules each)")
        start = time.process_time()
        digests = {s: similarity.digest(read_modules(made.folder / s)) for s in made.students}
        seconds = time.process_time() - start
    print(f"digests: {1000 * seconds / len(digests):.0f} ms CPU per submission (on its grading's worker)")
    sizes, first = [], None
    size = options.smallest
    while size < options.size:
        sizes.append(size)
        size *= 2
    sizes.append(options.size)
    for size in sizes:
        subset = dict(list(digests.items())[:size])
        start = time.process_time()
        found = similarity.compare_class(subset)
        seconds = time.process_time() - start
        first = first or (size, seconds, found.candidates)
        inside = {(g.problem, pair) for g in made.groups for pair in g.pairs if pair <= set(subset)}
        reported = {(p.problem, frozenset((p.a, p.b))) for p in found.pairs}
        print(f"{size:>5} submissions: compared in {seconds:6.2f} s CPU, x{seconds / first[1]:.1f} the time of "
              f"{first[0]} for x{size / first[0]:.0f} the class (x{(size / first[0]) ** 2:.0f} its pairs); "
              f"{found.candidates} pairs of modules shared a hash (x{found.candidates / first[2]:.1f}); "
              f"{len(found.pairs)} reported: {len(reported & inside)} of the {len(inside)} planted, "
              f"{len(reported - inside)} others; {len(found.clusters)} clusters")
        for p in [p for p in found.pairs if (p.problem, frozenset((p.a, p.b))) not in inside][:options.show]:
            print(f"      not planted: {p.problem} {p.a} {p.b}: {p.shared} hashes shared ({p.share:.0%}), a run of "
                  f"{p.longest}, {p.in_order} statements in order: {_lines(p)}")


def _lines(pair: similarity.Pair) -> str:
    return "; ".join(f"{s.a_lines[0]}-{s.a_lines[1]} ~ {s.b_lines[0]}-{s.b_lines[1]}" for s in pair.spans[:2])


if __name__ == "__main__":
    main()
