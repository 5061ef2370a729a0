"""Benchmarks (run as modules: ``python -m benchmarks.<name>``)."""
