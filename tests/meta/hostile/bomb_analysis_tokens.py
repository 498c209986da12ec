"""A flood of tokens for whatever reads the submission's data as code (issue 53): literals that decode to megabytes
of tiny statements, each of which the copy check would read as a module of its own. Stopped by the analysis's box
(its CPU seconds and the grading's deadline: cut off, the grading is flagged for a person and keeps its results)
and by copycheck's bounds on what it decodes (DECODED_BYTES each, DECODINGS a module).
# expect: review
"""
# __BOMB__ tokens
