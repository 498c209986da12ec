"""The seam between the tests and the code under test.

`impl.py` gives the tests the package under test, in-process or isolated in a worker process;
`codec.py` turns values into plain data and back; `worker.py` is the worker; `client.py` talks to it.
"""
