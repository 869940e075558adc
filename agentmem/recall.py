"""Recall's building blocks: fusing BM25 and vector hits into ranked Hits, and as_of search in DuckDB."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from agentmem.kinds import KINDS, KindSpec
from agentmem.ranking import Weights, score
from agentmem.records import Hit, MemoryVersion
from agentmem.store import COLUMNS, Store, to_version
from agentmem.text import tokens

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


def as_of_candidates(
    store: Store,
    model: str,
    query: str,
    query_vector: np.ndarray,
    when: datetime,
    n: int,
    filters: list[str],
    params: list[Any],
) -> tuple[list[MemoryVersion], Ranked, Ranked]:
    """Every version valid at `when` (valid_from <= when < valid_to), ranked by cosine in DuckDB,
    plus a keyword-overlap ranking of the same versions (the BM25 index holds only current ones)."""
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
    rows = (
        store.cursor()
        .execute(
            f"SELECT {cols}, list_cosine_similarity(e.vector, ?::FLOAT[]) AS cos FROM memories m "
            f"JOIN embeddings e ON e.content_hash = m.content_hash AND e.model = ? WHERE {where} "
            f"ORDER BY cos DESC LIMIT {int(n)}",
            [query_vector.tolist(), model, *params, when, when, when],
        )
        .fetchall()
    )
    versions = [to_version(r[:-1]) for r in rows]
    vector_hits = [(r[0], float(r[-1])) for r in rows]
    q = set(tokens(query))
    overlap = [(v.id, len(q & set(tokens(v.content))) / max(1, len(q))) for v in versions]
    text_hits = sorted(((i, s) for i, s in overlap if s > 0), key=lambda x: -x[1])
    return versions, text_hits, vector_hits
