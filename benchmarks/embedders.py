"""The packaged all-MiniLM-L6-v2 on ONNX Runtime against torch: query latency, batch throughput, load time, RSS.

    python -m benchmarks.embedders                  # 2 rounds, 1 and 2 threads, about 10 minutes
    python -m benchmarks.embedders --rounds 1 --queries 100 --texts 200

Each embedder runs in a process of its own (torch and ONNX Runtime each bring an OpenMP runtime,
and two in one process slow each other down), one after the other in interleaved rounds
(torch, onnx, torch, onnx), at each thread count. A round loads the model (timed), embeds the
questions of the data sets one at a time (the query latency, no cache), then real corpus texts
in batches of 32 (texts/s, and their mean token count), and reports its peak RSS. The vectors of
the two backends are compared as well (lowest cosine over the batch texts). Results:
embedders.json / .md / .png.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.cli import command_line, parser, say
from benchmarks.harness.datasets import Corpus
from benchmarks.harness.machine import machine_info
from benchmarks.harness.paths import DEFAULT_DATA
from benchmarks.harness.report import publish, pyplot, save_figure
from benchmarks.harness.stats import percentiles
from benchmarks.harness.tables import table

NAME = "embedders"
BACKENDS = ("torch", "onnx")


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    """One round in this process: load, queries one by one, texts in batches."""
    t0 = time.perf_counter()
    if spec["backend"] == "torch":
        from indexes.embed import SentenceTransformerEmbedder

        embedder: Any = SentenceTransformerEmbedder(threads=spec["threads"], batch_size=32, cache_size=0)
    else:
        from indexes.onnx_embed import OnnxEmbedder

        embedder = OnnxEmbedder(threads=spec["threads"], batch_size=32, cache_size=0)
    embedder.embed(["warm up"])
    load_s = time.perf_counter() - t0
    for q in spec["queries"][:10]:  # untimed: first calls allocate
        embedder.embed([q])
    latencies = []
    for q in spec["queries"]:
        t = time.perf_counter()
        embedder.embed([q])
        latencies.append((time.perf_counter() - t) * 1000)
    t = time.perf_counter()
    vectors = embedder.embed(spec["texts"])
    batch_s = time.perf_counter() - t
    np.save(spec["vectors"], vectors)
    return {
        "backend": getattr(embedder, "backend", spec["backend"]),
        "load_seconds": round(load_s, 3),
        "query_ms": latencies,
        "texts_per_second": round(len(spec["texts"]) / batch_s, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "torch_loaded": "torch" in sys.modules,
    }


def run_round(spec: dict[str, Any], work: Path) -> dict[str, Any]:
    path = work / f"spec-{spec['backend']}-{spec['threads']}.json"
    path.write_text(json.dumps(spec))
    done = subprocess.run([sys.executable, "-m", "benchmarks.embedders", "--worker", str(path)],
                          capture_output=True, text=True, check=False)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{spec['backend']} round failed:\n{done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def token_count(texts: Sequence[str]) -> float:
    from tokenizers import Tokenizer

    from indexes.onnx_embed import MAX_TOKENS, weights_dir

    tok = Tokenizer.from_file(str(weights_dir() / "tokenizer.json"))
    tok.enable_truncation(MAX_TOKENS)
    tok.no_padding()  # the file's own setting pads every text to a fixed length
    return float(np.mean([len(e.ids) for e in tok.encode_batch(list(texts))]))


def main(argv: Sequence[str] | None = None) -> int:
    p = parser(NAME, __doc__, data=DEFAULT_DATA)
    p.add_argument("--rounds", type=int, default=2, help="interleaved rounds per backend and thread count (2)")
    p.add_argument("--threads", default="1,2", help="intra-op thread counts, comma separated (1,2)")
    p.add_argument("--queries", type=int, default=300, help="questions embedded one at a time per round (300)")
    p.add_argument("--texts", type=int, default=1000, help="corpus texts embedded in batches per round (1000)")
    p.add_argument("--worker", type=Path, help=argparse.SUPPRESS)  # one round, in its own process
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker.read_text()))))
        return 0
    corpus = Corpus.load(args.data, seed=0)
    queries, texts = list(corpus.queries[: args.queries]), list(corpus.texts[: args.texts])
    threads = [int(t) for t in args.threads.split(",") if t.strip()]
    runs: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for r in range(args.rounds):
            for n in threads:
                for backend in BACKENDS:
                    spec = {"backend": backend, "threads": n, "queries": queries, "texts": texts,
                            "vectors": str(work / f"{backend}-{n}.npy")}  # fmt: skip
                    say(f"round {r + 1}/{args.rounds}: {backend}, {n} thread(s)")
                    runs.setdefault(f"{backend}/{n}", []).append(run_round(spec, work))
        lowest = {n: float((np.load(work / f"torch-{n}.npy") * np.load(work / f"onnx-{n}.npy")).sum(axis=1).min())
                  for n in threads}  # fmt: skip
    summary = {}
    for key, rs in runs.items():
        summary[key] = {
            "query_ms": percentiles([x for r in rs for x in r["query_ms"]]),
            "texts_per_second": float(np.median([r["texts_per_second"] for r in rs])),
            "load_seconds": float(np.median([r["load_seconds"] for r in rs])),
            "peak_rss_mb": max(r["peak_rss_mb"] for r in rs),
            "torch_loaded": any(r["torch_loaded"] for r in rs),
            "backend": rs[0]["backend"],
        }
    results = {
        "command": command_line(NAME, argv),
        "machine": machine_info(),
        "settings": {"rounds": args.rounds, "threads": threads, "queries": len(queries), "texts": len(texts),
                     "mean_text_tokens": round(token_count(texts), 1),
                     "mean_query_tokens": round(token_count(queries), 1)},  # fmt: skip
        "summary": summary,
        "lowest_cosine_onnx_vs_torch": {str(n): round(c, 6) for n, c in lowest.items()},
        "runs": {k: [{**r, "query_ms": percentiles(r["query_ms"])} for r in rs] for k, rs in runs.items()},
    }
    publish(results, args.out, NAME, render, plot)
    return 0


def render(results: dict[str, Any]) -> str:
    s = results["settings"]
    lines = [
        "# Embedders: ONNX Runtime against torch (same packaged all-MiniLM-L6-v2)",
        "",
        f"{s['rounds']} interleaved round(s), each backend in its own process; {s['queries']} questions one at a "
        f"time (mean {s['mean_query_tokens']} tokens), {s['texts']} corpus texts in batches of 32 (mean "
        f"{s['mean_text_tokens']} tokens).",
        "",
        *table(["backend / threads", "query p50 ms", "p95", "p99", "batch texts/s", "load s", "peak RSS MB",
                "torch in process"], ([
            key, *(f"{v['query_ms'][p]:.2f}" for p in ("p50", "p95", "p99")), f"{v['texts_per_second']:.0f}",
            f"{v['load_seconds']:.1f}", v["peak_rss_mb"], "yes" if v["torch_loaded"] else "no",
        ] for key, v in results["summary"].items()), "lrrrrrrc"),  # fmt: skip
    ]
    lines += ["", "Ratios onnx / torch at each thread count (query p50 below 1 is faster, texts/s above 1):", ""]
    for n in s["threads"]:
        t, o = results["summary"].get(f"torch/{n}"), results["summary"].get(f"onnx/{n}")
        if t and o:
            lines.append(f"- {n} thread(s): query p50 {o['query_ms']['p50'] / t['query_ms']['p50']:.2f}, "
                         f"texts/s {o['texts_per_second'] / t['texts_per_second']:.2f}")  # fmt: skip
    cos = ", ".join(f"{n} thread(s) {c}" for n, c in results["lowest_cosine_onnx_vs_torch"].items())
    lines += ["", f"Lowest cosine between the two backends' vectors of the batch texts: {cos}.", ""]
    return "\n".join(lines)


def plot(results: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    keys = list(results["summary"])
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    a.bar(keys, [results["summary"][k]["query_ms"]["p50"] for k in keys], color="tab:blue")
    a.set_ylabel("query p50 (ms)")
    a.set_title("one query at a time")
    b.bar(keys, [results["summary"][k]["texts_per_second"] for k in keys], color="tab:green")
    b.set_ylabel("texts / s")
    b.set_title("batches of 32 corpus texts")
    for ax in (a, b):
        ax.tick_params(axis="x", rotation=30)
    save_figure(fig, path)


if __name__ == "__main__":
    sys.exit(main())
