"""Where recall's candidates come from: the live indexes for the present, DuckDB for the past.

Each source gives a `Pool`: the versions that may answer, and the BM25 and vector rankings that
found them. The live indexes may be behind: their hits are filtered against the live set, so a
stale index never brings back an old version. DuckDB is read only for `as_of` and superseded
versions, which the indexes do not hold.
"""

from __future__ import annotations

import logging
from datetime import datetime

import msgspec
import numpy as np

from agentmem.filters import Filter
from agentmem.ports import Port
from agentmem.recall.query import Query
from agentmem.recall.request import Request
from agentmem.records import MemoryVersion
from agentmem.store import StoreOfRecord
from agentmem.text import tokens
from indexes.docs import IndexFailure, StaleModel

log = logging.getLogger("agentmem")

Ranked = list[tuple[int, float]]  # (id, raw score), best first
TRIES = 3  # embeddings of one query while a change of model swaps the vector index in between


class Pool(msgspec.Struct, frozen=True):
    """Versions that may answer a query, and the two rankings that found them (either may be empty)."""

    versions: list[MemoryVersion]
    text_hits: Ranked
    vector_hits: Ranked


class Probe(msgspec.Struct, frozen=True):
    """The query's vector and the model that made it; both None while the model is down."""

    vector: np.ndarray | None = None
    model: str | None = None


class VectorHealth:
    """Whether recall's vector side works: what `Memory.degraded` says while it does not. Recall
    degrades to word search, says so, and tries the vector side again on the next query."""

    def __init__(self) -> None:
        self.error: str | None = None

    def down(self, exc: IndexFailure) -> None:
        if self.error is None:
            log.warning("recall without vector search: %s", exc)
        self.error = message(exc)

    def up(self) -> None:
        self.error = None

    @property
    def degraded(self) -> list[str]:
        return [self.error] if self.error else []


def message(exc: IndexFailure) -> str:
    """What `degraded` says while the model or the vector index is down."""
    return f"vector search unavailable, BM25 only: {exc}"


def probe(port: Port, health: VectorHealth, text: str) -> Probe:
    """The query's embedding and its model, or an empty probe while the model is down (recall
    then answers by words)."""
    try:
        vector, model = port.serving.embed_query(text)
    except IndexFailure as exc:
        health.down(exc)
        return Probe()
    return Probe(vector, model)


def live(port: Port, health: VectorHealth, query: Query, req: Request, n: int, now: datetime) -> tuple[Pool, Probe]:
    """The current memories the BM25 and vector indexes find (at most `n` each) that the request's
    filters keep, and the query's probe."""
    text_hits = port.indexes.search_text(query.text, n, project=req.project, agents=[req.agent] if req.agent else [],
                                           kinds=req.kinds, tiers=req.tiers)  # fmt: skip
    vector_hits, found = _nearest(port, health, query.text, n, req.project)
    tiers, kinds = set(req.tiers), set(req.kinds)

    def keep(m: MemoryVersion) -> bool:
        return (
            (req.project is None or m.project == req.project)
            and (req.agent is None or m.agent == req.agent)
            and (not tiers or m.tier in tiers)
            and (not kinds or m.kind in kinds)
            and (m.expires_at is None or m.expires_at > now)
        )

    ids = dict.fromkeys([i for i, _ in text_hits] + [i for i, _ in vector_hits])
    current = port.live.many(ids, project=req.project)  # the searches kept to it
    versions = [m for i in ids if (m := current.get(i)) is not None and keep(m)]
    return Pool(versions, text_hits, vector_hits), found


def as_of(port: Port, health: VectorHealth, query: Query, req: Request, n: int, when: datetime) -> tuple[Pool, Probe]:
    """Every version in the request's scope valid at `when` (valid_from <= when < valid_to),
    ranked as `stored` ranks them (the BM25 index holds only current ones), and the query's probe."""
    found = probe(port, health, query.text)
    if found.vector is not None:
        health.up()
    scope = req.scope().narrow(exclude_deleted=True, valid_at=when)
    return stored(port.store, found.model or port.serving.model, query, found.vector, n, scope), found


def superseded(port: Port, query: Query, req: Request, n: int, found: Probe) -> Pool:
    """The superseded versions in the request's scope that match, ranked as `stored` ranks them."""
    return stored(port.store, found.model or port.serving.model, query, found.vector, n, req.scope(("superseded",)))


def stored(
    store: StoreOfRecord, model: str, query: Query, query_vector: np.ndarray | None, n: int, scope: Filter
) -> Pool:
    """At most `n` versions in `scope` ranked by cosine in DuckDB, plus a keyword-overlap ranking
    of the same versions: for versions the indexes do not hold (past ones, superseded ones).

    Without a query vector (the model is down) the versions are ranked by how many of the
    query's words their text contains, and there is no vector ranking."""
    if query_vector is not None:
        nearest = store.nearest(scope, model, query_vector, n)
        versions = [v for v, _ in nearest]
        vector_hits = [(v.id, s) for v, s in nearest]
    else:
        versions, vector_hits = store.word_matches(scope, list(query.prefixes), n), []
    q = query.stems
    overlap = [(v.id, len(q & set(tokens(v.content))) / max(1, len(q))) for v in versions]
    text_hits = sorted(((i, s) for i, s in overlap if s > 0), key=lambda x: -x[1])
    return Pool(versions, text_hits, vector_hits)


def _nearest(port: Port, health: VectorHealth, text: str, n: int, project: str | None) -> tuple[Ranked, Probe]:
    """The vector index's nearest current memories to the query (none while the model is down), and
    the probe; embedded again if a change of model swapped the index in between."""
    for _ in range(TRIES):
        found = probe(port, health, text)
        if found.vector is None:
            return [], found
        try:
            hits = port.indexes.search_vector(found.vector, n, project=project, model=found.model)
        except StaleModel:
            continue
        except IndexFailure as exc:
            health.down(exc)
            return [], found
        health.up()
        return hits, found
    return [], Probe()
