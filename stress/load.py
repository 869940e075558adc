"""Mixed load on the real server: 16 client processes, 80% recall / 20% writes, for a bounded time.

    python -m stress.load                          # 100,000 memories, 16 clients, 120 s
    python -m stress.load --size 10000 --seconds 30

The store is loaded through the bulk import path (real LongMemEval and LoCoMo text with the
real model's vectors, as in benchmarks.latency), then `agentmem serve` runs on loopback and
each client process sends recalls (questions from the same data sets) and remembers (new
text), with keep-alive connections. Reported: requests, errors (any non-2xx or transport
error), throughput, p50 / p99 latency per operation, and the server's RSS sampled every
second (start, end, max), to show it does not grow without bound. Writes stress/results/load.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from stress.crash import TOKEN, Server, free_port

RESULTS = Path(__file__).resolve().parent / "results"
PROJECT = "crash"  # the token of stress.crash.Server covers this project


def client(n: int, url: str, queries: list[str], texts: list[str], seconds: float, out: Any) -> None:
    rng = random.Random(n)
    times: dict[str, list[float]] = {"recall": [], "remember": []}
    errors: list[str] = []
    deadline = time.monotonic() + seconds
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http:
        while time.monotonic() < deadline:
            op = "recall" if rng.random() < 0.8 else "remember"
            t0 = time.perf_counter()
            try:
                if op == "recall":
                    r = http.post("/v1/recall", json={"query": rng.choice(queries), "k": 10, "project": PROJECT})
                else:
                    body = {"content": f"{rng.choice(texts)} (client {n}, {rng.random():.6f})", "project": PROJECT}
                    r = http.post("/v1/memories", json=body)
                if r.status_code >= 300:
                    errors.append(f"{op} {r.status_code}: {r.text[:200]}")
            except httpx.HTTPError as exc:
                errors.append(f"{op} {type(exc).__name__}")
            times[op].append((time.perf_counter() - t0) * 1000)
    out.put({"times": times, "errors": errors})


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m stress.load", description=__doc__.split("\n")[0])
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--seconds", type=float, default=120)
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args(argv)

    from benchmarks.harness.datasets import Corpus
    from benchmarks.harness.embedder import cached_embeddings
    from benchmarks.harness.paths import DEFAULT_DATA
    from benchmarks.latency import load_store, version_for
    from indexes.embed import SentenceTransformerEmbedder

    corpus = Corpus.load(DEFAULT_DATA)
    size = min(args.size, len(corpus.texts) - 5000)
    embedder = SentenceTransformerEmbedder()
    vectors = cached_embeddings(corpus.texts, size, embedder.embed, embedder.name, embedder.dim)
    tmp = Path(tempfile.mkdtemp(prefix="agentmem-load-"))
    try:

        def in_project(i: int, text: str, when: datetime) -> Any:
            import msgspec

            return msgspec.structs.replace(version_for(i, text, when), project=PROJECT)

        mem, _ = load_store(tmp / "data", corpus.texts[:size], vectors, embedder, chunk=20_000,
                            base_time=datetime.now(UTC), make=in_project)  # fmt: skip
        mem.close()
        server = Server(tmp / "data", free_port())
        server.start()
        assert server.proc is not None
        queries = corpus.queries[:2000]
        fresh = corpus.texts[size : size + 5000]
        ctx = mp.get_context("spawn")
        out = ctx.Queue()
        procs = [ctx.Process(target=client, args=(n, server.url, queries, fresh, args.seconds, out))
                 for n in range(args.clients)]  # fmt: skip
        rss = [rss_mb(server.proc.pid)]
        started = time.monotonic()
        for proc in procs:
            proc.start()
        while any(proc.is_alive() for proc in procs) and len(rss) < args.seconds + 120:
            time.sleep(1)
            rss.append(rss_mb(server.proc.pid))
            if out.qsize() >= len(procs):
                break
        results = [out.get(timeout=120) for _ in procs]
        wall = time.monotonic() - started
        for proc in procs:
            proc.join(timeout=30)
        server.kill()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    summary: dict[str, Any] = {"command": "python -m stress.load" + "".join(f" {a}" for a in (argv or sys.argv[1:])),
                               "size": size, "clients": args.clients, "seconds": round(wall, 1)}  # fmt: skip
    errors = [e for r in results for e in r["errors"]]
    for op in ("recall", "remember"):
        ms = np.array([t for r in results for t in r["times"][op]])
        summary[op] = {"n": int(ms.size), "p50_ms": round(float(np.percentile(ms, 50)), 1) if ms.size else None,
                       "p99_ms": round(float(np.percentile(ms, 99)), 1) if ms.size else None}  # fmt: skip
    total = summary["recall"]["n"] + summary["remember"]["n"]
    summary.update(requests=total, errors=len(errors), error_examples=errors[:5],
                   throughput_rps=round(total / wall, 1),
                   server_rss_mb={"start": round(rss[0]), "end": round(rss[-1]), "max": round(max(rss)),
                                  "by_quarter": [round(float(np.mean(q))) for q in np.array_split(rss, 4) if len(q)],
                                  "every_second": [round(x) for x in rss]})  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "load.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    return 0 if not errors else 1


if __name__ == "__main__":
    sys.exit(main())
