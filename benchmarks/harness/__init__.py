"""The benchmarks' harness: what every benchmark needs, written once.

- paths: where data, caches and results live
- cli: the command line (parser, shared options, progress)
- datasets: the LongMemEval-S / LoCoMo corpus
- embedder: vectors cached under benchmarks/.cache and the embedder that serves them
- clock: the settable clock, call timing, CPU accounting
- server: an agentmem server in a subprocess
- client: what a load-generating client process needs
- stats: percentiles and shares
- machine: what a run ran on
- tables: Markdown tables
- report: result files (JSON, Markdown, PNG)
- standalone/sidekit: what the side scripts share (they run with another tree on PYTHONPATH)
"""
