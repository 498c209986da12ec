"""The padded copy changed in what does nothing (issue 53): 120 lines of torch/utils/flop_counter.py renamed, a dead
statement after every statement, every value assigned or returned as `value if True else None` and an unread keyword
parameter on every function, with bare carriage returns for line ends (`__DISGUISED_ORACLE__`: the corpus makes it
from the installed torch, tests/meta/rewrites.py `carriage_returns`). The copy check's tokenizer read one line and
one statement; 4 statements in order, 5% of the fingerprints. Now the copy check reads the module as Python does and
compares what runs (grader/normalised.py): the dead statements, the constant conditionals and the unread parameters
are gone, and the copy is whole again. Left unused, so that the case gains no point.
# expect: review
"""

# __DISGUISED_ORACLE__
