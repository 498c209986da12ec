"""Nesting past the parser's depth (issue 53): statements as deep as Python nests them and an expression deeper than
the interpreter can build (30,000 additions in a chain). Parsing or compiling it in the grader's own process could
exhaust its stack; in the analysis's box (grader/harness/box.py) a RecursionError or a crash costs that analysis
alone. The module does not compile, so its tests fail as a module that does not import.
"""
# __BOMB__ nesting
