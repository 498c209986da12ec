"""Your solutions: one module per problem. See handout.md.

`given.py` is given code shared by every problem (configs, hardware specs); do not edit it. The grader
uses its own copy of it and of this file, and takes only the problem modules from your submission.
"""
