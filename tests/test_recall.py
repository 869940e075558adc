"""Recall: hybrid candidates, filters, currentness, and never an old version."""

from __future__ import annotations

import time

import pytest

from agentmem import Memory, ValidationError
from indexes.docs import IndexFailure

BACKENDS = ("duckdb", "postgres")  # tests taking `memory` run on both (see conftest.py)


def test_finds_by_words_and_returns_parts(memory: Memory) -> None:
    memory.remember("The staging cluster lives in eu-west-1", project="p")
    memory.remember("Lunch is at noon on Fridays", project="p")
    hits = memory.recall("where is the staging cluster", project="p", k=5)
    assert "staging" in hits[0].memory.content
    top = hits[0]
    assert top.parts.bm25_rank == 1 and top.parts.vector_rank is not None
    assert 0 < top.score <= 1 and not top.has_history


@pytest.mark.embedded
def test_superseded_never_returned_even_with_a_stale_index(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    old = memory.remember("We use Postgres for the main database of the shop", project="p").memory
    memory.indexes.refresh()

    def broken(*a, **k):  # type: ignore[no-untyped-def]
        raise IndexFailure("disk full")

    monkeypatch.setattr(memory.indexes.bm25, "apply", broken)
    monkeypatch.setattr(memory.indexes.vectors, "apply", broken)
    new = memory.remember("We use MySQL for the main database of the shop", project="p")
    assert new.outcome == "superseded"  # acknowledged: DuckDB has it
    assert old.id in memory.indexes.bm25.ids()  # the index is stale...
    ids = [h.memory.id for h in memory.recall("main database shop", project="p")]
    assert old.id not in ids  # ...but recall filters at read
    monkeypatch.undo()
    ids = [h.memory.id for h in memory.recall("main database shop", project="p")]
    assert ids == [new.memory.id]  # the next recall replayed the outbox
    assert memory.check().ok


def test_project_isolation(memory: Memory) -> None:
    memory.remember("The secret launch date is March", project="alpha")
    memory.remember("Gardening tips for spring", project="beta")
    beta = memory.recall("secret launch date", project="beta")
    assert [h.memory.content for h in beta] == ["Gardening tips for spring"]  # only via the vector side
    assert all(h.memory.project == "alpha" for h in memory.recall("launch", project="alpha"))
    assert {h.memory.project for h in memory.recall("launch date gardening")} == {"alpha", "beta"}


def test_filters(memory: Memory) -> None:
    memory.remember("Use tabs in Makefiles", project="p", kind="lesson", agent="a1", tier="semantic")
    memory.remember("Use spaces in Python files", project="p", kind="preference", agent="a2", tier="semantic")
    memory.remember("Use black for Python files", project="p", kind="procedure", agent="a2", tier="procedural")
    assert {h.memory.kind for h in memory.recall("use files", project="p", kinds=["lesson"])} == {"lesson"}
    assert {h.memory.agent for h in memory.recall("use files", project="p", agent="a2")} == {"a2"}
    assert {h.memory.tier for h in memory.recall("use files", project="p", tiers=["procedural"])} == {"procedural"}
    with pytest.raises(ValidationError):
        memory.recall("x", kinds=["gossip"])


def test_expired_hidden_at_once(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    memory.remember("The release freeze is on", project="p", ttl_days=1)
    assert memory.recall("release freeze", project="p")
    clock.advance(days=1, seconds=1)
    assert memory.recall("release freeze", project="p") == []


def test_currentness_breaks_ties(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    memory.remember("Standup notes: the cache warmed slowly", project="p", kind="observation", salience=0.2)
    clock.advance(days=60)
    memory.remember("Standup notes: the queue drained slowly", project="p", kind="observation", salience=0.2)
    clock.advance(days=1)
    hits = memory.recall("standup notes slowly", project="p")
    assert "queue" in hits[0].memory.content  # the older observation has decayed
    assert hits[0].parts.effective_confidence > hits[1].parts.effective_confidence


def test_bad_queries(memory: Memory) -> None:
    for bad in ("", "   ", "\x00"):
        with pytest.raises(ValidationError):
            memory.recall(bad)
    for k in (0, -1, 10_000, True):
        with pytest.raises(ValidationError):
            memory.recall("x", k=k)
    with pytest.raises(ValidationError):
        memory.recall("x", as_of="yesterday-ish")


def test_query_syntax_is_plain_words(memory: Memory) -> None:
    memory.remember("project:alpha uses AND/OR logic (carefully)", project="p")
    for q in ("project:alpha", "AND OR NOT", '"unbalanced', "(carefully", "a*b?c~2^3"):
        memory.recall(q, project="p")  # never raises on query syntax


def test_access_counts_batched(data_dir, embedder, clock) -> None:  # type: ignore[no-untyped-def]
    from agentmem import Config

    with Memory(
        data_dir, embedder=embedder, clock=clock, config=Config(access_flush_every=2, access_flush_seconds=60)
    ) as mem:
        a = mem.remember("The staging cluster lives in eu-west-1", project="p").memory
        mem.recall("staging cluster", project="p")
        assert mem.get(a.id).accesses == 0  # not written on the recall path yet
        mem.recall("staging", project="p")
        mem.flush()
        got = mem.get(a.id)
        assert got.accesses == 2 and got.last_accessed_at == clock.now
        b = mem.remember("The build cache lives in S3", project="p").memory
        for q in ("build cache", "S3 cache", "cache lives"):
            mem.recall(q, project="p")
        for _ in range(3000):  # two distinct ids pending: the background writer is woken
            if mem.get(b.id).accesses == 3:
                break
            time.sleep(0.01)
        assert mem.get(b.id).accesses == 3


def test_ranking_keeps_the_order_of_scoring_every_candidate_in_full() -> None:
    """The rank stages score every candidate by number alone and explain only the k kept: the hits, their
    order, scores and parts are those of scoring every candidate with its parts."""
    import random
    from datetime import UTC, datetime, timedelta

    import msgspec

    from agentmem.ranking import Weights, parts, terms, total
    from agentmem.recall import rank
    from agentmem.recall.candidates import Pool
    from agentmem.records import Hit, MemoryVersion, TimeWindow
    from agentmem.text import sha256
    from agentmem.timewindow import fit

    rng = random.Random(7)
    now = datetime(2026, 6, 1, tzinfo=UTC)
    versions = []
    for i in range(1, 121):
        when = now - timedelta(days=rng.uniform(0, 400))
        versions.append(MemoryVersion(
            id=i, lineage_id=i, version=rng.choice([1, 1, 2]), parent_id=None, is_latest=True, status="active",
            content=f"memory {i}", tier="semantic", kind=rng.choice(["fact", "preference", "event"]), project="p",
            source="api", salience=rng.random(), confidence=rng.uniform(0.3, 1.0), created_at=when, valid_from=when,
            last_reinforced_at=when, content_hash=sha256(f"memory {i}"),
        ))  # fmt: skip
    text = [(v.id, rng.uniform(0.5, 9.0)) for v in rng.sample(versions, 60)]
    vector = [(v.id, rng.uniform(0.1, 0.9)) for v in rng.sample(versions, 60)]
    text.sort(key=lambda x: -x[1])
    vector.sort(key=lambda x: -x[1])
    weights = Weights()
    window = TimeWindow(start=now - timedelta(days=30), end=now - timedelta(days=10), source="time_range")
    for w in (None, window):
        scored = rank.fusion(Pool(versions, text, vector), now=now, weights=weights)
        got = rank.best(rank.asked(rank.time_fit(scored, w, weights=weights), None, weights=weights), 10)
        bm25 = {i: (r, s) for r, (i, s) in enumerate(text, 1)}
        vec = {i: (r, s) for r, (i, s) in enumerate(vector, 1)}
        best = (text[0][1], vector[0][1])
        full = []
        each = terms(versions, now=now, bm25=bm25, vector=vec, best=best, weights=weights)
        for m, ts in zip(versions, each, strict=True):
            b, v = bm25.get(m.id), vec.get(m.id)
            t, why = total(ts, weights), parts(m, ts, b, v)
            if w is not None:
                f = fit(m.valid_from, w, lasting=m.kind != "event", valid_to=m.valid_to)  # events are moments
                t *= 1.0 + weights.time * f
                why = msgspec.structs.replace(why, time_fit=round(f, 6))
            full.append(Hit(memory=m, score=round(t, 6), parts=why, has_history=m.version > 1))
        full.sort(key=lambda h: (-h.score, -h.memory.id))
        assert got == full[:10]
