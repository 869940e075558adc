"""Benchmarks for agentmem: run them as modules, e.g. `python -m benchmarks.latency --quick`."""
