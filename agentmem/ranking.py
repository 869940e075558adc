"""Recall scoring: reciprocal rank fusion of BM25 and vector ranks (normalised so that a hit first
in both scores 1), weighed by currentness."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import NamedTuple

import msgspec

from agentmem.kinds import KINDS, KindSpec
from agentmem.records import MemoryVersion, ScoreParts
from agentmem.retention import days_between, effective_confidences

RRF_K = 60
RRF_BEST = 2 / (RRF_K + 1)  # reciprocal rank fusion of a hit first in both rankings: fused scores are over it
_LN2 = math.log(2)


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


class Terms(NamedTuple):
    """What a candidate's score is made of: relevance, and the currentness its confidence, salience
    and recency make."""

    relevance: float
    confidence: float
    recency: float
    current: float


def terms(
    versions: Sequence[MemoryVersion],
    *,
    now: datetime,
    bm25: Mapping[int, tuple[int, float]],
    vector: Mapping[int, tuple[int, float]],
    best: tuple[float, float],
    weights: Weights,
    kinds: dict[str, KindSpec] = KINDS,
) -> list[Terms]:
    """The terms of each candidate, in order; `bm25` and `vector` give a candidate's (rank, raw
    score) in each ranking by memory id. One pass over a whole pool: recall scores ~100 a query.

    Relevance blends reciprocal rank fusion with each list's score relative to its best hit
    (`best` = top BM25 score, top cosine), so that a far better match is not levelled to a
    rank one place higher.
    """
    top_bm25, top_cosine = best
    out = []
    for m, conf in zip(versions, effective_confidences(versions, now, kinds), strict=True):
        b, v = bm25.get(m.id), vector.get(m.id)
        fused = magnitude = 0.0
        if b is not None:
            fused += 1.0 / (RRF_K + b[0])
            if top_bm25 > 0:
                magnitude += max(0.0, b[1]) / top_bm25 / 2
        if v is not None:
            fused += 1.0 / (RRF_K + v[0])
            if top_cosine > 0:
                magnitude += max(0.0, v[1]) / top_cosine / 2
        relevance = weights.fusion * (fused / RRF_BEST) + (1.0 - weights.fusion) * magnitude
        recency = math.exp(-_LN2 * days_between(m.valid_from, now) / weights.recency_half_life_days)
        current = weights.confidence * conf + weights.salience * m.salience + weights.recency * recency
        out.append(Terms(relevance, conf, recency, current))
    return out


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
