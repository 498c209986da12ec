"""A module of pathological size for the copy check (issue 53): one statement repeated until the module is just
under the bound the copy check reads (copycheck.MAX_BYTES), every statement alike, so that each comparison of
statements in order meets every repetition. Bounded by the analysis's box: CPU seconds, memory, the deadline.
"""
# __BOMB__ size
