"""What a problem's tests share with the staff tools (grader/fingerprints/inputs.py): its tables, the builders of
its inputs and the normal form of its answers, one module per problem. The tests import them from here, so
that nothing outside the suite imports a test module (tests/meta/test_layering.py)."""
