"""A text is analysed once, when it is written: the analysis is stored with its version, read back
when the store opens (or, on PostgreSQL, with the hits), and erased with the content."""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pytest

from agentmem import Memory, supersede
from agentmem.currentness import analysis
from agentmem.currentness.analysis import Analysis

BACKENDS = ("duckdb", "postgres")

OLD, NEW = "Our team uses Jira for tickets, since 2021.", "We switched to Linear for tickets in 2024."


def same(a: Analysis | None, b: Analysis) -> bool:
    return a is not None and np.array_equal(a.words, b.words) and (a.question, a.claims, a.said, a.text) == (
        b.question, b.claims, b.said, b.text)  # fmt: skip


def stored_bytes(mem: Memory, memory_id: int, project: str) -> bytes | None:
    data = mem.store.scalar("SELECT analysis FROM memories WHERE project = ? AND id = ?", [project, memory_id])
    return None if data is None else bytes(data)


def test_a_version_is_stored_with_its_analysis_and_read_back_after_a_restart(open_memory, embedder, monkeypatch):  # type: ignore[no-untyped-def]
    mem = open_memory(embedder=embedder)
    a = mem.remember(OLD, project="p", kind="observation").memory
    b = mem.remember(NEW, project="p", kind="observation").memory
    expected = {v.id: analysis.analyse(v.content, v.kind) for v in (a, b)}
    for v in (a, b):
        assert same(analysis.decode(stored_bytes(mem, v.id, "p")), expected[v.id])
    mem.close()

    def never(*_: object) -> None:
        raise AssertionError("a stored analysis was made again")

    monkeypatch.setattr(analysis, "_read", never)  # every text below must come from the store
    again = open_memory(embedder=embedder)
    held = again.live.analyses([a, b])
    assert set(held) == {a.id, b.id} and all(same(held[i], expected[i]) for i in held)
    hits = again.recall("which tool do we use for tickets?", project="p", k=5)  # made no analysis
    assert {h.memory.id for h in hits} == {a.id, b.id}


def test_an_event_stores_no_analysis(open_memory, embedder):  # type: ignore[no-untyped-def]
    mem = open_memory(embedder=embedder)
    e = mem.remember("We met the auditors on Monday.", project="p", kind="event").memory
    assert stored_bytes(mem, e.id, "p") is None and mem.live.analyses([e]) == {}


def test_an_erased_version_keeps_no_analysis(open_memory, embedder):  # type: ignore[no-untyped-def]
    mem = open_memory(embedder=embedder)
    a = mem.remember(OLD, project="p").memory
    b = mem.remember("The nightly backup runs at 2am.", project="p").memory
    mem.delete(ids=[a.id], reason="asked to forget it")
    assert stored_bytes(mem, a.id, "p") is None  # an analysis holds the text's words: it goes with them
    assert stored_bytes(mem, b.id, "p") is not None


@pytest.mark.embedded
def test_a_directory_from_before_stored_analyses_gets_them_once_on_open(data_dir: Path, embedder, backend, monkeypatch):  # type: ignore[no-untyped-def]
    with Memory(data_dir, embedder=embedder) as mem:
        a = mem.remember(OLD, project="p").memory
        b = mem.remember("The nightly backup runs at 2am.", project="p").memory
    with monkeypatch.context() as m:
        m.setattr(analysis, "VERSION", analysis.VERSION + 1)
        other = analysis.stored(b.content, b.kind)[1]
    conn = duckdb.connect(str(data_dir / "agentmem.duckdb"))
    conn.execute("UPDATE memories SET analysis = NULL WHERE id = ?", [a.id])  # written before they were stored
    conn.execute("UPDATE memories SET analysis = ? WHERE id = ?", [other, b.id])  # by another analysis version
    conn.close()
    with Memory(data_dir, embedder=embedder) as mem:
        for v in (a, b):
            assert same(analysis.decode(stored_bytes(mem, v.id, "p")), analysis.analyse(v.content, v.kind))
            assert same(mem.live.analyses([v]).get(v.id), analysis.analyse(v.content, v.kind))


def test_bytes_of_another_shape_or_version_are_not_read_as_an_analysis(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    assert analysis.decode(None) is None
    assert analysis.decode(b"\x93\x01\x02") is None and not analysis.current(b"\x93\x01\x02")
    made, data = analysis.stored(NEW, "fact")
    assert same(analysis.decode(data), made) and analysis.current(data)
    monkeypatch.setattr(analysis, "VERSION", analysis.VERSION + 1)
    assert analysis.decode(data) is None and not analysis.current(data)  # another `analyse` made it


@pytest.mark.parametrize(
    "text",
    [
        "Caroline: I went to the LGBTQ support group yesterday. It was so powerful! Mel said she'd come in May.",
        "We deploy the shop API on Fly.io. I dedicate an hour a day to it.",
        "Thanks, Mel!",
        "The nightly backup runs at 2am.\nBackups moved to 4am.",
    ],
)
def test_what_was_said_is_stored_once_and_holds_the_claims(text: str) -> None:
    said = analysis.analyse(text, "observation")  # its claims are read off its sentences
    assert said.claims == analysis.claims(text) and said.said == analysis.claims(text, plain=True)
    plain = analysis.analyse(text, "fact")
    assert plain.claims == analysis.claims(text) and plain.said == ()


def test_a_restored_memory_is_read_with_its_analysis(memory: Memory, clock, backend) -> None:  # type: ignore[no-untyped-def]
    m = memory.remember(OLD, project="p", kind="observation").memory
    clock.advance(days=60)
    memory.sweep()
    assert memory.get(m.id).status == "archived"
    if backend == "duckdb":
        assert memory.live.analyses([m]) == {}  # the live set holds current versions only
    back = memory.restore(m.id)
    assert same(memory.live.analyses([back]).get(m.id), analysis.analyse(OLD, "observation"))
    assert same(analysis.decode(stored_bytes(memory, m.id, "p")), analysis.analyse(OLD, "observation"))


def test_the_write_time_rules_read_a_candidate_from_its_stored_analysis(open_memory, embedder, monkeypatch):  # type: ignore[no-untyped-def]
    mem = open_memory(embedder=embedder)
    old = mem.remember("The nightly backup runs at 2am", project="p").memory
    mem.close()
    again = open_memory(embedder=embedder)
    seen: list[str] = []
    real = supersede.question_slot  # read with its words, per candidate, by the rules alone
    monkeypatch.setattr(supersede, "question_slot", lambda text: seen.append(text) or real(text))
    r = again.remember("The nightly backup runs at 4am", project="p")
    assert r.superseded_id == old.id  # the rules compared the two
    assert seen == ["The nightly backup runs at 4am"]  # the old text's came from its stored analysis


def test_a_refreshed_version_keeps_its_lookups_and_analysis_without_reading_its_text(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The access counts flushed every few seconds put every recalled version again: one whose
    content, kind, project, key and triple are unchanged is found as before, keeps its analysis,
    and its text is not read again; a new content is relinked and analysed anew."""
    from datetime import UTC, datetime

    import msgspec

    from agentmem import live as live_module
    from agentmem.live import LiveSet
    from agentmem.records import MemoryVersion
    from agentmem.text import identity, sha256

    when = datetime(2026, 6, 1, tzinfo=UTC)
    v = MemoryVersion(
        id=1, lineage_id=1, version=1, parent_id=None, is_latest=True, status="active", content="We deploy on Fly.io",
        tier="semantic", kind="fact", project="p", source="api", salience=0.5, confidence=0.9, created_at=when,
        valid_from=when, last_reinforced_at=when, content_hash=sha256("We deploy on Fly.io"),
    )  # fmt: skip
    live = LiveSet([v])
    live.hold_analyses({1: analysis.analyse(v.content, v.kind)})
    read: list[str] = []
    monkeypatch.setattr(live_module, "identity", lambda text: read.append(text) or identity(text))
    live.put(msgspec.structs.replace(v, accesses=3, last_accessed_at=when))
    assert read == [] and live.get(1).accesses == 3  # type: ignore[union-attr]
    assert live.by_content("p", "we deploy on fly.io").id == 1 and 1 in live.analyses([v])  # type: ignore[union-attr]
    moved = msgspec.structs.replace(v, content="We deploy on Render")
    live.put(moved)
    assert live.by_content("p", "We deploy on Fly.io") is None and live.by_content("p", "we deploy on render").id == 1  # type: ignore[union-attr]
    assert live.analyses([moved]) == {}  # the old text's analysis is gone with it
