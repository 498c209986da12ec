"""Scenarios: module-level functions `scenario(pkg, *data)` that the isolated worker can import.

Stateful work that must live beside the code under test (a counter around a model call, an optimizer,
an autograd graph) runs here and returns plain data; the test compares that data in its own process.
Everything a scenario takes and returns is data (see grader/harness/codec.py).
"""
