"""Seed grinding: how often does a resubmission's draw miss a catalogued mistake? For each mistake, the problem's
tests (without the differential ones: the student release's must catch it alone) run on the reference with the
mistake swapped in, under many grading seeds (a resubmission changed by one token gets another seed:
grader/seed.py), and the share of seeds under which it passes is printed. It must be zero: a strategy's corners are
explicit examples of every grading (tests/strategies `every`), so no draw can leave them out.

    python -m tests.benchmarks.seed_grinding --problem flops [--seeds 24] [--mistake params_gate_third_layer]

Issue 53's case, before the corners: a transformer_param_count forgetting the gate of a third layer passed under 6
of 24 seeds. A benchmark, not a test: a problem's catalogue under 24 seeds is minutes of CPU.
"""

import argparse
import sys
import time

from grader.registry import PROBLEMS
from tests.meta.mutation import run_mistake
from tests.mistakes import catalog

FIRST_SEED = 1000  # the seeds tried: FIRST_SEED, FIRST_SEED + 1, ... (none of them the meta-tests' held-out seed)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", action="append", help="only these problems (repeatable; default: every one)")
    parser.add_argument("--mistake", action="append", help="only these mistakes of them (their ids)")
    parser.add_argument("--seeds", type=int, default=24, help="grading seeds per mistake (default 24)")
    options = parser.parse_args(argv)
    problems = options.problem or [p.id for p in PROBLEMS]
    mistakes = [m for p in problems for m in catalog(p) if not options.mistake or m.id in options.mistake]
    missed_any = 0
    start = time.process_time()
    print(f"{'mistake':<50} missed under   (of {options.seeds} grading seeds)")
    for mistake in mistakes:
        missed = [seed for seed in range(FIRST_SEED, FIRST_SEED + options.seeds)
                  if not run_mistake(mistake, "grade", grading_seed=seed)["caught"]]
        missed_any += bool(missed)
        share = len(missed) / options.seeds
        print(f"{mistake.problem + ':' + mistake.id:<50} {len(missed):>3} ({share:4.0%})"
              + (f"  seeds {missed[:8]}" if missed else ""), flush=True)
    print(f"{len(mistakes)} mistakes, {missed_any} missed under some seed; {time.process_time() - start:.0f} s of CPU")
    return 1 if missed_any else 0


if __name__ == "__main__":
    sys.exit(main())
