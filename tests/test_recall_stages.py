"""Recall's pipeline stage by stage (agentmem.recall): the parsed query, each rank stage, the one
vector read of the currentness stage, and the debug line with each stage's time."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agentmem import Memory
from agentmem.ranking import Weights
from agentmem.recall import rank
from agentmem.recall.candidates import Pool
from agentmem.recall.query import parse
from agentmem.recall.timing import STAGES
from agentmem.records import MemoryVersion, TimeWindow
from agentmem.text import sha256

NOW = datetime(2026, 6, 1, tzinfo=UTC)
W = Weights()


def version(i: int, content: str, *, days_ago: float = 10, kind: str = "fact") -> MemoryVersion:
    when = NOW - timedelta(days=days_ago)
    return MemoryVersion(
        id=i, lineage_id=i, version=1, parent_id=None, is_latest=True, status="active", content=content,
        tier="semantic", kind=kind, project="p", source="api", salience=0.5, confidence=0.9, created_at=when,
        valid_from=when, last_reinforced_at=when, content_hash=sha256(content),
    )  # fmt: skip


def test_the_query_is_parsed_once_into_what_the_stages_read() -> None:
    q = parse("Who won the Super Bowl last year?", None, NOW)
    assert q.asked == "who won the super bowl last year"
    assert q.window is not None and q.window.source == "query" and q.window.expression == "last year"
    assert q.time_words == {"last", "year"} and {"super", "bowl"} <= q.words
    assert "won" in q.stems and "super" in q.stems
    assert parse("Where are the policies stored", None, NOW).prefixes == ("polici", "store", "where")
    explicit = parse("deploys", "2026-03-01/2026-04-01", NOW)
    assert explicit.window is not None and explicit.window.source == "time_range" and explicit.asked is None


def test_fusion_scores_by_both_rankings() -> None:
    both, text_only, neither = version(1, "a"), version(2, "b"), version(3, "c")
    pool = Pool([both, text_only, neither], [(1, 5.0), (2, 4.0)], [(1, 0.8)])
    scored = {c.memory.id: c for c in rank.fusion(pool, now=NOW, weights=W)}
    assert scored[1].score > scored[2].score > scored[3].score == 0.0
    assert scored[1].bm25 == (1, 5.0) and scored[1].vector == (1, 0.8) and scored[2].vector is None


def test_time_fit_boosts_what_fits_the_window_and_nothing_without_one() -> None:
    inside, outside = version(1, "a", days_ago=5, kind="event"), version(2, "b", days_ago=300, kind="event")
    pool = Pool([inside, outside], [(1, 1.0), (2, 1.0)], [])
    window = TimeWindow(start=NOW - timedelta(days=10), end=NOW, source="time_range")
    before = [c.score for c in rank.fusion(pool, now=NOW, weights=W)]
    assert [c.score for c in rank.time_fit(rank.fusion(pool, now=NOW, weights=W), None, weights=W)] == before
    fitted = rank.time_fit(rank.fusion(pool, now=NOW, weights=W), window, weights=W)
    assert fitted[0].fit == 1.0 and fitted[0].score == pytest.approx(before[0] * (1 + W.time))
    assert fitted[1].fit is not None and fitted[1].fit < 0.01


def test_asked_boosts_the_question_the_query_asks() -> None:
    qa, other = version(1, "Who is the mayor of Leeds? James Lewis."), version(2, "The mayor of Leeds is elected")
    pool = Pool([qa, other], [(1, 1.0), (2, 1.0)], [])
    before = [c.score for c in rank.fusion(pool, now=NOW, weights=W)]
    question = parse("Who is the mayor of Leeds?", None, NOW).asked
    got = rank.asked(rank.fusion(pool, now=NOW, weights=W), question, weights=W)
    assert got[0].asked and got[0].score == pytest.approx(before[0] * (1 + W.asked))
    assert not got[1].asked and got[1].score == before[1]


def test_best_keeps_k_newest_first_on_a_tie_with_their_parts() -> None:
    pool = Pool([version(1, "a"), version(2, "b"), version(3, "c")], [], [])  # no ranking: all score 0
    scored = rank.fusion(pool, now=NOW, weights=W)
    scored[0].fit, scored[0].asked = 0.5, True
    hits = rank.best(scored, 2)
    assert [h.memory.id for h in hits] == [3, 2]
    first = rank.best(scored, 3)[-1]
    assert first.parts.time_fit == 0.5 and first.parts.asked


@pytest.mark.model
def test_the_currentness_stage_reads_the_vectors_once(
    tmp_path: Path, real_embedder, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """The pair model's vectors and the cosines of the hits only text search found come from one read."""
    with Memory(tmp_path, embedder=real_embedder) as mem:
        for text in ("The staging cluster lives in eu-west-1", "The staging cluster moved to us-east-2",
                     "Staging deploys run at noon", "Lunch is at noon on Fridays"):  # fmt: skip
            mem.remember(text, project="p")
        search, read, calls = mem.indexes.search_vector, mem.indexes.vectors_of, []
        monkeypatch.setattr(mem.indexes, "search_vector", lambda *a, **k: search(*a, **k)[:1])
        monkeypatch.setattr(
            mem.indexes, "vectors_of", lambda ids, project=None: calls.append(list(ids)) or read(ids, project)
        )
        hits = mem.recall("where is the staging cluster", project="p", k=5)
        assert len(hits) >= 3 and sum(h.parts.vector_rank is None for h in hits) >= 2
        assert len(calls) == 1 and all(h.parts.cosine is not None for h in hits)


def test_the_debug_line_gives_each_stage_its_time(memory: Memory, caplog: pytest.LogCaptureFixture) -> None:
    memory.remember("The staging cluster lives in eu-west-1", project="p")
    memory.recall("staging cluster", project="p")
    assert not [r for r in caplog.records if r.name == "agentmem.recall"]  # off by default
    with caplog.at_level(logging.DEBUG, logger="agentmem.recall"):
        memory.recall("staging cluster", project="p", include_superseded=True)
    (record,) = [r for r in caplog.records if r.name == "agentmem.recall"]
    assert set(record.recall_ms) == set(STAGES) and all(v >= 0 for v in record.recall_ms.values())
    assert "candidates" in record.getMessage()


def test_times_read_from_a_store_come_back_in_datetime_utc(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    """The drivers hand back a `zoneinfo` UTC, three times slower in recall's date arithmetic: the
    versions a store reads carry `datetime.UTC`, at the same instants."""
    from datetime import UTC as STDLIB_UTC

    with Memory(tmp_path, embedder=embedder) as mem:
        got = mem.remember("The staging cluster lives in eu-west-1", project="p").memory
    with Memory(tmp_path, embedder=embedder) as mem:
        back = mem.get(got.id)
    assert back is not None
    for name in ("created_at", "valid_from", "last_reinforced_at"):
        t = getattr(back, name)
        assert t.tzinfo is STDLIB_UTC and t == getattr(got, name)


@pytest.mark.embedded
def test_the_store_runs_duckdb_on_the_threads_configured(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    """`Config.store_threads` (1 by default: a small statement runs on the caller's thread) is the
    DuckDB setting of the store the memory opens."""
    from agentmem.config import Config

    for threads in (None, 2):
        config = Config() if threads is None else Config(store_threads=threads)
        with Memory(tmp_path, embedder=embedder, config=config) as mem:
            assert mem.store.scalar("SELECT current_setting('threads')") == (threads or 1)
    with pytest.raises(ValueError, match="store_threads"):
        Config(store_threads=0)
