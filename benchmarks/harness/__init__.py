"""The benchmarks' harness: what every benchmark needs, written once.

paths (where data, caches and results live), cli (parser, progress, main), datasets (the corpus),
embedder (vector caches and the embedders that serve them), clock (a settable clock), server (a
subprocess server), stats (percentiles), machine (what ran it), report (tables, result files, plots).
"""
