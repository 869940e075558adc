"""The archive sweep at scale: how long it takes, and recall latency before and after it archives half.

Run from the repository root:

    python -m benchmarks.lifecycle                   # 100k memories, 3 rounds (about 10 minutes)
    python -m benchmarks.lifecycle --size 10000      # a quick check

One store of N real-text memories (LongMemEval-S and LoCoMo turns, as in benchmarks.latency)
is loaded through the bulk import path: every other memory is an observation last reinforced
90 days ago (retention far below the archive threshold), the rest are facts from the last days.
The data directory is then copied, and the copy is swept. Measured:

  sweep (dry run)   Memory.sweep(dry_run=True) on the copy, repeated: scoring every current memory
  sweep             the real sweep, once: archive N/2 in one transaction, audit entries, and both
                    indexes updated through the outbox
  recall            Memory.recall(q, k=10) on the full store and on the swept copy, side by side
                    in the same rounds (query vectors served from a warmed LRU cache, so that the
                    figures are recall itself, not the model)

Results: a table on stdout, and lifecycle.json / lifecycle.md / lifecycle.png in --out.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec

from agentmem import Config, Memory
from agentmem.records import MemoryVersion
from benchmarks.harness.cli import command_line, parser, progress, say
from benchmarks.harness.clock import time_calls
from benchmarks.harness.datasets import Corpus
from benchmarks.harness.embedder import cached_embeddings
from benchmarks.harness.machine import machine_info
from benchmarks.harness.paths import DEFAULT_DATA
from benchmarks.harness.report import pyplot, save_figure, write_results
from benchmarks.harness.stats import percentiles, summarise_rounds
from benchmarks.harness.tables import table
from benchmarks.latency import PROJECT, K, load_store, version_for
from indexes.embed import SentenceTransformerEmbedder, embed_query

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def faded_or_fresh(i: int, text: str, when: datetime) -> MemoryVersion:
    """Even ids: observations last reinforced 90 days ago; odd ids: facts of the last days."""
    v = version_for(i, text, when)
    if i % 2 == 0:
        old = when - timedelta(days=90)
        return msgspec.structs.replace(
            v, kind="observation", tier="episodic", confidence=0.5, created_at=old, valid_from=old,
            last_reinforced_at=old,
        )  # fmt: skip
    return v


def recaller(mem: Memory) -> Callable[[str], object]:
    return lambda text: mem.recall(text, project=PROJECT, k=K)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = parser("lifecycle", __doc__, data=DEFAULT_DATA, seed=True)
    p.add_argument("--size", type=int, default=100_000, help="memories in the store (default 100000)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--queries", type=int, default=300, help="distinct queries a round")
    p.add_argument("--dry-runs", type=int, default=5, help="timed dry-run sweeps")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    command = command_line("lifecycle", argv)
    machine = machine_info()
    corpus = Corpus.load(args.data, seed=args.seed)
    size = min(args.size, len(corpus.texts))
    live = SentenceTransformerEmbedder(cache_size=0)
    vectors = cached_embeddings(corpus.texts, size, live.embed, live.name, live.dim)
    pool = corpus.queries[: args.queries * args.rounds]
    cached = SentenceTransformerEmbedder(cache_size=len(pool) + 16)
    for q in progress(pool, desc="queries", unit="query"):
        embed_query(cached, q)
    rounds = [pool[r * args.queries : (r + 1) * args.queries] for r in range(args.rounds)]

    with tempfile.TemporaryDirectory(prefix="agentmem-lifecycle-") as tmp:
        full_dir, swept_dir = Path(tmp) / "full", Path(tmp) / "swept"
        say(f"loading {size:,} memories")
        mem, load = load_store(full_dir, corpus.texts[:size], vectors, cached, chunk=20_000, base_time=NOW,
                               make=faded_or_fresh)  # fmt: skip
        mem.close()
        shutil.copytree(full_dir, swept_dir)
        clock = lambda: NOW  # noqa: E731  (both stores see the same instant)
        full = Memory(full_dir, embedder=cached, clock=clock)
        swept = Memory(swept_dir, embedder=cached, clock=clock, config=Config(sweep_max=size))
        try:
            dry_ms = []
            for _ in progress(range(args.dry_runs), desc="dry-run sweeps"):
                t0 = time.perf_counter()
                report = swept.sweep(dry_run=True)
                dry_ms.append((time.perf_counter() - t0) * 1000)
            say(f"sweeping: {report.archived:,} of {report.examined:,} to archive")
            t0 = time.perf_counter()
            done = swept.sweep()
            sweep_s = time.perf_counter() - t0
            check = swept.check()
            audited = swept.store.scalar("SELECT count(*) FROM audit WHERE action = 'archive'")
            times: dict[str, list[list[float]]] = {"full": [], "swept": []}
            order = random.Random(args.seed)
            for qs in progress(rounds, desc="recall rounds"):
                got: dict[str, list[float]] = {"full": [], "swept": []}
                for q in qs:
                    pair = [("full", full), ("swept", swept)]
                    order.shuffle(pair)  # neither store always goes first
                    for name, m in pair:
                        got[name] += time_calls(recaller(m), [q])
                for name in got:
                    times[name].append(got[name])
            results: dict[str, Any] = {
                "command": command,
                "machine": machine,
                "settings": {"size": size, "rounds": args.rounds, "queries": args.queries, "k": K, "seed": args.seed},
                "load": load,
                "sweep": {
                    "examined": done.examined,
                    "archived": done.archived,
                    "seconds": round(sweep_s, 3),
                    "per_1000_archived_ms": round(sweep_s * 1000 / max(1, done.archived) * 1000, 2),
                    "dry_run_ms": percentiles(dry_ms),
                    "audit_entries": int(audited),
                    "consistent_after": check.ok,
                    "index_docs_after": {r.name: r.count for r in check.indexes},
                },
                "recall_ms": {name: summarise_rounds(t) for name, t in times.items()},
            }
        finally:
            full.close()
            swept.close()
    full_p50 = results["recall_ms"]["full"]["p50"]
    results["recall_ratio_p50"] = round(results["recall_ms"]["swept"]["p50"] / full_p50, 3) if full_p50 else None
    write(results, args.out)
    print(markdown(results))
    return 0


def markdown(r: dict[str, Any]) -> str:
    s, full, swept = r["sweep"], r["recall_ms"]["full"], r["recall_ms"]["swept"]
    m = r["machine"]
    lines = [
        "# Archive sweep at scale",
        "",
        f"`{r['command']}` on {m.get('cpu_model') or 'unknown CPU'}, {m.get('cpu_count')} cores; "
        f"{r['settings']['size']:,} memories, half of them faded observations.",
        "",
        *table(["what", "result"], [
            ["memories examined / archived", f"{s['examined']:,} / {s['archived']:,}"],
            ["sweep, archiving them (one run)", f"{s['seconds']:.2f} s ({s['per_1000_archived_ms']:.0f} ms per 1,000)"],
            [f"sweep dry run, p50 of {s['dry_run_ms']['n']}", f"{s['dry_run_ms']['p50']:.0f} ms"],
            ["audit entries written", f"{s['audit_entries']:,}"],
            ["indexes consistent after", f"{'yes' if s['consistent_after'] else 'NO'} ({s['index_docs_after']})"],
        ]),  # fmt: skip
        "",
        *table(["recall (k=10, query vector cached)", "n", "p50 ms", "p95 ms", "p99 ms"], (
            [name, p["n"], *(f"{p[q]:.2f}" for q in ("p50", "p95", "p99"))]
            for name, p in (("before: full store", full), ("after: half archived", swept))
        )),  # fmt: skip
    ]
    lines += ["", f"p50 after / before: **{r['recall_ratio_p50']}** (same rounds, interleaved query by query)."]
    return "\n".join(lines) + "\n"


def write(results: dict[str, Any], out: Path) -> None:
    write_results(out, "lifecycle", results, markdown(results), default=str)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    names = ["before (full)", "after (half archived)"]
    parts = [results["recall_ms"]["full"], results["recall_ms"]["swept"]]
    for i, key in enumerate(("p50", "p95", "p99")):
        ax.bar([x + i * 0.25 for x in range(2)], [p[key] for p in parts], width=0.25, label=key)
    ax.set_xticks([x + 0.25 for x in range(2)], names)
    ax.set_ylabel("recall latency, ms")
    ax.set_title(f"Recall before and after archiving {results['sweep']['archived']:,} memories")
    ax.legend()
    save_figure(fig, out / "lifecycle.png", dpi=120)


if __name__ == "__main__":
    sys.exit(main())
