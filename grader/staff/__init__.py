"""Course staff's tools, withheld from the student release as one folder (grader/harness/boundary.py STAFF):

    compare.py                      one submission against the reference, function by function, and the
                                    catalogued mistakes its answers match (on grader/fingerprints/)
    release.py, kit/                the student repository (`resource-grader release`)
    gradescope.py, kit/             Gradescope's autograder zip (`resource-grader gradescope`)
    bench.py                        the grader's figures: time, memory, examples (`make bench`)
    checklist.py                    adding a problem: its steps, each checked (`python -m grader.staff.checklist`)
    mutant.py                       `pytest --mutant`: a catalogued mistake swapped into the reference
    samples/                        a partial submission for `make grade` and the TA tools' tests
"""
