"""The comparison between students (grader/similarity.py) on a synthetic class of 600, and its growth from 150.

    python -m tests.benchmarks.similarity [--size 600] [--from 150] [--seed 0]

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
        print(f"{size:>5} submissions: compared in {seconds:6.2f} s CPU; {found.candidates} pairs of modules shared "
              f"something, {len(found.pairs)} reported, {len(found.clusters)} clusters; x{seconds / first[1]:.1f} the "
              f"time of {first[0]} for x{size / first[0]:.0f} the class (x{(size / first[0]) ** 2:.0f} its pairs)")


if __name__ == "__main__":
    main()
