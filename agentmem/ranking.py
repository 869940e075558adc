"""Recall scoring: reciprocal rank fusion of BM25 and vector ranks, weighed by currentness."""

from __future__ import annotations

import math
from datetime import datetime
from typing import NamedTuple

import msgspec

from agentmem.kinds import KINDS, KindSpec
from agentmem.records import MemoryVersion, ScoreParts
from agentmem.retention import days_between, effective_confidence

RRF_K = 60


class Weights(msgspec.Struct, frozen=True):
    """How much currentness moves relevance: score = relevance x (1 - w + w x currentness)."""

    currentness: float = 0.3
    fusion: float = 0.5  # share of reciprocal rank fusion in relevance; the rest is relative score
    confidence: float = 0.5
    salience: float = 0.25
    recency: float = 0.25
    recency_half_life_days: float = 90.0
    # A time window's boost: score x (1 + w x fit), fit 1 inside the window (agentmem.timewindow); `time` for an
    # explicit time_range, `time_query` for a window read from the query (chosen on LongMemEval: docs/design/index.md).
    time: float = 0.5
    time_query: float = 0.5
    # A memory that is a question and its answer, asking the query's own question ("Who won the Super Bowl
    # last year? ...", asked "who won the super bowl last year"): score x (1 + w). It is the slot asked for.
    asked: float = 0.5


def rrf(ranks: list[int | None]) -> float:
    """Reciprocal rank fusion over 1-based ranks, normalised so a top hit in every list scores 1."""
    best = len(ranks) / (RRF_K + 1)
    return sum(1.0 / (RRF_K + r) for r in ranks if r is not None) / best


class Terms(NamedTuple):
    """What a candidate's score is made of: relevance, and the currentness its confidence, salience
    and recency make."""

    relevance: float
    confidence: float
    recency: float
    current: float


def terms(
    m: MemoryVersion,
    *,
    now: datetime,
    bm25: tuple[int, float] | None,
    vector: tuple[int, float] | None,
    best: tuple[float, float],
    weights: Weights,
    kinds: dict[str, KindSpec] = KINDS,
) -> Terms:
    """The terms of one candidate; `bm25` and `vector` are (rank, raw score).

    Relevance blends reciprocal rank fusion with each list's score relative to its best hit
    (`best` = top BM25 score, top cosine), so that a far better match is not levelled to a
    rank one place higher.
    """
    fused = rrf([bm25[0] if bm25 else None, vector[0] if vector else None])
    magnitude = 0.0
    for hit, top in ((bm25, best[0]), (vector, best[1])):
        if hit is not None and top > 0:
            magnitude += max(0.0, hit[1]) / top / 2
    relevance = weights.fusion * fused + (1.0 - weights.fusion) * magnitude
    conf = effective_confidence(m, now, kinds)
    recency = math.exp(-math.log(2) * days_between(m.valid_from, now) / weights.recency_half_life_days)
    current = weights.confidence * conf + weights.salience * m.salience + weights.recency * recency
    return Terms(relevance, conf, recency, current)


def total(t: Terms, weights: Weights) -> float:
    """The score the terms make: relevance x (1 - w + w x currentness)."""
    return t.relevance * (1.0 - weights.currentness + weights.currentness * t.current)


def parts(m: MemoryVersion, t: Terms, bm25: tuple[int, float] | None, vector: tuple[int, float] | None) -> ScoreParts:
    """Why a hit ranked where it did, as a reply shows it."""
    return ScoreParts(
        bm25_rank=bm25[0] if bm25 else None,
        vector_rank=vector[0] if vector else None,
        bm25=round(bm25[1], 4) if bm25 else None,
        cosine=round(vector[1], 4) if vector else None,
        relevance=round(t.relevance, 6),
        effective_confidence=round(t.confidence, 6),
        recency=round(t.recency, 6),
        salience=m.salience,
    )
