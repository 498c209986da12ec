"""Every sentence a grading adds to what a student reads, beside the tests' own failures (grader/scoring.py
lays out the table, grader/harness/ says what a worker did)."""

GRADER_FAILED = ("The grader failed: a problem on the grading side, not in your code. Course staff can see "
                 "the details in the grader's log.")
LOCAL_MODE = ("Local grade: the public inputs (those of `pytest --hypothesis-profile=grade`). The official grade "
              "tries other generated inputs, drawn from a course secret and your submission.")
REVIEW = ("Flagged for review by course staff: while it was graded, this submission did something that no "
          "solution needs to do (such as reading an oracle's source or reaching into the grader). The score "
          "stands until they have looked.")
REVIEW_COPY = ("Flagged for review by course staff: parts of this submission are close to a source it must not be "
               "copied from (an oracle's code, or the reference solution), whatever their names and layout. A person "
               "will compare them; the score stands until they have looked.")
REVIEW_UNANALYSED = ("Flagged for review by course staff: the grader could not analyse this submission's source within "
                     "its limits (the check for copies), so a person will look at it. The score stands.")
LOCAL_TESTS_ONLY = ("Local tests only: the official grade adds the differential tests, which compare your answers "
                    "with the reference solution (not in this repository), so it can be lower.")
NOTHING_UPLOADED = ("Nothing of your upload was graded: it holds none of the problem modules ({expected}: at its top, "
                    "under assignment/, or one folder down), so every problem is graded as the untouched stub. {found}")
SET_ASIDE = ("This grading run did not end the way a grading run ends, so it is set aside for course staff "
             "to look at; no score is given until then.")
NOT_IN_SUBMISSION = "Not in the submission (graded as the untouched stub): {modules}"
UNREADABLE = "The submission could not be read: {why}"
TIME_LIMIT_REACHED = ("The submission's time limit ({seconds:g} s) was reached; tests that had not run count as "
                      "failed.")

# The score table (grader/scoring.py `table`) and Gradescope's text under each behaviour (`behaviour_output`).
GRADER_ERROR = ("The grading code raised this error itself, outside your code (course staff are told): it may be a "
                "problem of the grading environment, not of your submission.")
KNOWN_MISTAKES = "Known mistakes (a catalogued wrong solution answers as you do on every input tried):"
DOES_NOT_IMPORT_HEADER = "Does not import (every test that needs the module fails with this error; fix it first):"
DOES_NOT_IMPORT = "Does not import: {line}"
NOT_UPLOADED = "{module}.py is not in your upload."
NOT_IMPLEMENTED_HEADER = "Not implemented yet (the stub raised NotImplementedError):"
NOT_STARTED = "{problem}: not started, every function raises NotImplementedError ({tests})"
TYPE_CHECKS_HEADER = ("Type checks (a value your function returned that its stub's annotation refuses, a tensor's "
                      "dtype and dimensions included; your own annotations are never checked), each once:")
FAILURES_HEADER = "Failures (expected is the oracle's or the reference's answer; got is yours):"
FAILURES_BELOW = "{tests}: each is shown under its behaviour below."
PROPERTY_NOT_EARNED = ("(not earned: fixed inputs or a property alone earn nothing until {awaited}, the generated "
                       "tests of the same function and inputs)")
PROPERTY_ONLY = ("Its tests check fixed inputs or a property only, which a table of answers or code that computes "
                 "nothing right can pass: its points are earned once {awaited}, the generated tests of the same "
                 "function and inputs.")
FIXED_NOT_EARNED = "(fixed inputs not earned yet: {tests} passed, and earn once {awaited})"
FIXED_WAITING = ("Its tests of fixed inputs ({tests}) passed, but a table of answers could pass them: their share is "
                 "earned once {awaited}: the generated tests of the same function and inputs.")
MORE_LINES = "... ({count} more lines: `resource-grader grade --local` shows all)"
