"""The reference solutions: the same modules, names and signatures as `assignment/`, solved.

Not part of the student release. Shared given code is imported from `assignment.given`.
"""
