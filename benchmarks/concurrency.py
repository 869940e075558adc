"""Writes and reads under concurrency: the working tree against a baseline commit, real servers, one run.

Run from the repository root:

    python -m benchmarks.concurrency                     # 10k and 100k, 1/4/8/16 clients, 3 mixes (about 25 min)
    python -m benchmarks.concurrency --quick             # 2k, 1 and 8 clients, 3 s windows (a few minutes)
    python -m benchmarks.concurrency --baseline v0.1.0   # another baseline (default 62ce809)

Two versions of the code are measured side by side in the same run: **new**, this working tree,
and **baseline**, a `git worktree` of `--baseline` kept in the cache folder. Both run with this
venv's Python and their own tree alone on PYTHONPATH; every server prints the files of the
packages it imported, and the run stops unless they lie in the right tree.

For each store size a data directory is built once and cached: real text (turns of
LongMemEval-S and LoCoMo split into sentences, read from ../shared/data) with its real
all-MiniLM-L6-v2 embeddings (cached in benchmarks/.cache), sent as JSON Lines exports to the
*baseline* server's POST /v1/import (the older code writes it; the newer one must open it,
migrating on open). The first 500 memories carry explicit keys. Each server then gets its own
copy, and both run at once, `agentmem serve --host 127.0.0.1 --port P --config FILE`
(loopback, one admin token, sweep and consolidation off).

Measured per size, mix and client count, in rounds that alternate baseline, new, baseline, new
(the 2-core machine is shared and noisy), by 1/4/8/16 client PROCESSES each with its own
keep-alive connection, for a bounded time and request count:

  read    POST /v1/recall {query, k=10}: distinct real questions in one global order per server
          (about 2,000 of them, more than the server's 1,024-entry query cache)
  mixed   80% recall, 20% remember, spread evenly
  write   POST /v1/memories: texts never stored before, every 5th with one of the 500 keys, so
          that it supersedes; the server embeds each text (as it does for any client)

Reported per (server, mix, clients, size): successful requests/s, p50 / p99 latency per
operation, errors, remember outcomes, CPU of the server, the clients and everyone else; and
the ratio new / baseline. Before the HTTP rounds comes the in-process figure: the same two
code sides, each in its own subprocess (benchmarks/concurrency_inprocess.py) on a copy of the
smallest store, alternating: sequential `remember()` with the embedding excluded (the
embedder serves vectors the real model computed beforehand) and bulk `import_lines` into an
empty directory. The targets for the new side are checked against these figures and the
8-writer HTTP rounds.

Results: a Markdown table on stdout; concurrency.json / .md / .png in --out. Every server and
child process is stopped, even on error or SIGTERM; the copies are deleted.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.concurrency_load import (
    KEY_EVERY,
    KEYS,
    PROJECT,
    ClientPool,
    Side,
    SideServer,
    check_modules,
    copy_store,
    probe,
    settle,
    slot_key,
    warm_up,
    write_body,
)
from benchmarks.concurrency_report import (
    MIXES,
    compare,
    compare_inprocess,
    plot,
    render_markdown,
    summarise_config,
    summarise_inprocess,
    summarise_window,
    targets,
)
from benchmarks.harness.cli import add_load_arguments, check_load_arguments, command_line, parser, progress, say
from benchmarks.harness.clock import machine_busy_seconds
from benchmarks.harness.datasets import Corpus
from benchmarks.harness.embedder import cached_embeddings
from benchmarks.harness.machine import machine_info
from benchmarks.harness.paths import CACHE_DIR, DEFAULT_DATA, REPO_ROOT
from benchmarks.harness.report import publish
from benchmarks.harness.server import stop_on_sigterm
from benchmarks.harness.store import export_lines, memory_version

NAME = "concurrency"
DEFAULT_BASELINE = "62ce809"  # the commit before the group-commit work
STORE_FORMAT = 1  # bump when the preloaded stores change shape (keys, times, project)
IMPORT_CHUNK = 5000  # memories per POST /v1/import while preloading
SIDES = ("baseline", "new")
CHILD = Path(__file__).resolve().parent / "concurrency_inprocess.py"


# -- the two code sides -------------------------------------------------------------------


def git(*args: str, cwd: Path = REPO_ROOT) -> str:
    out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=120)
    return out.stdout.strip()


def baseline_side(rev: str, cache: Path) -> Side:
    """A clean `git worktree` of `rev` in the cache folder (added once, checked on every run)."""
    commit = git("rev-parse", "--verify", f"{rev}^{{commit}}")
    path = cache / f"baseline-{commit[:12]}"
    if path.exists():
        try:
            ok = git("rev-parse", "HEAD", cwd=path) == commit and not git("status", "--porcelain", cwd=path)
        except subprocess.CalledProcessError:
            ok = False
        if not ok:
            say(f"baseline worktree {path} is not a clean checkout of {commit[:12]}: adding it again")
            subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=REPO_ROOT, capture_output=True)
            shutil.rmtree(path, ignore_errors=True)
            git("worktree", "prune")
    if not path.exists():
        say(f"adding a git worktree of {rev} ({commit[:12]}) at {path}")
        path.parent.mkdir(parents=True, exist_ok=True)
        git("worktree", "add", "--detach", str(path), commit)
    return Side("baseline", path, commit)


def new_side() -> Side:
    dirty = bool(git("status", "--porcelain", "--", "agentmem", "indexes", "api"))
    return Side("new", REPO_ROOT, git("rev-parse", "HEAD"), dirty)


# -- preloaded stores ---------------------------------------------------------------------


def preload_version(i: int, text: str, when: datetime) -> Any:
    """Memory `i` (1-based) of a preloaded store; the first KEYS carry the keys new writes supersede."""
    return memory_version(i, text, when, project=PROJECT, key=slot_key(i - 1) if i <= KEYS else None)


def export_chunks(
    texts: Sequence[str], vectors: np.ndarray, model: str, schema_version: int, base_time: datetime, chunk: int
) -> Iterator[tuple[int, bytes]]:
    """POST /v1/import bodies of `chunk` preloaded memories each, with how many each holds."""
    for lines in export_lines(texts, vectors, preload_version, model=model, schema_version=schema_version,
                              base_time=base_time, chunk=chunk):  # fmt: skip
        yield len(lines) - 1, b"".join(lines)


def store_key(texts: Sequence[str], size: int, model: str, commit: str) -> str:
    h = hashlib.sha256(f"{STORE_FORMAT}\x00{size}\x00{KEYS}\x00{model}\x00{commit}\x00".encode())
    for t in texts[:size]:
        h.update(t.encode("utf-8") + b"\x00")
    return h.hexdigest()[:16]


def preloaded_store(
    size: int, texts: Sequence[str], vectors: np.ndarray, model: str, baseline: Side, cache: Path, args: Any
) -> tuple[Path, dict[str, Any]]:
    """The cached data directory of `size` memories, built by the baseline server if missing."""
    import httpx

    final = cache / f"store-{size}-{store_key(texts, size, model, baseline.commit)}"
    meta_path = final / "store.json"
    if meta_path.exists() and not args.rebuild_stores:
        meta: dict[str, Any] = json.loads(meta_path.read_text())
        say(f"store {size:,}: from the cache ({final.name})")
        return final / "data", {**meta, "cached": True}
    if final.exists():
        shutil.rmtree(final)
    building = cache / f"{final.name}.building-{os.getpid()}"
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(parents=True)
    server = SideServer(baseline, building / "data", building, ready_timeout=args.ready_timeout, stop_timeout=120)
    say(f"store {size:,}: building with the baseline server (POST /v1/import, {IMPORT_CHUNK:,} per request)")
    try:
        server.start()
        with httpx.Client(base_url=server.url, headers=server.headers(), timeout=1800.0) as http:
            schema = int(http.get("/v1/stats").raise_for_status().json()["schema_version"])
            base_time = datetime.now(UTC).replace(microsecond=0)
            t0 = time.perf_counter()
            with progress(total=size, desc=f"import {size:,}", unit="memory") as bar:
                for count, body in export_chunks(texts[:size], vectors[:size], model, schema, base_time, IMPORT_CHUNK):
                    r = http.post("/v1/import", content=body, headers={"Content-Type": "application/x-ndjson"})
                    if not 200 <= r.status_code < 300 or r.json().get("imported") != count:
                        raise RuntimeError(f"import failed: HTTP {r.status_code}: {r.text[:500]}")
                    bar.update(count)
            import_s = time.perf_counter() - t0
            for _ in range(600):  # the indexes apply the outbox: /ready says when they caught up
                if http.get("/ready").status_code == 200:
                    break
                time.sleep(0.5)
            stats = http.get("/v1/stats").raise_for_status().json()
            check = http.post("/v1/check").raise_for_status().json()
        if not (stats["latest_active"] == stats["bm25_docs"] == stats["vector_docs"] == size):
            raise RuntimeError(f"store {size}: unexpected counts after import: {stats}")
        if any(ix["missing"] or ix["extra"] for ix in check["indexes"]):
            raise RuntimeError(f"store {size}: check not ok after import: {check}")
        server.stop()
        if server.stop_info.get("signal") != "SIGTERM" or not server.stop_info.get("clean"):
            raise RuntimeError(f"store {size}: the baseline server did not stop cleanly: {server.stop_info}")
    except BaseException:
        server.stop()
        shutil.rmtree(building, ignore_errors=True)
        raise
    server.config_path.unlink(missing_ok=True)  # it holds the token's secret
    meta = {
        "size": size,
        "built_by": baseline.commit,
        "built_at": base_time.isoformat(),
        "schema_version": schema,
        "import_seconds": round(import_s, 1),
        "import_per_second": round(size / import_s, 1),
        "import_chunk": IMPORT_CHUNK,
        "keys": KEYS,
        "disk_mb": round(sum(f.stat().st_size for f in (building / "data").rglob("*") if f.is_file()) / 2**20, 1),
    }
    meta_path = building / "store.json"
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    os.replace(building, final)
    say(f"  built in {import_s:.0f} s ({meta['import_per_second']:.0f} memories/s), {meta['disk_mb']} MB")
    return final / "data", {**meta, "cached": False}


# -- in process ---------------------------------------------------------------------------


def inprocess(
    sides: Sequence[Side], store: Path, texts: Sequence[str], vectors: np.ndarray, size: int, model: str,
    work: Path, args: Any, notes: list[str],
) -> dict[str, Any]:  # fmt: skip
    """Sequential remember() and bulk import, each side in its own subprocess, rounds interleaved."""
    n = args.inprocess_warmup + args.inprocess_calls
    ops = [write_body(texts[size:], j)[0] for j in range(n)]
    m = args.import_memories
    spec_texts = [o["content"] for o in ops]
    vec_path, imp_path = work / "inprocess-vectors.npy", work / "inprocess-import.jsonl"
    np.save(vec_path, np.ascontiguousarray(vectors[size : size + n]))
    base_time = datetime.now(UTC).replace(microsecond=0)
    with open(imp_path, "wb") as f:
        for _count, body in export_chunks(texts[:m], vectors[:m], model, 1, base_time, m):
            f.write(body)
    runs: dict[str, list[dict[str, Any]]] = {s.name: [] for s in sides}
    for r in range(args.inprocess_rounds):
        for side in sides:
            run_dir = work / f"inprocess-{side.name}-{r + 1}"
            copy_store(store, run_dir / "store")
            spec = {"store": str(run_dir / "store"), "ops": ops, "warmup": args.inprocess_warmup,
                    "vectors": str(vec_path), "vector_texts": spec_texts, "import_file": str(imp_path),
                    "max_seconds": args.inprocess_seconds,
                    "import_dir": str(run_dir / "import"), "project": PROJECT}  # fmt: skip
            (run_dir / "spec.json").write_text(json.dumps(spec))
            say(f"  in process, round {r + 1}/{args.inprocess_rounds}: {side.name}")
            res = run_child(side, run_dir)
            runs[side.name].append(res)
            rem, imp = res["remember"], res["import"]
            say(
                f"    remember {rem['calls_per_second']}/s, p50 {np.percentile(rem['latency_ms'], 50):.2f} ms; "
                f"import {imp['memories_per_second']}/s; other cores {res['cpu'].get('other_cores')}"
            )
            shutil.rmtree(run_dir, ignore_errors=True)
    summary = {s: summarise_inprocess(rs) for s, rs in runs.items()}
    for s, v in summary.items():
        misses = v["remember"]["embed_misses"] + v["import"]["embed_misses"]
        if misses:
            notes.append(f"in process, {s}: {misses} text(s) were embedded by the model (not precomputed)")

    return {
        "size": size,
        "rounds": args.inprocess_rounds,
        "key_every": KEY_EVERY,
        "import_memories": m,
        "sides": summary,
        "ratio": compare_inprocess(summary.get("baseline"), summary.get("new")),
        "runs": {
            s: [{**r, "remember": {k: v for k, v in r["remember"].items() if k != "latency_ms"}} for r in rs]
            for s, rs in runs.items()
        },  # fmt: skip
    }


def run_child(side: Side, run_dir: Path) -> dict[str, Any]:
    """One in-process run in its own interpreter; its result, checked for the code it imported, with the
    CPU it used and what the rest of the machine used meanwhile."""
    out = run_dir / "out.json"
    log = run_dir / "child.log"
    busy0, kids0, t0 = machine_busy_seconds(), resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    with open(log, "wb") as f:
        cmd = [sys.executable, str(CHILD), str(run_dir / "spec.json"), str(out)]
        proc = subprocess.Popen(cmd, cwd=run_dir, env=side.env(), stdout=f, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)  # fmt: skip
        try:
            code = proc.wait(1800)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
    wall = time.perf_counter() - t0
    kids1, busy1 = resource.getrusage(resource.RUSAGE_CHILDREN), machine_busy_seconds()
    if code != 0 or not out.exists():
        raise RuntimeError(f"in-process child for {side.name} exited with {code}:\n{log.read_text()[-3000:]}")
    res: dict[str, Any] = json.loads(out.read_text())
    check_modules(side, res["modules"], "in-process child")
    child = (kids1.ru_utime - kids0.ru_utime) + (kids1.ru_stime - kids0.ru_stime)
    res["cpu"] = {"window_seconds": round(wall, 2), "child_cores": round(child / wall, 2)}
    if busy0 is not None and busy1 is not None:
        res["cpu"]["other_cores"] = round(max(0.0, busy1 - busy0 - child) / wall, 2)  # the rest of the machine
    return res


# -- over HTTP ----------------------------------------------------------------------------


def bench_size(
    size: int, store: Path, sides: Sequence[Side], pool: ClientPool, queries: Sequence[str], texts: Sequence[str],
    work: Path, args: Any, notes: list[str], bar: Any,
) -> dict[str, Any]:  # fmt: skip
    """Both servers on copies of one store; every (mix, clients) in interleaved rounds."""
    fresh = texts[size:]
    servers = {s.name: SideServer(s, work / f"{size}-{s.name}" / "data", work / f"{size}-{s.name}",
                                  ready_timeout=args.ready_timeout, stop_timeout=120) for s in sides}  # fmt: skip
    entry: dict[str, Any] = {"size": size, "configs": [], "windows": [], "servers": {}}
    try:
        for srv in servers.values():
            copy_store(store, srv.data_dir)
            srv.launch()
        for name, srv in servers.items():
            srv.wait_ready()
            say(f"  {name} server on {srv.url} after {srv.started_seconds} s, importing {srv.modules['agentmem']}")
        for name, srv in servers.items():
            pool.reset_texts(name)
            entry["servers"][name] = {"warmup": warm_up(srv, pool, queries, fresh, 20, 5, args.timeout)}
            settle(srv.pid)
        for mix, (write_percent, _label) in MIXES.items():
            if mix not in args.mix_list:
                continue
            for clients in args.client_list:
                windows: dict[str, list[dict[str, Any]]] = {s.name: [] for s in sides}
                for r in range(args.repeats):
                    for side in sides:
                        srv = servers[side.name]
                        settings = {"write_percent": write_percent, "duration": args.duration,
                                    "max_requests": args.max_requests, "timeout": args.timeout,
                                    "text_offset": size}  # fmt: skip
                        res = pool.run(srv, clients, settings)
                        w = summarise_window(res["payloads"], res["failures"])
                        w.update(side=side.name, size=size, mix=mix, clients=clients, round=r + 1, cpu=res["cpu"])
                        w["settle_seconds"] = settle(srv.pid)
                        windows[side.name].append(w)
                        bar.update(1)
                        say(
                            f"  {size:,} {mix:<5} {clients:>2} clients, round {r + 1}, {side.name:<8}: "
                            f"{w['rps']:8.1f} req/s, {w['errors']} errors, "
                            + ", ".join(f"{op} p50 {v['latency_ms'].get('p50', 0):.1f} p99 "
                                        f"{v['latency_ms'].get('p99', 0):.0f} ms" for op, v in w["ops"].items())
                            + f", other {w['cpu'].get('other_cores')} cores"
                        )  # fmt: skip
                        for f in w["client_failures"]:
                            notes.append(f"{size:,} {mix} {clients} clients {side.name}: {f.splitlines()[-1][:300]}")
                cfg = {name: summarise_config(ws) for name, ws in windows.items()}
                entry["configs"].append({"mix": mix, "clients": clients, "sides": cfg,
                                         "ratio": compare(cfg.get("baseline"), cfg.get("new"))})  # fmt: skip
                entry["windows"] += [{k: v for k, v in w.items() if k != "_lat"} for ws in windows.values() for w in ws]
        for name, srv in servers.items():
            entry["servers"][name].update(srv.rss_mb())
            problems = srv.log_problems()
            if problems:
                entry["servers"][name]["log_problems"] = problems
                notes.append(f"{size:,}, {name} server log: {len(problems)} warning/error line(s): {problems[0][:200]}")
    finally:
        for name, srv in servers.items():
            srv.stop()
            entry["servers"].setdefault(name, {}).update(
                start_seconds=srv.started_seconds, modules=srv.modules, stop=srv.stop_info
            )
            if srv.stop_info and not srv.stop_info.get("clean"):
                notes.append(f"{size:,}, {name} server stop: {srv.stop_info}; log tail: {srv.log_tail(3)[-300:]}")
            shutil.rmtree(srv.work, ignore_errors=True)
    recycled = sum(c["sides"][s]["recycled_texts"] for c in entry["configs"] for s in c["sides"])
    if recycled:
        notes.append(f"{size:,}: {recycled} write(s) reused a text with a marker (the unused texts ran out)")
    return entry


# -- main ---------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = parser(NAME, __doc__, data=DEFAULT_DATA, work_dir=True, seed=True)
    p.add_argument("--baseline", default=DEFAULT_BASELINE, help="the commit to compare with (default %(default)s)")
    p.add_argument("--sizes", default="10000,100000", help="store sizes, comma separated (default %(default)s)")
    p.add_argument("--mixes", default=",".join(MIXES), help="of read, mixed, write (default %(default)s)")
    add_load_arguments(p, clients="1,4,8,16", repeats=2, duration=8.0, max_requests=2000, timeout=60.0,
                       ready_timeout=600.0)  # fmt: skip
    p.add_argument("--inprocess-calls", type=int, default=300, help="timed remember() calls per round (300)")
    p.add_argument(
        "--inprocess-seconds", type=float, default=30.0, help="seconds of timed remember() calls per round at most (30)"
    )
    p.add_argument("--inprocess-warmup", type=int, default=10, help="untimed remember() calls first (10)")
    p.add_argument("--inprocess-rounds", type=int, default=2, help="in-process rounds per side (default 2)")
    p.add_argument("--import-memories", type=int, default=10_000, help="memories in the bulk import (10000)")
    p.add_argument("--skip-http", action="store_true", help="only the in-process figure")
    p.add_argument("--skip-inprocess", action="store_true", help="only the HTTP rounds")
    p.add_argument("--rebuild-stores", action="store_true", help="build the preloaded stores again")
    p.add_argument("--quick", action="store_true", help="size 2000, 1 and 8 clients, 3 s windows: a fast check")
    p.add_argument("--cache", type=Path, default=CACHE_DIR / NAME, help="stores and baseline worktree (%(default)s)")
    args = p.parse_args(argv)
    if args.quick:
        args.sizes, args.clients, args.duration, args.max_requests = "2000", "1,8", 3.0, 500
        args.inprocess_calls, args.inprocess_seconds, args.import_memories = 100, 15.0, 2000
    args.size_list = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    args.mix_list = [m.strip() for m in args.mixes.split(",") if m.strip()]
    if not args.size_list or min(args.size_list) < KEYS:
        p.error(f"--sizes: give numbers of at least {KEYS}")
    if not args.mix_list or set(args.mix_list) - set(MIXES):
        p.error(f"--mixes: choose from {', '.join(MIXES)}")
    check_load_arguments(p, args)
    if min(args.inprocess_calls, args.import_memories, args.inprocess_rounds, args.inprocess_seconds) <= 0:
        p.error("--inprocess-calls, --inprocess-seconds, --import-memories and --inprocess-rounds must be positive")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)

    stop_on_sigterm()
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    started = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="agentmem-concurrency-", dir=args.work_dir))
    try:
        results = run(args, command_line(NAME, argv), work, started)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results["total_seconds"] = round(time.perf_counter() - started, 1)
    publish(results, args.out, NAME, render_markdown, plot)
    say(f"wrote {args.out / (NAME + '.json')}, {NAME}.md and {NAME}.png in {results['total_seconds']} s")
    return 0


def run(args: argparse.Namespace, command: str, work: Path, started: float) -> dict[str, Any]:
    """Everything but the result files: data, the two sides, stores, in process, over HTTP."""
    timings: dict[str, float] = {}
    notes: list[str] = []
    say(f"reading data from {args.data}")
    corpus = Corpus.load(args.data, seed=args.seed)
    texts, queries = corpus.texts, corpus.queries
    spare = 2000  # unused texts every store keeps for new writes
    if max(args.size_list) > len(texts) - spare:
        cut = len(texts) - spare
        notes.append(f"only {len(texts):,} distinct texts: sizes cut to at most {cut:,}")
        args.size_list = sorted({min(s, cut) for s in args.size_list})
    ip_size = min(args.size_list)
    need = max(max(args.size_list), ip_size + args.inprocess_warmup + args.inprocess_calls, args.import_memories)
    if need > len(texts):
        raise SystemExit(f"need {need:,} texts for these settings, the corpus has {len(texts):,}")

    args.cache.mkdir(parents=True, exist_ok=True)
    sides = [baseline_side(args.baseline, args.cache), new_side()]
    probed = {s.name: probe(s, work) for s in sides}  # fail now, not after embedding and building the stores

    from indexes.embed import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder(cache_size=0)  # loads the model only if an embedding is missing
    embedding_stats: dict[str, Any] = {}
    vectors = cached_embeddings(texts, need, embedder.embed, embedder.name, embedder.dim, stats=embedding_stats)
    timings["data"] = round(time.perf_counter() - started, 1)

    results: dict[str, Any] = {
        "command": command,
        "machine": machine_info(),
        "settings": {
            "baseline": args.baseline, "sizes": args.size_list, "clients": args.client_list, "mixes": args.mix_list,
            "repeats": args.repeats, "duration": args.duration, "max_requests": args.max_requests,
            "timeout": args.timeout, "inprocess_calls": args.inprocess_calls,
            "inprocess_seconds": args.inprocess_seconds,
            "inprocess_warmup": args.inprocess_warmup, "inprocess_rounds": args.inprocess_rounds,
            "import_memories": args.import_memories, "keys": KEYS, "key_every": KEY_EVERY, "project": PROJECT,
            "data": str(args.data), "seed": args.seed, "quick": args.quick,
        },
        "sides": {s.name: {"root": str(s.root), "commit": s.commit, "dirty": s.dirty,
                           "rev": args.baseline if s.name == "baseline" else "working tree",
                           "modules": probed[s.name]} for s in sides},
        "corpus": corpus.sources,
        "corpus_embedding": embedding_stats,
        "stores": {},
        "http": [],
        "notes": notes,
        "timings": timings,
    }  # fmt: skip
    if sides[1].dirty:
        notes.append("the new side (agentmem/, indexes/, api/) had uncommitted changes: see sides.new")
    if sides[0].commit == sides[1].commit and not sides[1].dirty:
        notes.append("both sides are the same commit: the ratios show the noise of the method (expect about 1)")

    t0 = time.perf_counter()
    stores: dict[int, Path] = {}
    for size in sorted(set(args.size_list) | ({ip_size} if not args.skip_inprocess else set())):
        stores[size], results["stores"][str(size)] = preloaded_store(
            size, texts, vectors, embedder.name, sides[0], args.cache, args
        )
    timings["stores"] = round(time.perf_counter() - t0, 1)
    if not args.skip_inprocess:
        t0 = time.perf_counter()
        say(f"in process on the {ip_size:,} store: {args.inprocess_calls} remember() calls, "
            f"import of {args.import_memories:,}, {args.inprocess_rounds} round(s) per side")  # fmt: skip
        results["inprocess"] = inprocess(sides, stores[ip_size], texts, vectors, ip_size, embedder.name, work, args,
                                         notes)  # fmt: skip
        timings["inprocess"] = round(time.perf_counter() - t0, 1)
    if not args.skip_http:
        t0 = time.perf_counter()
        pool = ClientPool(max(args.client_list), [s.name for s in sides], queries, texts)
        try:
            total = len(args.size_list) * len(args.mix_list) * len(args.client_list) * args.repeats * len(sides)
            say(f"over HTTP: {total} windows of up to {args.duration:g} s")
            with progress(total=total, desc="windows", unit="window") as bar:
                for size in args.size_list:
                    ts = time.perf_counter()
                    results["http"].append(
                        bench_size(size, stores[size], sides, pool, queries, texts, work, args, notes, bar)
                    )
                    timings[f"http {size}"] = round(time.perf_counter() - ts, 1)
        finally:
            pool.close()
        timings["http"] = round(time.perf_counter() - t0, 1)

    errors = sum(c["sides"][s]["errors"] for h in results["http"] for c in h["configs"] for s in c["sides"])
    if errors:
        notes.append(f"{errors} request(s) failed (non-2xx or transport errors): see windows in the JSON")
    busy = [b for h in results["http"] for w in h["windows"] if (b := w["cpu"].get("other_cores")) is not None]
    if busy and max(busy) >= 0.3:
        notes.append(f"other processes used up to {max(busy):.2f} cores (median {float(np.median(busy)):.2f}) "
                     "during the windows: contention on this shared machine")  # fmt: skip
    results["targets"] = targets(results)
    return results


if __name__ == "__main__":
    sys.exit(main())
