"""`python -m benchmarks`: list the benchmarks, or run them.

    python -m benchmarks                       # the list, with what each measures and how long it takes
    python -m benchmarks run longmemeval       # one benchmark (arguments after the name go to it)
    python -m benchmarks run longmemeval --limit 10
    python -m benchmarks run quality           # every quality benchmark, one after the other

Each writes JSON, Markdown and a PNG plot to benchmarks/results/ and prints its table.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Sequence

# name: (module, what it measures, rough time on a 2-core machine)
BENCHMARKS: dict[str, tuple[str, str, str]] = {
    "longmemeval": ("benchmarks.longmemeval", "LongMemEval-S session retrieval: R@5, R@10, NDCG@10 vs a plain pipeline",
                    "15-30 min"),
    "locomo": ("benchmarks.locomo", "LoCoMo evidence recall@k per category vs cosine top-k", "10-20 min"),
    "changing_facts": ("benchmarks.changing_facts", "what is true now: agentmem vs append-only on a project history",
                       "5 min"),
    "sick": ("benchmarks.sick", "supersession decisions on SICK pairs (false kills) and a threshold sweep", "3 min"),
    "claim_pairs": ("benchmarks.claim_pairs", "supersession on hand-written update / restate / different claim pairs",
                    "1 min"),
    "pair_heldout": ("benchmarks.pair_heldout", "the shipped pair model on held-out labelled pairs, by style",
                     "1 min"),
    "knowledge_update": ("benchmarks.knowledge_update",
                         "LongMemEval knowledge updates: the later statement first, the earlier reachable",
                         "3 min"),
    "situatedqa": ("benchmarks.situatedqa", "SituatedQA facts that changed, no keys: current@1, dead@5, as_of",
                   "6 min"),
    "latency": ("benchmarks.latency", "recall latency, remember throughput, rebuild at 1k/10k/100k vs brute force",
                "15-30 min"),
    "embedding": ("benchmarks.embedding", "ONNX's cached vectors against torch's, same texts: cosine min / p1 / median",
                  "1 min"),
    "embedders": ("benchmarks.embedders", "the model on ONNX Runtime vs torch: query latency, texts/s, load, RSS",
                  "10 min"),
    "http_latency": ("benchmarks.http_latency", "recall over HTTP with 1/4/16 client processes", "15 min"),
    "concurrency": ("benchmarks.concurrency", "writes and reads under 1-16 clients: working tree vs a baseline commit",
                    "25 min"),
    "recall_ab": ("benchmarks.recall_ab", "recall p50/p90/p99 at 100k: working tree vs a baseline commit, time-naming"
                  " and plain queries apart", "30 min"),
    "lifecycle": ("benchmarks.lifecycle", "archive sweep of half of 100k and recall before/after", "15 min"),
    "time_parsing": ("benchmarks.time_parsing", "what understanding time in a query costs recall, per parser",
                     "1 min"),
    "backends": ("benchmarks.backends",
                 "PostgreSQL on 1/2/3 nodes vs embedded: requests/s, p50/p99; LongMemEval and LoCoMo R@5 on both",
                 "30 min"),
    "peers": ("benchmarks.peers", "agentmem vs mem0, chromadb, LangGraph InMemoryStore: adds/s, search p50/p95, RSS",
              "30-60 min"),
    "admission": ("benchmarks.admission", "LoCoMo through the admission policy: admitted, rejected, evidence covered",
                  "5 min"),
}  # fmt: skip
GROUPS = {
    "quality": ["longmemeval", "locomo", "changing_facts", "sick", "claim_pairs", "pair_heldout", "knowledge_update",
                "situatedqa"],
    "speed": ["latency", "recall_ab", "http_latency", "concurrency", "lifecycle", "backends", "peers"],
}


def available() -> dict[str, tuple[str, str, str]]:
    return {name: b for name, b in BENCHMARKS.items() if importlib.util.find_spec(b[0]) is not None}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    found = available()
    if not args or args[0] in ("list", "-h", "--help"):
        print(__doc__.strip() if args[0:1] in (["-h"], ["--help"]) else "benchmarks:")
        for name, (_module, what, took) in found.items():
            print(f"  {name:<15} {what} ({took})")
        for group, names in GROUPS.items():
            print(f"  {group:<15} all of: {', '.join(n for n in names if n in found)}")
        return 0
    if args[0] != "run" or len(args) < 2:
        print("usage: python -m benchmarks [list | run NAME [ARGS...]]", file=sys.stderr)
        return 2
    name, rest = args[1], args[2:]
    names = GROUPS.get(name, [name])
    unknown = [n for n in names if n not in found]
    if unknown:
        print(f"unknown benchmark {', '.join(unknown)}: choose from {', '.join([*found, *GROUPS])}", file=sys.stderr)
        return 2
    code = 0
    for n in names:
        print(f"== {n}", file=sys.stderr, flush=True)
        module = importlib.import_module(found[n][0])
        code = module.main(rest if len(names) == 1 else []) or code
    return code


if __name__ == "__main__":
    sys.exit(main())
