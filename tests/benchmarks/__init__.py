"""Benchmarks: scripts run by hand (`python -m tests.benchmarks.<name>`), not collected by pytest."""
