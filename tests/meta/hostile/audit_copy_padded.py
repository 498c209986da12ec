"""A copy padded past the winnowing (issue 41): 120 lines of torch/utils/flop_counter.py with every name renamed
and a dead statement of 25 tokens after every statement (`__PADDED_ORACLE__`: the corpus fills it in from the
installed torch when it builds the case, tests/meta/rewrites.py `padded`), so that no 19 tokens in a row are the
oracle's (11.7% of its fingerprints matched, a run of 8, before). The copy check also compares whole statements,
in order, whatever lies between them (grader/copycheck.py), and flags it. The copy is left unused here, so that
the case gains no point (the corpus's rule).
# expect: review
"""

# __PADDED_ORACLE__
