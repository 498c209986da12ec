"""`python -m grader.fingerprints`: compute and keep every comparable problem's inputs and answers (cache.py), as
Gradescope's setup.sh does for its image."""

from grader.fingerprints import Comparer, compare_inputs_problems
from grader.fingerprints.cache import folder

problems = compare_inputs_problems()
Comparer(problems)
print(f"compare's inputs and answers kept in {folder()} for {len(problems)} problems")
