"""The seam between the tests and the code under test.

`local.py` gives the tests the package under test in-process; `client.py` gives it isolated in a worker
process (`worker.py`), over `protocol.py`'s frames, with values turned into plain data and back by
`codec.py`, and reads from outside what the worker spent (`cputime.py`). Inside the worker: `absent.py`
(the oracles are stubs), `guard.py` and `seccomp.py` (what the code may not do), `heap.py` (freed memory
given back), `typecheck.py` (which failures are run-time type checks, reported as the caller's mistake).
"""
