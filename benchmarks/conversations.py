"""Shared pieces of the retrieval benchmarks (LongMemEval, LoCoMo): retrieval metrics, roll-up of memory
hits to sessions, and the plain baseline built straight on the libraries (Tantivy BM25 with English
stemming, MiniLM cosine, RRF).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import tantivy

RRF_K = 60
_WORD = re.compile(r"\w+", re.UNICODE)


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
