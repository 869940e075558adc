"""The currentness stage: the newer statement of a topic above the older, and each hit's cosine.

Both need the hits' vectors: one read of the vector index gives the pair model its vectors
(`agentmem.currentness.order`) and every current hit the cosine of its vector and the query's,
also a hit only text search found (a similarity comparable across queries, what LangGraph calls
a score). DuckDB is read only for a compared hit the index does not hold (a past version).
"""

from __future__ import annotations

import msgspec
import numpy as np

from agentmem import slots
from agentmem.backend import Indexes, Live
from agentmem.currentness import analysis, pair
from agentmem.currentness.order import order
from agentmem.recall.query import Query
from agentmem.records import Hit
from agentmem.store import StoreOfRecord
from indexes.docs import IndexFailure


def current_first(
    hits: list[Hit],
    query: Query,
    *,
    k: int,
    window: int,
    words_needed: int,
    model: str,
    cosine_of: np.ndarray | None,
    indexes: Indexes,
    live: Live,
    store: StoreOfRecord,
    project: str | None,
) -> list[Hit]:
    """The best `k` of `hits`, the best `window` of them ordered newer first and the older marked
    when something says it was replaced; with `cosine_of` (the query vector), each current hit's
    cosine with it in its parts. The hits' texts are read from their analyses, which the live set
    holds (`agentmem.currentness.analysis`)."""
    head = hits[:window]
    judge = pair.for_embedder(model) if window else None
    wanted = [h.memory.id for h in head] if judge is not None else []
    if cosine_of is not None:
        wanted += [h.memory.id for h in hits[: max(k, window)] if h.parts.cosine is None and h.memory.is_latest]
    vectors: dict[int, np.ndarray] = {}
    if wanted:
        try:
            vectors = indexes.vectors_of(list(dict.fromkeys(wanted)), project=project)
        except IndexFailure:  # the vector index is down or swapping models: the rules alone order
            judge = None
    if window:
        mine = _compared(head, vectors, judge, model, store, project)
        shown = [h.memory for h in head]
        read = analysis.of_versions(shown, live.analyses(shown))
        rules = slots.pairs(head, read, query.words, query.time_words, query_words_needed=words_needed,
                            value_rules=not mine)  # fmt: skip
        hits = order(hits, window=window, vectors=mine, analyses=read, model=judge, rule_pairs=rules)
    return _with_cosines(hits[:k], vectors, cosine_of)


def _compared(
    head: list[Hit], vectors: dict[int, np.ndarray], judge: pair.PairModel | None, model: str,
    store: StoreOfRecord, project: str | None,
) -> dict[int, np.ndarray]:  # fmt: skip
    """The vectors the pair model compares: the index's, and DuckDB's for a hit it does not hold
    (superseded versions, as_of); none without a pair model for this embedder."""
    if judge is None:
        return {}
    missing = [h.memory for h in head if h.memory.id not in vectors]
    if missing and project is not None:
        by_hash = store.vectors([m.content_hash for m in missing], model, project=project)
        vectors = vectors | {m.id: v for m in missing if (v := by_hash.get(m.content_hash)) is not None}
    shape = (judge.dim,)
    return {i: v for i, v in vectors.items() if v.shape == shape}


def _with_cosines(hits: list[Hit], vectors: dict[int, np.ndarray], qv: np.ndarray | None) -> list[Hit]:
    """Each current hit without a cosine given the cosine of its vector and the query's `qv`."""
    if qv is None:
        return hits
    out = []
    for h in hits:
        v = vectors.get(h.memory.id) if h.parts.cosine is None and h.memory.is_latest else None
        if v is not None and v.shape == qv.shape:
            h = msgspec.structs.replace(h, parts=msgspec.structs.replace(h.parts, cosine=round(float(v @ qv), 4)))
        out.append(h)
    return out
