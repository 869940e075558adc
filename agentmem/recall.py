"""Recall's building blocks: fusing BM25 and vector hits into ranked Hits, and as_of search in DuckDB."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from agentmem.kinds import KINDS, KindSpec
from agentmem.ranking import Weights, score
from agentmem.records import Hit, MemoryVersion
from agentmem.store import COLUMNS, Store, to_version
from agentmem.supersede import STOPWORDS
from agentmem.text import folded_words, stem, tokens

Ranked = list[tuple[int, float]]  # (id, raw score), best first


def fuse(
    candidates: Iterable[MemoryVersion],
    text_hits: Ranked,
    vector_hits: Ranked,
    *,
    now: datetime,
    k: int,
    weights: Weights,
    kinds: dict[str, KindSpec] = KINDS,
) -> list[Hit]:
    """Score each candidate from its place in both lists and its currentness; the best k, best first."""
    bm25 = {i: (rank, s) for rank, (i, s) in enumerate(text_hits, 1)}
    vec = {i: (rank, s) for rank, (i, s) in enumerate(vector_hits, 1)}
    best = (max((s for _, s in text_hits), default=0.0), max((s for _, s in vector_hits), default=0.0))
    hits = []
    for m in candidates:
        total, parts = score(
            m, now=now, bm25=bm25.get(m.id), vector=vec.get(m.id), best=best, weights=weights, kinds=kinds
        )
        hits.append(Hit(memory=m, score=round(total, 6), parts=parts, has_history=m.version > 1))
    hits.sort(key=lambda h: (-h.score, -h.memory.id))
    return hits[:k]


def sql_filters(
    project: str | None, agent: str | None, tiers: Sequence[str], kinds: Sequence[str]
) -> tuple[list[str], list[Any]]:
    """WHERE conditions (and their parameters) for the scope filters."""
    filters: list[str] = []
    params: list[Any] = []
    if project is not None:
        filters.append("project = ?")
        params.append(project)
    if agent is not None:
        filters.append("agent = ?")
        params.append(agent)
    for column, values in (("tier", tiers), ("kind", kinds)):
        if values:
            filters.append(f"{column} IN ({', '.join('?' * len(values))})")
            params.extend(values)
    return filters, params


def query_prefixes(query: str) -> set[str]:
    """The query's words as the starts of words to look for: accent-folded, lower case, no
    stopwords, each cut to what it shares with its stem ("policies" -> "polic", "stored" -> "stor")."""
    out = set()
    for word in set(folded_words(query)) - STOPWORDS:
        n = len(os.path.commonprefix([word, stem(word)]))
        out.add(word[:n] if n >= 3 else word)
    return out


def as_of_candidates(
    store: Store,
    model: str,
    query: str,
    query_vector: np.ndarray | None,
    when: datetime,
    n: int,
    filters: list[str],
    params: list[Any],
) -> tuple[list[MemoryVersion], Ranked, Ranked]:
    """Every version valid at `when` (valid_from <= when < valid_to), ranked by cosine in DuckDB,
    plus a keyword-overlap ranking of the same versions (the BM25 index holds only current ones).

    Without a query vector (the model is down) the versions are ranked by how many of the
    query's words their text contains, and there is no vector ranking."""
    where = " AND ".join(
        [
            *(f"m.{f}" for f in filters),
            "m.status <> 'deleted'",
            "m.valid_from <= ?",
            "(m.valid_to IS NULL OR m.valid_to > ?)",
            "(m.expires_at IS NULL OR m.expires_at > ?)",
        ]
    )
    cols = ", ".join(f"m.{c}" for c in COLUMNS)
    if query_vector is not None:
        score, score_params = "list_cosine_similarity(e.vector, ?::FLOAT[])", [query_vector.tolist()]
        source = "memories m JOIN embeddings e ON e.content_hash = m.content_hash AND e.model = ?"
        source_params: list[Any] = [model]
    else:
        words = sorted(query_prefixes(query), key=lambda w: (-len(w), w))[:16]
        if not words:
            return [], [], []
        score = " + ".join(["regexp_matches(lower(strip_accents(m.content)), ?)::INTEGER"] * len(words))
        score_params = [rf"\b{re.escape(w)}" for w in words]
        source, source_params = "memories m", []
        where += f" AND ({score}) > 0"
    rows = (
        store.cursor()
        .execute(
            f"SELECT {cols}, {score} AS score FROM {source} WHERE {where} ORDER BY score DESC, m.id DESC "
            f"LIMIT {int(n)}",
            [*score_params, *source_params, *params, when, when, when, *(score_params if query_vector is None else [])],
        )
        .fetchall()
    )
    versions = [to_version(r[:-1]) for r in rows]
    vector_hits = [(r[0], float(r[-1])) for r in rows] if query_vector is not None else []
    q = set(tokens(query))
    overlap = [(v.id, len(q & set(tokens(v.content))) / max(1, len(q))) for v in versions]
    text_hits = sorted(((i, s) for i, s in overlap if s > 0), key=lambda x: -x[1])
    return versions, text_hits, vector_hits
