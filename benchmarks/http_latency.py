"""Recall latency and throughput over HTTP against the real agentmem server, with an in-process reference.

Run from the repository root:

    python -m benchmarks.http_latency            # sizes 10k and 100k, 1/4/16 clients, 2 rounds (15-30 minutes)
    python -m benchmarks.http_latency --quick    # size 2k, 1 and 4 clients, 1 short round: a fast check

For each store size a data directory is built with N latest memories of real text (turns of
LongMemEval-S and LoCoMo, split into sentence-sized chunks) and their real all-MiniLM-L6-v2
embeddings, through the bulk import path (the same loader as benchmarks.latency; corpus
embeddings are cached in benchmarks/.cache). The store is closed and the real service is
started on it as a subprocess:

    AGENTMEM_TOKENS=bench:<secret>:admin:bench python -m agentmem --data-dir DIR serve --host 127.0.0.1 --port PORT

on a free loopback port. Client PROCESSES (1, 4 and 16 at once, each with its own keep-alive
httpx connection) then send `POST /v1/recall {"query", "k": 10, "project": "bench"}` for a
bounded time and count. Queries are the distinct questions of the two data sets, handed out in
one global order through a shared counter, so that a question comes back only after every other
one was sent: with ~2,000 distinct questions and the server's 1,024-entry LRU query-vector
cache, a repeated question has been evicted by then and every timed request includes the query
embedding. The share of requests that could have hit the cache is computed (LRU simulation)
and reported.

After the HTTP rounds the server is stopped (SIGTERM, then SIGKILL after a timeout) and the
same 1-client queries are timed in this process on the same data directory: Memory.recall
with the query embedded on every call, recall with the query vector precomputed, and the
embedding alone. That gives the HTTP / in-process ratio and what the time is spent on.
A last untimed-for-targets probe repeats recent queries over HTTP (cache hits by design) to
show the HTTP path without the embedding.

Results: a Markdown table on stdout; http_latency.json / .md / .png in --out.
Temporary data directories are deleted; the server is always stopped.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import queue
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter, OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.cli import add_load_arguments, check_load_arguments, command_line, parser, progress, say
from benchmarks.harness.client import keepalive_client, take, timed_post
from benchmarks.harness.clock import CpuWindow, time_calls
from benchmarks.harness.datasets import Corpus
from benchmarks.harness.embedder import VectorsEmbedder
from benchmarks.harness.machine import machine_info, uncommitted_notes
from benchmarks.harness.paths import DEFAULT_DATA, REPO_ROOT
from benchmarks.harness.report import publish, pyplot, save_figure
from benchmarks.harness.server import HOST, ServerProcess, free_port, proc_status, stop_on_sigterm
from benchmarks.harness.stats import percentiles, summarise_rounds
from benchmarks.harness.tables import fmt, table, targets_table

PROJECT = "bench"  # the project of the loaded memories (benchmarks.latency.PROJECT)
K = 10
SERVER_QUERY_CACHE = 1024  # SentenceTransformerEmbedder's default cache_size, which the server uses
TARGETS = {"size": 100_000, "clients": 1, "p50": 15.0, "p99": 40.0}


# -- the load-generating client process ---------------------------------------------------


def client_worker(
    wid: int,
    url: str,
    secret: str,
    pool: Sequence[str],
    counter: Any,
    go: Any,
    out: Any,
    duration: float,
    max_requests: int,
    warmup: int,
    timeout: float,
) -> None:
    """One client process: its own keep-alive connection, `warmup` untimed requests, then timed
    requests until `duration` seconds have passed or `max_requests` were sent."""
    try:
        clock = time.perf_counter
        with keepalive_client(url, secret, timeout) as http:
            for _ in range(warmup):  # opens the connection; these queries use counter slots too
                i = take(counter)
                http.post("/v1/recall", json={"query": pool[i % len(pool)], "k": K, "project": PROJECT})
            out.put(("ready", wid, None))
            if not go.wait(600):
                out.put(("failed", wid, "no start signal within 600 s"))
                return
            idx: list[int] = []
            lat: list[float] = []
            status: list[int] = []
            hits: list[int] = []
            errors: list[str] = []
            cpu0 = os.times()
            start = clock()
            stop_at = start + duration
            while len(lat) < max_requests and clock() < stop_at:
                i = take(counter)
                body = {"query": pool[i % len(pool)], "k": K, "project": PROJECT}
                code, content, ms = timed_post(http, "/v1/recall", body, clock, errors)
                idx.append(i)
                lat.append(ms)
                status.append(code)
                n_hits = -1
                if 200 <= code < 300:
                    try:
                        n_hits = len(json.loads(content)["hits"])
                    except (ValueError, KeyError, TypeError):
                        n_hits = -2
                elif code and len(errors) < 5:
                    errors.append(f"HTTP {code}: {content[:300]!r}")
                hits.append(n_hits)
            end = clock()
            cpu1 = os.times()
        out.put(
            (
                "done",
                wid,
                {
                    "idx": idx,
                    "lat": lat,
                    "status": status,
                    "hits": hits,
                    "errors": errors,
                    "start": start,
                    "end": end,
                    "cpu_seconds": (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system),
                },
            )
        )
    except BaseException:
        out.put(("failed", wid, traceback.format_exc()))


# -- the server subprocess ----------------------------------------------------------------


class Server(ServerProcess):
    """`python -m agentmem --data-dir DIR serve` on a free loopback port, with one admin token for PROJECT."""

    def __init__(self, data_dir: Path, log_path: Path, *, ready_timeout: float, stop_timeout: float) -> None:
        super().__init__(log_path, ready_timeout=ready_timeout, stop_timeout=stop_timeout)
        self.data_dir = data_dir

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
        env["AGENTMEM_TOKENS"] = f"bench:{self.secret}:admin:{PROJECT}"
        env["PYTHONUNBUFFERED"] = "1"
        last_error = ""
        for attempt in range(3):  # the free port may be taken between the probe and the bind
            self.port = free_port()
            cmd = [
                sys.executable, "-m", "agentmem", "--data-dir", str(self.data_dir),
                "serve", "--host", HOST, "--port", str(self.port),
            ]  # fmt: skip
            self.spawn(cmd, cwd=REPO_ROOT, env=env)
            why = self.poll_ready(0.1)
            if why is None:
                return
            last_error = f"server {why}"
            self.stop()
            say(f"  server start attempt {attempt + 1} failed: {last_error}; log tail:\n{self.log_tail()}")
        raise RuntimeError(f"the server did not start: {last_error}")


# -- one measured configuration -----------------------------------------------------------


def run_clients(
    ctx: Any,
    server: Server,
    pool: Sequence[str],
    counter: Any,
    clients: int,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """Start `clients` processes, release them together, collect their timings."""
    out_q = ctx.Queue()
    go = ctx.Event()
    procs = [
        ctx.Process(
            target=client_worker,
            args=(
                w,
                server.url,
                server.secret,
                list(pool),
                counter,
                go,
                out_q,
                args.duration,
                args.max_requests,
                args.client_warmup,
                args.timeout,
            ),
            daemon=True,
        )
        for w in range(clients)
    ]
    for p in procs:
        p.start()
    payloads: dict[int, dict[str, Any]] = {}
    failures: list[str] = []
    try:
        ready = 0
        deadline = time.monotonic() + 180
        while ready < clients:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"only {ready} of {clients} clients got ready in 180 s")
            kind, wid, payload = out_q.get(timeout=left)
            if kind == "ready":
                ready += 1
            else:
                raise RuntimeError(f"client {wid} failed while warming up:\n{payload}")
        stats = CpuWindow(server.pid)
        go.set()
        deadline = time.monotonic() + args.duration + args.timeout + 60
        while len(payloads) + len(failures) < clients:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                kind, wid, payload = out_q.get(timeout=left)
            except queue.Empty:
                break
            if kind == "done":
                payloads[wid] = payload
            elif kind == "failed":
                failures.append(f"client {wid}: {payload}")
        cpu = stats.finish(sum(p["cpu_seconds"] for p in payloads.values()))
    finally:
        go.set()
        for p in procs:
            p.join(10)
        for p in procs:
            if p.is_alive():
                p.terminate()
                p.join(5)
    if len(payloads) < clients and not failures:
        failures.append(f"{clients - len(payloads)} client(s) sent no result in time")
    lat = [x for p in payloads.values() for x in p["lat"]]
    status = [s for p in payloads.values() for s in p["status"]]
    hits = [h for p in payloads.values() for h in p["hits"]]
    ok_lat = [x for p in payloads.values() for x, s in zip(p["lat"], p["status"], strict=True) if 200 <= s < 300]
    errors = Counter(("exception" if s == 0 else str(s)) for s in status if not 200 <= s < 300)
    start = min((p["start"] for p in payloads.values()), default=0.0)
    end = max((p["end"] for p in payloads.values()), default=0.0)
    wall = max(end - start, 1e-9)
    rss = proc_status(server.pid)
    return {
        "clients": clients,
        "requests": len(lat),
        "ok": len(ok_lat),
        "errors": sum(errors.values()),
        "errors_by_kind": dict(errors),
        "error_samples": [e for p in payloads.values() for e in p["errors"]][:5],
        "client_failures": failures,
        "zero_hit_replies": sum(1 for h in hits if h == 0),
        "unparsable_replies": sum(1 for h in hits if h == -2),
        "wall_seconds": round(wall, 3),
        "throughput_rps": round(len(ok_lat) / wall, 2),
        "per_client_requests": sorted(len(p["lat"]) for p in payloads.values()),
        "latency_ms": percentiles(ok_lat),
        "lat": ok_lat,  # removed before writing JSON (kept for the round summaries)
        "idx": sorted(i for p in payloads.values() for i in p["idx"]),
        "queries": [pool[i % len(pool)] for p in payloads.values() for i in p["idx"]],
        "cpu": cpu,
        "server_rss_mb": round(rss.get("VmRSS", 0) / 1024, 1),
        "server_peak_rss_mb": round(rss.get("VmHWM", 0) / 1024, 1),
        "server_threads": rss.get("Threads"),
    }


def http_probe(server: Server, queries: Sequence[str], timeout: float) -> dict[str, Any]:
    """One client, sequential requests for `queries` (which the caller chose: warm-up or cache hits)."""
    import httpx

    lat: list[float] = []
    errors = 0
    clock = time.perf_counter
    with httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer {server.secret}"}, timeout=timeout
    ) as http:
        for q in queries:
            t0 = clock()
            try:
                r = http.post("/v1/recall", json={"query": q, "k": K, "project": PROJECT})
                ok = r.status_code == 200
            except httpx.HTTPError:
                ok = False
            lat.append((clock() - t0) * 1000.0)
            errors += not ok
    return {"lat": lat, "errors": errors}


# -- in-process reference -----------------------------------------------------------------


def inprocess_reference(
    path: Path, emb_live: Any, rounds: Sequence[Sequence[str]], warmup: Sequence[str]
) -> dict[str, Any]:
    """The 1-client HTTP rounds' queries, timed in this process on the same data directory."""
    from agentmem import Memory
    from indexes.embed import embed_query

    t0 = time.perf_counter()
    mem = Memory(path, embedder=emb_live)  # emb_live has cache_size=0: every call embeds
    open_s = time.perf_counter() - t0
    try:
        all_q = list(dict.fromkeys([q for r in rounds for q in r]))
        vectors = {q: embed_query(emb_live, q) for q in progress(all_q, desc="query vectors", unit="query")}
        def query_vector(q: str) -> np.ndarray:
            v = vectors.get(q)
            return v if v is not None else emb_live.embed([q])[0]

        # the live embedder, but query vectors come from the dict filled above (recall minus embedding)
        pre = VectorsEmbedder(emb_live.name, emb_live.dim, emb_live.embed, query_vector)
        def recall(q: str) -> object:
            return mem.recall(q, project=PROJECT, k=K)

        def embed_only(q: str) -> object:
            return embed_query(emb_live, q)

        for q in warmup:  # untimed: first searcher, BLAS threads
            recall(q)
        modes: dict[str, list[list[float]]] = {"recall+embed": [], "recall (vector precomputed)": [], "embed": []}
        cpu = CpuWindow(None)  # this process alone: "other_cores" is contention from the rest of the machine
        for r, queries in enumerate(rounds):
            say(f"    in-process round {r + 1}/{len(rounds)}: {len(queries)} queries x 3 modes")
            mem.embedder = emb_live
            modes["recall+embed"].append(time_calls(recall, queries))
            mem.embedder = pre
            try:
                modes["recall (vector precomputed)"].append(time_calls(recall, queries))
            finally:
                mem.embedder = emb_live
            modes["embed"].append(time_calls(embed_only, queries))
        usage = cpu.finish(0.0)
    finally:
        mem.close()
    return {
        "open_seconds": round(open_s, 2),
        "cpu": {k: v for k, v in usage.items() if not k.startswith(("server", "client"))},
        "modes": {m: summarise_rounds(v) for m, v in modes.items()},
    }


# -- one store size -----------------------------------------------------------------------


def bench_size(
    size: int,
    texts: Sequence[str],
    vectors: np.ndarray,
    pool: Sequence[str],
    emb_live: Any,
    work_root: Path,
    args: argparse.Namespace,
    notes: list[str],
) -> dict[str, Any]:
    from datetime import UTC, datetime

    from benchmarks.latency import load_store

    path = work_root / f"store-{size}"
    say(f"size {size:,}: loading the store")
    mem, store_info = load_store(
        path, texts, vectors, emb_live, chunk=args.import_chunk, base_time=datetime.now(UTC).replace(microsecond=0)
    )
    mem.close()
    say(f"  loaded in {store_info['load_seconds']} s, check ok: {store_info['check_ok']}")
    if not store_info["check_ok"]:
        notes.append(f"size {size:,}: mem.check() was NOT ok after loading: {store_info['check']}")
    store_info["disk_mb"] = round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20, 1)

    ctx = mp.get_context("spawn")  # clients never inherit this process's torch / DuckDB state
    counter = ctx.Value("q", 0)
    server = Server(path, work_root / f"server-{size}.log", ready_timeout=args.ready_timeout, stop_timeout=30.0)
    entry: dict[str, Any] = {"size": size, "store": store_info, "loadavg_before": _loadavg()}
    configs: dict[int, list[dict[str, Any]]] = {c: [] for c in args.client_list}
    try:
        say("  starting the server")
        server.start()
        entry["server_start_seconds"] = server.started_seconds
        entry["server_rss_mb_idle"] = round(proc_status(server.pid).get("VmRSS", 0) / 1024, 1)
        say(f"  /health 200 after {server.started_seconds} s on {server.url}; warming up ({args.warmup} requests)")
        warm_q = [pool[take(counter) % len(pool)] for _ in range(args.warmup)]
        warm = http_probe(server, warm_q, args.timeout)
        entry["warmup_ms"] = {"first_request": round(warm["lat"][0], 1) if warm["lat"] else None,
                              "rest": percentiles(warm["lat"][1:]), "errors": warm["errors"]}  # fmt: skip
        if warm["errors"]:
            notes.append(f"size {size:,}: {warm['errors']} of {args.warmup} warm-up requests failed")
        for r in range(args.repeats):
            for c in args.client_list:
                say(
                    f"  round {r + 1}/{args.repeats}: {c} client(s), up to {args.duration} s / {args.max_requests} each"
                )
                res = run_clients(ctx, server, pool, counter, c, args)
                res["round"] = r + 1
                configs[c].append(res)
                lat = res["latency_ms"]
                say(
                    f"    {res['requests']} requests, {res['errors']} errors, {res['throughput_rps']} req/s, "
                    f"p50 {lat.get('p50', float('nan')):.1f} / p99 {lat.get('p99', float('nan')):.1f} ms, "
                    f"server {res['cpu'].get('server_cores')} cores, clients {res['cpu'].get('client_cores')}, "
                    f"other {res['cpu'].get('other_cores')}"
                )
                for f in res["client_failures"]:
                    notes.append(f"size {size:,}, {c} clients, round {r + 1}: {f.splitlines()[-1]}")
        # cache hits by design: repeat the most recent questions (all still in the 1,024-entry cache)
        sent_idx = sorted(i for rs in configs.values() for res in rs for i in res["idx"])
        recent = list(dict.fromkeys(pool[i % len(pool)] for i in reversed(sent_idx)))[
            : min(200, SERVER_QUERY_CACHE // 2)
        ]
        say(f"  probe: {len(recent)} recent questions again (query vector cached on the server)")
        cached = http_probe(server, recent, args.timeout)
        entry["http_cached_vector"] = {**percentiles(cached["lat"]), "errors": cached["errors"]}
        status = proc_status(server.pid)
        entry["server_rss_mb_end"] = round(status.get("VmRSS", 0) / 1024, 1)
        entry["server_peak_rss_mb"] = round(status.get("VmHWM", 0) / 1024, 1)
        entry["server_threads_end"] = status.get("Threads")
        problems = server.log_problems()
        if problems:
            entry["server_log_problems"] = problems
            notes.append(
                f"size {size:,}: the server log has {len(problems)} warning/error line(s): {problems[0][:200]}"
            )
    finally:
        server.stop()
        entry["server_stop"] = server.stop_info
        # uvicorn re-raises the SIGTERM it handled after a graceful shutdown: exit -15 is the normal end
        clean = "Application shutdown complete" in server.log_tail(10)
        if server.stop_info.get("signal") == "SIGKILL" or not clean:
            notes.append(f"size {size:,}: server stop {server.stop_info}; log tail: {server.log_tail(5)}")

    # query-cache accounting over the server's lifetime: every counter slot handed out (server warm-up,
    # client warm-ups, timed requests) in order; the cached-vector probe at the end is left out
    handed_out = int(counter.value)
    timed = {i for rs in configs.values() for res in rs for i in res["idx"]}
    hits = possible_cache_hits(range(handed_out), timed, len(pool), SERVER_QUERY_CACHE + max(args.client_list))
    entry["query_cache"] = {
        "distinct_questions": len(pool),
        "server_cache_size": SERVER_QUERY_CACHE,
        "requests_to_server": handed_out,
        "timed_requests": len(timed),
        "questions_sent_more_than_once": max(0, handed_out - len(pool)),
        "possible_cache_hits_timed": hits,
        "possible_cache_hit_share": round(hits / max(1, len(timed)), 4),
    }

    say("  in-process reference on the same data (server stopped)")
    one = configs.get(1, [])
    rounds_q = [res["queries"] for res in one] or [list(pool[: args.max_requests]) for _ in range(args.repeats)]
    entry["inprocess"] = inprocess_reference(path, emb_live, rounds_q, [pool[-(i + 1)] for i in range(args.warmup)])
    entry["http"] = {}
    for c, rs in configs.items():
        summary = summarise_rounds([res["lat"] for res in rs])
        entry["http"][str(c)] = {
            "clients": c,
            "rounds": len(rs),
            "requests": sum(res["requests"] for res in rs),
            "errors": sum(res["errors"] for res in rs),
            "throughput_rps": round(float(np.median([res["throughput_rps"] for res in rs])), 2) if rs else None,
            "round_throughput_rps": [res["throughput_rps"] for res in rs],
            "latency_ms": summary,
            "server_rss_mb_end": rs[-1]["server_rss_mb"] if rs else None,
            "server_cpu_ms_per_request": _cpu_per_request(rs),
            "client_cores": _median([res["cpu"].get("client_cores") for res in rs]),
            "server_cores": _median([res["cpu"].get("server_cores") for res in rs]),
            "other_cores": _median([res["cpu"].get("other_cores") for res in rs]),
            "rounds_detail": [{k: v for k, v in res.items() if k not in ("lat", "idx", "queries")} for res in rs],
        }
    entry["loadavg_after"] = _loadavg()
    shutil.rmtree(path, ignore_errors=True)
    return entry


def possible_cache_hits(order: range, timed: set[int], pool: int, capacity: int) -> int:
    """Timed requests (counter slots in `timed`) whose question was among the last `capacity` distinct
    ones in global counter order: an upper bound on the server's LRU hits when `capacity` is the cache
    size plus the most concurrent clients (requests of different clients may reach the server slightly
    out of counter order)."""
    lru: OrderedDict[int, None] = OrderedDict()
    hits = 0
    for i in order:
        q = i % pool
        if q in lru:
            hits += i in timed
            lru.move_to_end(q)
        else:
            lru[q] = None
            if len(lru) > capacity:
                lru.popitem(last=False)
    return hits


def _cpu_per_request(rs: Sequence[dict[str, Any]]) -> float | None:
    cpu = [res["cpu"].get("server_cpu_seconds") for res in rs]
    n = sum(res["requests"] for res in rs)
    if not n or any(c is None for c in cpu):
        return None
    return round(1000.0 * sum(cpu) / n, 2)  # type: ignore[arg-type]


def _median(values: Sequence[float | None]) -> float | None:
    vs = [v for v in values if v is not None]
    return round(float(np.median(vs)), 2) if vs else None


def _loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# -- report -------------------------------------------------------------------------------


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    size = next((s for s in results["sizes"] if s["size"] == TARGETS["size"]), None)
    one = size["http"].get(str(TARGETS["clients"])) if size else None
    lat = one["latency_ms"] if one else {}
    out = []
    for key in ("p50", "p99"):
        measured = lat.get(key)
        out.append(
            {
                "target": f"HTTP recall {key} <= {TARGETS[key]:g} ms at {TARGETS['size']:,} memories, "
                f"{TARGETS['clients']} client, query embedding included",
                "measured_ms": measured,
                "met": None if measured is None else measured <= TARGETS[key],
            }
        )
    return out


def render_markdown(results: dict[str, Any]) -> str:
    m, st = results["machine"], results["settings"]
    lines = [
        "# agentmem recall over HTTP",
        "",
        f"{m['date']} - {m['cpu_count']} CPUs ({(m.get('cpu_model') or '?').split()[0]}), Python {m['python']}, "
        f"torch threads {m.get('torch_threads', '?')}, model {results['model']}. Real server "
        f"(`python -m agentmem serve`, uvicorn, one process) on loopback; client processes with one keep-alive "
        f"connection each; {st['repeats']} round(s) per client count, each up to {st['duration']} s or "
        f"{st['max_requests']} requests per client; k={K}; every timed request embeds its query on the server "
        f"(distinct real questions, see Query cache).",
        "",
        "## HTTP recall (query embedding included)",
        "",
    ]

    def http_row(size: int, c: str, h: dict[str, Any]) -> list[Any]:
        lat = h["latency_ms"]
        return [
            f"{size:,}", c, f"{h['requests']:,}", h["errors"], fmt(h["throughput_rps"], 1),
            *(fmt(lat.get(p)) for p in ("p50", "p95", "p99", "median_round_p50")),
            fmt(h["server_cpu_ms_per_request"], 1), fmt(h["server_rss_mb_end"], 0),
            " / ".join(fmt(h[k]) for k in ("server_cores", "client_cores", "other_cores")),
        ]  # fmt: skip

    cols = ["size", "clients", "requests", "errors", "req/s", "p50 ms", "p95 ms", "p99 ms", "median of round p50s",
            "server CPU ms/req", "server RSS MB (end)", "CPU cores: server / clients / other"]  # fmt: skip
    lines += table(cols, (http_row(s["size"], c, h) for s in results["sizes"] for c, h in s["http"].items()),
                   "r" * 11 + "l")  # fmt: skip
    lines += [
        "",
        "## Side by side: 1 client over HTTP vs the same queries in process (same data directory)",
        "",
    ]
    side_rows: list[list[Any]] = []
    for s in results["sizes"]:
        one = s["http"].get("1")
        if not one:
            continue
        h = one["latency_ms"]
        rows: list[tuple[str, dict[str, Any], str | None]] = [("HTTP /v1/recall, query embedded (1 client)", h, None)]
        for mode, label in (
            ("recall+embed", "in process: Memory.recall, query embedded"),
            ("recall (vector precomputed)", "in process: Memory.recall, query vector precomputed"),
            ("embed", "in process: query embedding alone"),
        ):
            v = s["inprocess"]["modes"][mode]
            ratio = f"{h['p50'] / v['p50']:.2f}x / {h['p99'] / v['p99']:.2f}x" if mode == "recall+embed" else ""
            rows.append((label, v, ratio))
        rows.append(("HTTP /v1/recall, query vector cached on the server (probe)", s["http_cached_vector"], None))
        side_rows += ([f"{s['size']:,}", label, f"{v.get('n', 0):,}",
                       *(fmt(v.get(p)) for p in ("p50", "p95", "p99", "median_round_p50")), row_ratio or ""]
                      for label, v, row_ratio in rows)  # fmt: skip
    cols = ["size", "path", "calls", "p50 ms", "p95 ms", "p99 ms", "median of round p50s", "HTTP / this (p50, p99)"]
    lines += table(cols, side_rows, "rlrrrrrl")
    lines += ["", "## Where one request's time goes (1 client, p50s)", ""]
    for s in results["sizes"]:
        b = s.get("breakdown")
        if b:
            lines.append(
                f"- {s['size']:,}: HTTP {fmt(b['http_p50'])} ms = query embedding ~{fmt(b['embed_p50'])} ms "
                f"({fmt(100 * b['embed_share'], 0)}%) + recall without embedding ~{fmt(b['recall_no_embed_p50'])} ms "
                f"+ HTTP/server overhead ~{fmt(b['http_overhead_p50'])} ms (HTTP with cached vector "
                f"{fmt(b['http_cached_p50'])} ms minus in-process recall with precomputed vector). "
                f"Other processes used {fmt(s['inprocess'].get('cpu', {}).get('other_cores'))} cores during the "
                "in-process timing."
            )
    lines += ["", "## Targets (2-core machine)", ""]
    lines += targets_table(results["targets"])
    lines += [
        "",
        "## Query cache",
        "",
    ]
    qcs = [(s["size"], s["query_cache"]) for s in results["sizes"]]
    lines += table(["size", "distinct questions", "requests to the server", "questions sent more than once",
                    "timed requests that could have hit the 1,024-entry cache"], ([
        f"{size:,}", f"{qc['distinct_questions']:,}", f"{qc['requests_to_server']:,}",
        f"{qc['questions_sent_more_than_once']:,}",
        f"{qc['possible_cache_hits_timed']:,} ({100 * qc['possible_cache_hit_share']:.1f}%)",
    ] for size, qc in qcs), "rrrrr")  # fmt: skip

    def store_row(s: dict[str, Any]) -> list[Any]:
        st_, stop = s["store"], s.get("server_stop", {})
        return [
            f"{s['size']:,}", fmt(st_["load_seconds"], 1), st_["check_ok"], fmt(st_.get("disk_mb"), 1),
            fmt(s.get("server_start_seconds")), fmt(s.get("warmup_ms", {}).get("first_request"), 0),
            " / ".join(fmt(s.get(k), 0) for k in ("server_rss_mb_idle", "server_rss_mb_end", "server_peak_rss_mb")),
            f"{stop.get('signal')} in {stop.get('seconds')} s, exit {stop.get('returncode')}",
        ]  # fmt: skip

    lines += ["", "## Stores and server", ""]
    cols = ["size", "load s", "check ok", "on disk MB", "server start s (to /health)", "first request ms",
            "RSS MB idle / end / peak", "stop"]  # fmt: skip
    lines += table(cols, (store_row(s) for s in results["sizes"]), "rrcrrr")
    if results.get("notes"):
        lines += ["", "Notes:", ""] + [f"- {n}" for n in results["notes"]]
    return "\n".join(lines) + "\n"


def breakdown(s: dict[str, Any]) -> dict[str, Any] | None:
    one = s["http"].get("1")
    if not one:
        return None
    modes = s["inprocess"]["modes"]
    http_p50 = one["latency_ms"]["p50"]
    embed = modes["embed"]["p50"]
    no_embed = modes["recall (vector precomputed)"]["p50"]
    cached = s["http_cached_vector"].get("p50")
    return {
        "http_p50": http_p50,
        "embed_p50": embed,
        "embed_share": round(embed / http_p50, 3) if http_p50 else None,
        "recall_no_embed_p50": no_embed,
        "http_cached_p50": cached,
        "http_overhead_p50": None if cached is None else round(cached - no_embed, 3),
    }


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib.ticker

    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 5.5), dpi=120)
    colors = ("tab:blue", "tab:red", "tab:green", "tab:purple", "tab:orange")
    clients_all: list[int] = []
    for n, s in enumerate(results["sizes"]):
        color = colors[n % len(colors)]
        cs = sorted(int(c) for c in s["http"])
        clients_all = sorted(set(clients_all) | set(cs))
        p50 = [s["http"][str(c)]["latency_ms"].get("p50") for c in cs]
        p99 = [s["http"][str(c)]["latency_ms"].get("p99") for c in cs]
        rps = [s["http"][str(c)]["throughput_rps"] for c in cs]
        ax1.plot(cs, p50, "o-", color=color, label=f"{s['size']:,}: HTTP p50")
        ax1.plot(cs, p99, "s--", color=color, alpha=0.7, label=f"{s['size']:,}: HTTP p99")
        ip = s["inprocess"]["modes"]["recall+embed"]
        ax1.plot([1], [ip["p50"]], "x", color=color, ms=10, mew=2, label=f"{s['size']:,}: in-process p50 (1 client)")
        ax1.plot([1], [ip["p99"]], "+", color=color, ms=12, mew=2, label=f"{s['size']:,}: in-process p99 (1 client)")
        ax2.plot(cs, rps, "o-", color=color, label=f"{s['size']:,} memories")
    ax1.axhline(TARGETS["p50"], color="gray", lw=0.8, ls=":")
    ax1.axhline(TARGETS["p99"], color="gray", lw=0.8, ls="-.")
    if clients_all:
        ax1.text(clients_all[0], TARGETS["p50"] * 1.04, "target p50 15 ms (100k, 1 client)", fontsize=7, color="gray")
        ax1.text(clients_all[0], TARGETS["p99"] * 1.04, "target p99 40 ms (100k, 1 client)", fontsize=7, color="gray")
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.set_xticks(clients_all)
        ax.set_xticklabels([str(c) for c in clients_all])
        ax.set_xlabel("concurrent client processes")
        ax.grid(True, which="both", alpha=0.3)
    ax1.set_yscale("log")
    ax1.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax1.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax1.set_ylabel("latency per request (ms), query embedding included")
    ax1.set_title("POST /v1/recall latency, k=10")
    ax1.legend(fontsize=7, loc="lower right")
    ax2.set_ylabel("throughput (requests/s)")
    ax2.set_ylim(bottom=0)
    ax2.set_title("throughput")
    ax2.legend(fontsize=8)
    m = results["machine"]
    fig.suptitle(f"agentmem over HTTP, real server ({m['cpu_count']} CPUs, {m['date'][:10]})")
    save_figure(fig, path)


# -- main ---------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = parser("http_latency", __doc__, data=DEFAULT_DATA, work_dir=True, seed=True)
    p.add_argument("--sizes", default="10000,100000", help="store sizes, comma separated (default %(default)s)")
    add_load_arguments(p, clients="1,4,16", repeats=2, duration=15.0, max_requests=300, timeout=30.0,
                       ready_timeout=300.0)  # fmt: skip
    p.add_argument("--warmup", type=int, default=20, help="untimed requests after the server starts (default 20)")
    p.add_argument("--client-warmup", type=int, default=2, help="untimed requests per client process (default 2)")
    p.add_argument("--import-chunk", type=int, default=10_000, help="memories per import_lines call")
    p.add_argument("--quick", action="store_true", help="size 2000, 1 and 4 clients, 1 round of 4 s: a fast check")
    args = p.parse_args(argv)
    if args.quick:
        args.sizes, args.clients, args.repeats = "2000", "1,4", 1
        args.duration, args.max_requests, args.warmup = 4.0, 100, 10
    args.size_list = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    if not args.size_list or min(args.size_list) < 1:
        p.error("--sizes: give positive numbers")
    check_load_arguments(p, args)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    command = command_line("http_latency", argv)
    started = time.perf_counter()
    notes: list[str] = []

    stop_on_sigterm()
    if not sys.stderr.isatty():  # no "Loading weights" bars in logs
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        try:
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
        except Exception:  # an older or missing transformers: bars are cosmetic
            pass

    from benchmarks.harness.embedder import cached_embeddings
    from indexes.embed import SentenceTransformerEmbedder

    say(f"reading data from {args.data}")
    corpus = Corpus.load(args.data, seed=args.seed)
    say(f"  {corpus.sources}")
    pool = corpus.queries
    need_distinct = SERVER_QUERY_CACHE + max(args.client_list)
    if len(pool) <= need_distinct:
        notes.append(
            f"only {len(pool)} distinct questions for a {SERVER_QUERY_CACHE}-entry server cache: "
            "some timed requests may have been cache hits (see Query cache)"
        )
    largest = max(args.size_list)
    if largest > len(corpus.texts):
        notes.append(f"only {len(corpus.texts):,} distinct texts: size {largest:,} cut to {len(corpus.texts):,}")
        args.size_list = sorted({min(s, len(corpus.texts)) for s in args.size_list})
        largest = max(args.size_list)

    emb_live = SentenceTransformerEmbedder(cache_size=0)
    say("loading the model and the corpus embeddings")
    embedding_stats: dict[str, Any] = {}
    vectors = cached_embeddings(
        corpus.texts, largest, emb_live.embed, emb_live.name, emb_live.dim, stats=embedding_stats
    )

    machine = machine_info()
    results: dict[str, Any] = {
        "command": command,
        "model": emb_live.name,
        "dim": emb_live.dim,
        "machine": machine,
        "settings": {
            "sizes": args.size_list,
            "clients": args.client_list,
            "repeats": args.repeats,
            "duration": args.duration,
            "max_requests": args.max_requests,
            "warmup": args.warmup,
            "client_warmup": args.client_warmup,
            "timeout": args.timeout,
            "k": K,
            "project": PROJECT,
            "import_chunk": args.import_chunk,
            "seed": args.seed,
            "data": str(args.data),
            "server_query_cache": SERVER_QUERY_CACHE,
            "host": HOST,
        },  # fmt: skip
        "corpus": corpus.sources,
        "corpus_embedding": embedding_stats,
        "sizes": [],
        "notes": notes,
    }
    notes += uncommitted_notes(machine)

    work_root = Path(tempfile.mkdtemp(prefix="agentmem-http-", dir=args.work_dir))
    try:
        for size in args.size_list:
            entry = bench_size(size, corpus.texts[:size], vectors[:size], pool, emb_live, work_root, args, notes)
            entry["breakdown"] = breakdown(entry)
            results["sizes"].append(entry)
            other = [h["other_cores"] for h in entry["http"].values() if h["other_cores"] is not None]
            if other and max(other) >= 0.3:
                notes.append(
                    f"size {size:,}: other processes used up to {max(other):.2f} cores (median over rounds) during "
                    "the HTTP rounds: contention on this 2-core machine"
                )
            ip_other = entry["inprocess"]["cpu"].get("other_cores")
            if ip_other is not None and ip_other >= 0.3:
                notes.append(
                    f"size {size:,}: other processes used {ip_other:.2f} cores during the in-process reference: "
                    "contention on this 2-core machine (its tail latencies are inflated)"
                )
    finally:
        shutil.rmtree(work_root, ignore_errors=True)

    errors = sum(h["errors"] for s in results["sizes"] for h in s["http"].values())
    if errors:
        notes.append(f"{errors} request(s) failed (non-2xx or exception): see rounds_detail in the JSON")
    results["targets"] = targets(results)
    results["total_seconds"] = round(time.perf_counter() - started, 1)
    publish(results, args.out, "http_latency", render_markdown, plot)
    say(f"wrote {args.out / 'http_latency.json'}, http_latency.md and http_latency.png in {results['total_seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
