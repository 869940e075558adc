"""The score stages of a pool of candidates, in this order, each a function of its own:

fusion   relevance from the candidate's places in both rankings, weighed by its currentness
         (`agentmem.ranking`)
time fit times (1 + w x fit) when the query names a time or the call gives a `time_range`
asked    times (1 + w) for a question and its answer that asks the query's own question
best     the best k as `Hit`s, with the parts of their score

Then, for a recall that also asks for superseded versions, `under_successors` merges the two pools.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import msgspec

from agentmem.kinds import KINDS, KindSpec
from agentmem.ranking import Terms, Weights, parts, terms, total
from agentmem.recall.candidates import Pool
from agentmem.records import Hit, MemoryVersion, TimeWindow
from agentmem.supersede import question_slot
from agentmem.timewindow import fit, named_in


class Scored(msgspec.Struct):
    """A candidate on its way through the stages: its terms, its (rank, raw score) in each ranking,
    the score so far, and what the time fit and asked stages found. Stages update it in place."""

    memory: MemoryVersion
    terms: Terms
    bm25: tuple[int, float] | None
    vector: tuple[int, float] | None
    score: float
    fit: float | None = None
    asked: bool = False


def fusion(pool: Pool, *, now: datetime, weights: Weights, kinds: dict[str, KindSpec] = KINDS) -> list[Scored]:
    """Each candidate scored from its place in both rankings and its currentness (`ranking.terms`)."""
    bm25 = {i: (rank, s) for rank, (i, s) in enumerate(pool.text_hits, 1)}
    vec = {i: (rank, s) for rank, (i, s) in enumerate(pool.vector_hits, 1)}
    best = (max((s for _, s in pool.text_hits), default=0.0), max((s for _, s in pool.vector_hits), default=0.0))
    each = terms(pool.versions, now=now, bm25=bm25, vector=vec, best=best, weights=weights, kinds=kinds)
    pairs = zip(pool.versions, each, strict=True)
    return [Scored(m, t, bm25.get(m.id), vec.get(m.id), total(t, weights)) for m, t in pairs]


def time_fit(
    scored: list[Scored], window: TimeWindow | None, *, weights: Weights, kinds: dict[str, KindSpec] = KINDS
) -> list[Scored]:
    """Boosted by how well each candidate's time fits the `window`, when there is one."""
    if window is None:
        return scored
    boost = weights.time if window.source == "time_range" else weights.time_query
    for c in scored:
        c.fit = _fit(c.memory, window, kinds)
        c.score *= 1.0 + boost * c.fit
    return scored


def asked(scored: list[Scored], question: str | None, *, weights: Weights) -> list[Scored]:
    """Boosted when a candidate is a question and its answer that asks `question` (`supersede.asked`:
    the query's own): it is the slot asked for."""
    if question is None:
        return scored
    for c in scored:
        if _asks(c.memory.content, question):
            c.asked = True
            c.score *= 1.0 + weights.asked
    return scored


def best(scored: list[Scored], k: int) -> list[Hit]:
    """The best k, best first (the newer id first on a tie), with the parts of their scores."""
    ranked = sorted(((round(c.score, 6), c) for c in scored), key=lambda x: (-x[0], -x[1].memory.id))
    hits = []
    for s, c in ranked[:k]:
        p = parts(c.memory, c.terms, c.bm25, c.vector)
        if c.fit is not None:
            p = msgspec.structs.replace(p, time_fit=round(c.fit, 6))
        if c.asked:
            p = msgspec.structs.replace(p, asked=True)
        hits.append(Hit(memory=c.memory, score=s, parts=p, has_history=c.memory.version > 1))
    return hits


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
