"""Version chains: explicit revisions, history with death records, as_of answers."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agentmem import ConflictError, Memory, NotFoundError

BACKENDS = ("duckdb", "postgres")  # tests taking `memory` run on both (see conftest.py)


def test_chain_of_three(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    v1 = memory.remember("The API listens on port 8080", project="p", key="api.port").memory
    clock.advance(days=10)
    v2 = memory.remember("The API listens on port 9090", project="p", key="api.port").memory
    clock.advance(days=10)
    v3 = memory.revise(v2.id, "The API listens on port 4000", reason="moved behind the proxy").memory
    chain = memory.history(v1.id)
    assert [v.id for v in chain] == [v1.id, v2.id, v3.id]
    assert [v.version for v in chain] == [1, 2, 3]
    assert [v.is_latest for v in chain] == [False, False, True]
    assert chain[0].superseded_by == v2.id and chain[0].supersede_reason == "key"
    assert chain[1].superseded_by == v3.id and chain[1].supersede_reason == "moved behind the proxy"
    assert chain[1].parent_id == v1.id and chain[2].parent_id == v2.id
    assert chain[2].key == "api.port"  # carried over by revise
    assert memory.history(v3.id) == chain  # any version names the lineage
    assert {h.memory.id for h in memory.recall("API port", project="p")} == {v3.id}


def test_histories_of_many_lineages_in_one_read(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    a = memory.remember("The API listens on port 8080", project="p", key="api.port").memory
    b = memory.remember("Deploys run on Fridays", project="p", key="deploy.day").memory
    clock.advance(days=1)
    memory.remember("The API listens on port 9090", project="p", key="api.port")
    memory.remember("Deploys run on Mondays", project="p", key="deploy.day")
    got = memory.histories([b.lineage_id, a.lineage_id, b.lineage_id])
    assert got == {a.lineage_id: memory.history(a.id), b.lineage_id: memory.history(b.id)}
    assert [v.version for v in got[a.lineage_id]] == [1, 2] and memory.histories([]) == {}


def test_revise_needs_the_current_version(memory: Memory) -> None:
    v1 = memory.remember("The API listens on port 8080", project="p", key="api.port").memory
    memory.remember("The API listens on port 9090", project="p", key="api.port")
    with pytest.raises(ConflictError, match="not the current version"):  # a 409: the caller read a stale version
        memory.revise(v1.id, "port 1")
    with pytest.raises(NotFoundError):
        memory.revise(999, "port 1")
    with pytest.raises(TypeError):  # revise takes ReviseRequest's fields as keywords, and no others
        memory.revise(memory.history(v1.id)[-1].id, "port 2", colour="red")  # type: ignore[call-arg]


def test_as_of_answers_from_all_versions(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    t0 = clock.now
    memory.remember("We use Postgres for the main database of the shop", project="p")
    clock.advance(days=30)
    t1 = clock.now
    memory.remember("We use MySQL for the main database of the shop", project="p")
    clock.advance(days=30)

    def top(when):  # type: ignore[no-untyped-def]
        return memory.recall("main database", project="p", as_of=when)[0].memory.content

    assert "Postgres" in top(t0 + timedelta(days=1))
    assert "MySQL" in top(t1 + timedelta(days=1))
    assert "MySQL" in memory.recall("main database", project="p")[0].memory.content
    assert memory.recall("main database", project="p", as_of=t0 - timedelta(days=1)) == []
    assert "Postgres" in top((t0 + timedelta(days=2)).isoformat())


def test_unknown_ids(memory: Memory) -> None:
    for call in (memory.get, memory.history, memory.links):
        with pytest.raises(NotFoundError):
            call(12345)


def test_links_from_source_ids(memory: Memory) -> None:
    a = memory.remember("ran the tests, 3 failed", project="p", kind="event").memory
    b = memory.remember("The flaky test is test_login", project="p", kind="lesson", source_ids=[a.id]).memory
    links = memory.links(b.id)
    assert [(x.src_id, x.dst_id, x.kind) for x in links] == [(b.id, a.id, "derived_from")]
    assert memory.links(a.id) == links
