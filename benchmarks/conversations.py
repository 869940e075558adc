"""Shared pieces of the retrieval benchmarks (LongMemEval, LoCoMo): a content-keyed embedding
cache, a settable clock, retrieval metrics, roll-up of memory hits to sessions, and the plain
baseline built straight on the libraries (Tantivy BM25 with English stemming, MiniLM cosine, RRF).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import tantivy

from benchmarks.harness.cli import progress, say
from benchmarks.harness.paths import CACHE_DIR

RRF_K = 60
_WORD = re.compile(r"\w+", re.UNICODE)


# -- embeddings, cached by content ------------------------------------------------


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class VectorCache:
    """Real model vectors kept on disk, keyed by a hash of the exact text: reruns embed nothing.

    Two files under `cache_dir`: `content-vectors-<name>.keys` (one hash a line) and `.npy`, where
    `name` is the model's unless given (benchmarks.embedding names them per embedder kind too, so that
    one runtime's vectors never mix with another's).
    """

    def __init__(
        self,
        embed: Callable[[list[str]], np.ndarray],
        model: str,
        dim: int,
        cache_dir: Path = CACHE_DIR,
        name: str | None = None,
    ):
        self._embed = embed
        self.model, self.dim = model, dim
        self.name = name or model
        cache_dir.mkdir(parents=True, exist_ok=True)
        self._keys_path = cache_dir / f"content-vectors-{self.name}.keys"
        self._vec_path = cache_dir / f"content-vectors-{self.name}.npy"
        self._rows: dict[str, int] = {}
        self._vectors = np.zeros((0, dim), dtype=np.float32)
        self.embedded = 0
        if self._keys_path.exists() and self._vec_path.exists():
            keys = self._keys_path.read_text().split()
            vectors = np.load(self._vec_path)
            if vectors.shape == (len(keys), dim):
                self._rows = {k: i for i, k in enumerate(keys)}
                self._vectors = vectors.astype(np.float32, copy=False)
            else:
                say(f"ignoring the embedding cache {self._vec_path}: {vectors.shape} for {len(keys)} keys")

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def path(self) -> Path:
        """The vectors' file (the keys are beside it)."""
        return self._vec_path

    def keys(self) -> set[str]:
        """The text keys (`text_key`) of every cached vector."""
        return set(self._rows)

    def vectors_of(self, keys: Sequence[str]) -> np.ndarray:
        """The cached vectors of these text keys, in their order."""
        return self._vectors[[self._rows[k] for k in keys]]

    def merge(self, other: VectorCache) -> int:
        """Take (and save) the vectors `other` holds that this cache does not, e.g. a cache built in parallel
        in another folder; both must be of one model and kind. How many were taken."""
        if (other.name, other.dim) != (self.name, self.dim):
            raise ValueError(f"cannot merge {other.name} ({other.dim}) vectors into {self.name} ({self.dim})")
        new = [k for k in other.keys() if k not in self._rows]
        if new:
            base = len(self._vectors)
            self._vectors = np.concatenate([self._vectors, other.vectors_of(new)])
            self._rows.update({k: base + i for i, k in enumerate(new)})
            self._save()
        return len(new)

    def has(self, text: str) -> bool:
        """True when the vector of this exact text is cached."""
        return text_key(text) in self._rows

    def ensure(self, texts: Iterable[str], *, batch: int = 1024, desc: str = "embed") -> None:
        """Embed (and save) every text not cached yet, in batches, with a progress bar on a terminal."""
        todo = list(dict.fromkeys(t for t in texts if text_key(t) not in self._rows))
        if not todo:
            return
        say(f"embedding {len(todo)} texts with {self.name} (cached in {self._vec_path})")
        todo.sort(key=len)  # similar lengths batch together: less padding
        with progress(total=len(todo), desc=desc, unit="text") as bar:
            for start in range(0, len(todo), batch):
                chunk = todo[start : start + batch]
                self._add(chunk, np.asarray(self._embed(chunk), dtype=np.float32))
                self._save()
                bar.update(len(chunk))

    def _add(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        base = len(self._vectors)
        self._vectors = np.concatenate([self._vectors, vectors])
        for i, t in enumerate(texts):
            self._rows[text_key(t)] = base + i
        self.embedded += len(texts)

    def _save(self) -> None:
        keys = sorted(self._rows, key=self._rows.__getitem__)
        tmp_vec = self._vec_path.with_name(self._vec_path.name + ".tmp.npy")
        tmp_keys = self._keys_path.with_name(self._keys_path.name + ".tmp")
        np.save(tmp_vec, self._vectors)
        tmp_keys.write_text("\n".join(keys) + "\n")
        os.replace(tmp_vec, self._vec_path)
        os.replace(tmp_keys, self._keys_path)

    def get(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for `texts`, embedding any that are missing."""
        missing = [t for t in texts if text_key(t) not in self._rows]
        if missing:
            self.ensure(missing)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._vectors[[self._rows[text_key(t)] for t in texts]]


class CachedEmbedder:
    """An agentmem Embedder (indexes.embed protocol) that serves the real model's vectors from a VectorCache."""

    def __init__(self, cache: VectorCache) -> None:
        self.cache = cache
        self.name = cache.model
        self.dim = cache.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.cache.get(list(texts))

    def embed_query(self, text: str) -> np.ndarray:
        return self.cache.get([text])[0]


class Clock:
    """A clock the benchmark sets: sessions are written as of their date, recall runs as of the question's."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


# -- metrics ------------------------------------------------------------------------


def recall_any(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float:
    """1.0 when any relevant item is among the first k, else 0.0."""
    rel = set(relevant)
    return 1.0 if any(r in rel for r in ranked[:k]) else 0.0


def recall_all(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float:
    """The fraction of relevant items found among the first k (1.0 when there are none)."""
    rel = set(relevant)
    if not rel:
        return 1.0
    return len(rel & set(ranked[:k])) / len(rel)


def ndcg(ranked: Sequence[str], relevant: Iterable[str], k: int = 10, *, lme: bool = False) -> float:
    """Binary-relevance NDCG@k: gain 1 / log2(rank + 1) for each relevant item in the first k.

    With `lme=True`, the variant of LongMemEval's evaluation code, which gives rank 2 the full
    weight of rank 1 (its DCG is rel_1 + sum_{i>=2} rel_i / log2(i)).
    """
    rel = set(relevant)
    if not rel:
        return 0.0

    def gain(i: int) -> float:  # i is 0-based
        return 1.0 if lme and i == 0 else 1.0 / math.log2(i + 1 if lme else i + 2)

    dcg = sum(gain(i) for i, r in enumerate(ranked[:k]) if r in rel)
    ideal = sum(gain(i) for i in range(min(len(rel), k)))
    return dcg / ideal


def evidence_recall(ranked: Sequence[str], evidence: Iterable[str], k: int) -> tuple[float, float]:
    """(fraction of the evidence items among the first k, 1.0 if any of them is there else 0.0)."""
    ev = set(evidence)
    if not ev:
        return 0.0, 0.0
    found = len(ev & set(ranked[:k]))
    return found / len(ev), 1.0 if found else 0.0


# -- from memory hits to sessions ---------------------------------------------------

ROLLUPS = ("max", "sum3", "decay", "rrf", "rrf+max", "rrf-whole+max")
# Session-level fusion (see roll_up): which session rankings each rrf roll-up fuses.
SESSION_LISTS = {
    "rrf": ("bm25", "vector"),
    "rrf+max": ("bm25", "vector", "score"),
    "rrf-whole+max": ("bm25_whole", "vector_turns", "score"),
}


class SessionHit(NamedTuple):
    """One recalled memory as the roll-ups see it: its session and score first (so that a plain
    (session, score) pair serves too), then why it ranked: its place in each list, how well it fit
    the recall's time window, and whether it is a whole session rather than one turn."""

    session: str
    score: float
    bm25_rank: int | None = None
    vector_rank: int | None = None
    time_fit: float | None = None
    whole: bool = False

    @classmethod
    def of(cls, hit: Any, whole: bool) -> SessionHit:
        p = hit.parts
        return cls(hit.memory.session or "", hit.score, p.bm25_rank, p.vector_rank, p.time_fit, whole)


def roll_up(hits: Sequence[tuple[str, float]] | Sequence[SessionHit], how: str = "max") -> list[str]:
    """Rank sessions from ranked memory hits (session, score), best first.

    max    a session scores its best hit (its first appearance in the list)
    sum3   the sum of its three best hits' scores: several matching turns add up
    decay  its hits' scores weighed 1, 1/2, 1/4, ... best first: the best hit counts most,
           further ones break ties and lift sessions with several good turns
    rrf    fuse at the level of sessions, not memories: rank sessions by their best BM25 rank and by
           their best vector rank (from each hit's parts), then reciprocal rank fusion of the two
    rrf+max          the same with a third ranking, by best final score (currentness, time window)
    rrf-whole+max    BM25 of the whole-session memory only, vectors of the turns only, and best score
    Ties keep the order of first appearance.
    """
    if how in SESSION_LISTS:
        return session_rrf([h if isinstance(h, SessionHit) else SessionHit(h[0], h[1]) for h in hits],
                           SESSION_LISTS[how])  # fmt: skip
    per: dict[str, list[float]] = {}
    for h in hits:
        per.setdefault(h[0], []).append(h[1])
    if how == "max":
        score = {k: max(v) for k, v in per.items()}
    elif how == "sum3":
        score = {k: sum(sorted(v, reverse=True)[:3]) for k, v in per.items()}
    elif how == "decay":
        score = {k: sum(x * 0.5**i for i, x in enumerate(sorted(v, reverse=True))) for k, v in per.items()}
    else:
        raise ValueError(f"unknown roll-up {how!r}: choose one of {', '.join(ROLLUPS)}")
    first = {k: i for i, k in enumerate(per)}
    return sorted(per, key=lambda k: (-score[k], first[k]))


def session_rrf(hits: Sequence[SessionHit], lists: Sequence[str]) -> list[str]:
    """Sessions ranked by reciprocal rank fusion (k=60) of session rankings, each by one signal of its
    hits: "bm25" / "vector" (the best rank among its hits in that list), "bm25_whole" (the rank of its
    whole-session memory), "vector_turns" (the best rank among its turns), "score" (its best score)."""
    first: dict[str, int] = {}
    for i, h in enumerate(hits):
        first.setdefault(h.session, i)
    fused = dict.fromkeys(first, 0.0)
    for signal in lists:
        best: dict[str, float] = {}
        for h in hits:
            if signal == "score":
                key = -h.score
            elif signal in ("bm25", "bm25_whole"):
                if h.bm25_rank is None or (signal == "bm25_whole" and not h.whole):
                    continue
                key = float(h.bm25_rank)
            else:
                if h.vector_rank is None or (signal == "vector_turns" and h.whole):
                    continue
                key = float(h.vector_rank)
            best[h.session] = min(best.get(h.session, math.inf), key)
        for rank, session in enumerate(sorted(best, key=lambda k: (best[k], first[k])), 1):
            fused[session] += 1.0 / (RRF_K + rank)
    return sorted(first, key=lambda k: (-fused[k], first[k]))


# -- the plain baseline -------------------------------------------------------------


def query_words(text: str) -> str:
    """Plain lower-case words, so that no question text is read as Tantivy query syntax."""
    return " ".join(w.lower() for w in _WORD.findall(text))


class SessionBM25:
    """An in-memory Tantivy index (English stemming) over a few documents named by string ids."""

    def __init__(self, docs: Mapping[str, str]) -> None:
        sb = tantivy.SchemaBuilder()
        sb.add_integer_field("n", stored=True, indexed=True, fast=True)
        sb.add_text_field("text", stored=False, tokenizer_name="en_stem")
        self._index = tantivy.Index(sb.build())
        writer = self._index.writer(heap_size=50_000_000, num_threads=1)
        self._names = list(docs)
        for n, name in enumerate(self._names):
            writer.add_document(tantivy.Document(n=n, text=docs[name]))
        writer.commit()
        writer.wait_merging_threads()
        self._index.reload()

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        words = query_words(query)
        if not words:
            return []
        q, _ = self._index.parse_query_lenient(words, ["text"])
        searcher = self._index.searcher()
        hits = searcher.search(q, k).hits
        return [(self._names[int(searcher.doc(addr)["n"][0])], float(s)) for s, addr in hits]


def cosine_ranking(
    query_vector: np.ndarray, vectors: np.ndarray, owners: Sequence[str], pool: str = "max"
) -> list[tuple[str, float]]:
    """Rank owners (e.g. sessions) by the cosine of their items' vectors to the query, max-pooled."""
    if len(owners) == 0:
        return []
    sims = vectors @ query_vector
    best: dict[str, float] = {}
    for owner, s in zip(owners, sims.tolist(), strict=True):
        if owner not in best or s > best[owner]:
            best[owner] = s
    return sorted(best.items(), key=lambda x: -x[1])


def rrf(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> list[str]:
    """Reciprocal rank fusion: sum of 1 / (k + rank) over the lists; ties keep first appearance."""
    score: dict[str, float] = {}
    for ranking in rankings:
        for rank, name in enumerate(ranking, 1):
            score[name] = score.get(name, 0.0) + 1.0 / (k + rank)
    return sorted(score, key=lambda n: -score[n])


def mean(values: Sequence[float]) -> float:
    return round(100.0 * sum(values) / len(values), 1) if values else float("nan")
