"""Reinforcement: bounded confidence gain, counted, capped at 0.99, no new version."""

from __future__ import annotations

import pytest

from agentmem import Memory

BACKENDS = ("duckdb", "postgres")  # tests taking `memory` run on both (see conftest.py)


def test_gain_is_bounded_and_capped(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    first = memory.remember("Deploys happen on Tuesdays", project="p", kind="fact")
    c = first.memory.confidence
    assert c == pytest.approx(0.7)
    for n in range(1, 20):
        clock.advance(hours=1)
        r = memory.remember("Deploys happen on Tuesdays", project="p")
        c = min(0.99, c + 0.3 * (1 - c))
        assert r.outcome == "reinforced"
        assert r.memory.confidence == pytest.approx(c)
        assert r.memory.reinforcements == n
        assert r.memory.last_reinforced_at == clock.now
    assert r.memory.confidence == pytest.approx(0.99)
    assert [v.id for v in memory.history(first.memory.id)] == [first.memory.id]
    assert memory.stats().versions == 1


def test_reinforcement_does_not_reembed(memory: Memory, embedder) -> None:  # type: ignore[no-untyped-def]
    memory.remember("Deploys happen on Tuesdays", project="p")
    before = embedder.texts
    memory.remember("Deploys happen on Tuesdays", project="p")
    assert embedder.texts == before


def test_same_content_in_another_project_is_separate(memory: Memory, embedder) -> None:  # type: ignore[no-untyped-def]
    a = memory.remember("Deploys happen on Tuesdays", project="p")
    texts = embedder.texts
    b = memory.remember("Deploys happen on Tuesdays", project="q")
    assert b.outcome == "created" and b.memory.id != a.memory.id
    assert embedder.texts == texts + 1  # never another project's vector (issue 34): embedded again
    assert memory.remember("Deploys happen on Tuesdays", project="q").outcome == "reinforced"
    assert embedder.texts == texts + 1  # its own project's stored vector is reused


def test_kind_sets_starting_confidence(memory: Memory) -> None:
    assert memory.remember("My name is Ada", project="p", kind="identity").memory.confidence == pytest.approx(0.9)
    assert memory.remember("Port is 80", project="p", kind="config").memory.confidence == pytest.approx(0.8)
    assert memory.remember("x happened", project="p", kind="event", confidence=0.3).memory.confidence == 0.3
