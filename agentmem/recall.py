"""Recall's building blocks: fusing BM25 and vector hits into ranked Hits, and as_of search in DuckDB."""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import datetime

import msgspec
import numpy as np

from agentmem.filters import Filter
from agentmem.kinds import KINDS, KindSpec
from agentmem.ranking import Weights, parts, terms, total
from agentmem.records import Hit, MemoryVersion, TimeWindow
from agentmem.store import StoreOfRecord
from agentmem.supersede import STOPWORDS, question_slot
from agentmem.text import folded_words, stem, tokens
from agentmem.timewindow import fit, named_in

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
    window: TimeWindow | None = None,
    asked: str | None = None,
) -> list[Hit]:
    """Score each candidate from its place in both lists and its currentness, boosted by how well its
    valid_from fits the time `window` when there is one, and when it is a question and its answer that
    asks the question `asked` (`supersede.asked`: the query's own); the best k, best first."""
    bm25 = {i: (rank, s) for rank, (i, s) in enumerate(text_hits, 1)}
    vec = {i: (rank, s) for rank, (i, s) in enumerate(vector_hits, 1)}
    best = (max((s for _, s in text_hits), default=0.0), max((s for _, s in vector_hits), default=0.0))
    ranked = []
    boost = 0.0 if window is None else _time_weight(weights, window)
    for m in candidates:  # the terms of every candidate, once; the parts only for the k kept
        found = bm25.get(m.id), vec.get(m.id)
        t = terms(m, now=now, bm25=found[0], vector=found[1], best=best, weights=weights, kinds=kinds)
        s, fits = total(t, weights), None
        if window is not None:
            fits = _fit(m, window, kinds)
            s *= 1.0 + boost * fits
        same = asked is not None and _asks(m.content, asked)
        if same:
            s *= 1.0 + weights.asked
        ranked.append((round(s, 6), m, t, found, fits, same))
    ranked.sort(key=lambda x: (-x[0], -x[1].id))
    hits = []
    for s, m, t, found, fits, same in ranked[:k]:
        p = parts(m, t, *found)
        if fits is not None:
            p = msgspec.structs.replace(p, time_fit=round(fits, 6))
        if same:
            p = msgspec.structs.replace(p, asked=True)
        hits.append(Hit(memory=m, score=s, parts=p, has_history=m.version > 1))
    return hits


def query_prefixes(query: str) -> set[str]:
    """The query's words as the starts of words to look for: accent-folded, lower case, no
    stopwords, each cut to what it shares with its stem ("policies" -> "polic", "stored" -> "stor")."""
    out = set()
    for word in set(folded_words(query)) - STOPWORDS:
        n = len(os.path.commonprefix([word, stem(word)]))
        out.add(word[:n] if n >= 3 else word)
    return out


def as_of_candidates(
    store: StoreOfRecord,
    model: str,
    query: str,
    query_vector: np.ndarray | None,
    when: datetime,
    n: int,
    scope: Filter,
) -> tuple[list[MemoryVersion], Ranked, Ranked]:
    """Every version in `scope` valid at `when` (valid_from <= when < valid_to), ranked as
    `stored_candidates` ranks them (the BM25 index holds only current ones)."""
    return stored_candidates(store, model, query, query_vector, n, scope.narrow(exclude_deleted=True, valid_at=when))


def stored_candidates(
    store: StoreOfRecord, model: str, query: str, query_vector: np.ndarray | None, n: int, scope: Filter
) -> tuple[list[MemoryVersion], Ranked, Ranked]:
    """At most `n` versions in `scope` ranked by cosine in DuckDB, plus a keyword-overlap ranking
    of the same versions: for versions the indexes do not hold (past ones, superseded ones).

    Without a query vector (the model is down) the versions are ranked by how many of the
    query's words their text contains, and there is no vector ranking."""
    if query_vector is not None:
        nearest = store.nearest(scope, model, query_vector, n)
        versions = [v for v, _ in nearest]
        vector_hits = [(v.id, s) for v, s in nearest]
    else:
        words = sorted(query_prefixes(query), key=lambda w: (-len(w), w))[:16]
        versions, vector_hits = store.word_matches(scope, words, n), []
    q = set(tokens(query))
    overlap = [(v.id, len(q & set(tokens(v.content))) / max(1, len(q))) for v in versions]
    text_hits = sorted(((i, s) for i, s in overlap if s > 0), key=lambda x: -x[1])
    return versions, text_hits, vector_hits


def under_successors(hits: Iterable[Hit]) -> list[Hit]:
    """Current hits and superseded ones by score, best first, except that a superseded version
    never ranks above the current version of its lineage: it goes directly under it."""
    order = sorted(hits, key=lambda h: (-h.score, -h.memory.id))
    current = {h.memory.lineage_id for h in order if h.memory.is_latest}
    placed: set[int] = set()
    waiting: dict[int, list[Hit]] = {}
    out: list[Hit] = []
    for h in order:
        lineage = h.memory.lineage_id
        if not h.memory.is_latest and lineage in current and lineage not in placed:
            waiting.setdefault(lineage, []).append(h)
            continue
        out.append(h)
        if h.memory.is_latest:
            placed.add(lineage)
            out.extend(waiting.pop(lineage, []))
    return out


def _fit(m: MemoryVersion, window: TimeWindow, kinds: dict[str, KindSpec]) -> float:
    """How well a memory's time fits the window: a moment by its time, a lasting memory by its span, or
    fully when it names the query's time in the query's words (`timewindow.named_in`: "Who won the Super
    Bowl last year? ..." is about last year as of when it held, whenever it started)."""
    spec = kinds.get(m.kind)
    lasting = spec is None or not spec.moment
    got = fit(m.valid_from, window, lasting=lasting, valid_to=m.valid_to)
    return 1.0 if got < 1.0 and lasting and named_in(window, m.content) else got


def _asks(content: str, question: str) -> bool:
    """Whether a memory is a question and its answer that asks `question` (normalised)."""
    if "?" not in content:
        return False  # most memories: no question to read
    slot = question_slot(content)
    return slot is not None and slot[0] == question


def _time_weight(weights: Weights, window: TimeWindow) -> float:
    """The boost of a window: an explicit time_range's own weight, or that of a window read from the query."""
    return weights.time if window.source == "time_range" else weights.time_query
