"""Group commit: concurrent writes share one transaction and one index apply, and still behave
as if they ran one after the other (supersession, uniqueness, read your writes)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agentmem import ConflictError, Memory, NewMemory
from agentmem.records import Triple
from agentmem.store import INDEXABLE
from fakes import FakeEmbedder

BACKENDS = ("duckdb", "postgres")  # tests taking `memory` run on both (see conftest.py)


def _hold_first_commit(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """The first commit waits until released, so that writes arriving meanwhile queue up."""
    entered, release = threading.Event(), threading.Event()
    real = memory.engine.writer._commit  # the writer's commit step, wrapped
    first = [True]

    def slow(unit):  # type: ignore[no-untyped-def]
        if first[0]:
            first[0] = False
            entered.set()
            assert release.wait(30)
        real(unit)

    monkeypatch.setattr(memory.engine.writer, "_commit", slow)
    return entered, release


def test_a_burst_to_one_key_leaves_one_current_version_with_a_full_chain(memory: Memory, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    entered, release = _hold_first_commit(memory, monkeypatch)
    with ThreadPoolExecutor(8) as pool:
        first = pool.submit(memory.remember, "The deploy window is 01:00", project="p", key="deploy.window")
        assert entered.wait(30)
        rest = [pool.submit(memory.remember, f"The deploy window is 0{i}:30", project="p", key="deploy.window")
                for i in range(2, 9)]  # fmt: skip
        while memory.engine.writer.queued < len(rest):  # every one of them is waiting in the queue
            threading.Event().wait(0.01)
        release.set()
        results = [first.result()] + [f.result() for f in rest]
    writer = memory.engine.writer
    assert writer.jobs == 8 and writer.batches == 2  # the seven that queued up were committed as one
    chain = memory.history(results[0].memory.id)
    assert len(chain) == 8 and [v.version for v in chain] == list(range(1, 9))
    assert [v.is_latest for v in chain] == [False] * 7 + [True]
    for old, new in zip(chain, chain[1:], strict=False):  # each one names the one that replaced it
        assert old.superseded_by == new.id and old.status == "superseded" and new.parent_id == old.id
    assert sorted(r.outcome for r in results) == ["created"] + ["superseded"] * 7
    current = memory.store.where(f"{INDEXABLE} AND key = 'deploy.window'")
    assert [v.id for v in current] == [chain[-1].id]
    assert memory.check().ok


def test_a_failing_write_in_a_batch_leaves_the_others_committed(memory: Memory, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    memory.remember("Alice owns billing", project="p", key="owner.billing")
    memory.remember("Bob runs the pager", project="p", triple=Triple("pager", "run by", "Bob"))
    batches = memory.engine.writer.batches
    entered, release = _hold_first_commit(memory, monkeypatch)
    with ThreadPoolExecutor(4) as pool:
        first = pool.submit(memory.remember, "The cache is Redis 7", project="p")
        assert entered.wait(30)
        # its key supersedes billing's holder, but its triple slot is held by another memory: refused
        bad = pool.submit(memory.remember, "Carol owns billing and runs the pager", project="p",
                          key="owner.billing", triple=Triple("pager", "run by", "Carol"))  # fmt: skip
        good = pool.submit(memory.remember, "The queue is RabbitMQ", project="p")
        while memory.engine.writer.queued < 2:
            threading.Event().wait(0.01)
        release.set()
        with pytest.raises(ConflictError, match="triple slot"):
            bad.result()
        assert first.result().outcome == "created" and good.result().outcome == "created"
    assert memory.engine.writer.batches == batches + 2
    owner = memory.store.where(f"{INDEXABLE} AND key = 'owner.billing'")
    assert [v.content for v in owner] == ["Alice owns billing"]  # the refused write left nothing behind
    assert not memory.store.where("content LIKE 'Carol%'")
    assert memory.check().ok


def test_a_failed_commit_fails_every_write_of_its_batch_and_writes_nothing(memory: Memory, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    before = memory.stats()

    def broken(*_: object) -> None:
        raise RuntimeError("disk gone")

    monkeypatch.setattr(memory.store, "insert_versions", broken)
    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(memory.remember, f"fact {i} about the build", project="p") for i in range(4)]
        for f in futures:
            with pytest.raises(RuntimeError, match="disk gone"):
                f.result()
    monkeypatch.undo()
    assert memory.stats() == before and len(memory.live) == 0
    r = memory.remember("fact 9 about the build", project="p")  # ids given out to the failed batch are skipped
    assert memory.get(r.memory.id).content == "fact 9 about the build" and memory.check().ok


@pytest.mark.embedded  # the deferred BM25 commit (PostgreSQL: test_postgres.py reads a write on another node)
def test_a_recall_right_after_a_remember_sees_it(memory: Memory) -> None:
    memory.remember("The staging database is called heron", project="p")
    r = memory.remember("Payroll exports run at quokkatime every Friday", project="p")
    assert memory.indexes.waiting()  # the BM25 commit is deferred...
    hits = memory.recall("quokkatime", project="p")
    assert hits[0].memory.id == r.memory.id  # ...and the recall made it searchable first
    assert hits[0].parts.bm25_rank == 1 and not memory.indexes.waiting()


@pytest.mark.embedded
def test_supersession_sees_writes_that_wait_for_the_bm25_commit(memory: Memory, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def no_text_search(*a, **k):  # type: ignore[no-untyped-def]
        raise AssertionError("a write reads its candidates from the vectors, not from text search")

    monkeypatch.setattr(memory.indexes, "search_text", no_text_search)
    old = memory.remember("The nightly backup job runs at two in the morning on the main server", project="p")
    assert old.memory.id in memory.indexes.waiting()  # text search cannot find it yet
    new = memory.remember("The nightly backup job runs at two in the morning on the main server now", project="p")
    assert new.outcome == "superseded" and new.superseded_id == old.memory.id


def test_the_live_set_holds_exactly_what_the_store_holds(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    a = memory.remember("The API listens on port 8080", project="p", key="api.port")
    memory.remember("The API listens on port 8080", project="p", key="api.port")  # reinforced
    memory.remember("We're on 4000 now", project="p", key="api.port")
    memory.observe([NewMemory(content="ran the tests", project="p", kind="observation", tier="working")])
    memory.pin(a.memory.id + 2)
    memory.recall("API port", project="p")
    memory.flush()  # access counts reach the store
    clock.advance(days=400)
    memory.remember("The on-call rota changes on Mondays", project="p", kind="config")
    memory.sweep(threshold=0.2)
    stored = {v.id: v for v in memory.store.where(INDEXABLE)}
    assert {v.id: v for v in memory.live.values()} == stored


def test_revise_cannot_take_a_key_another_current_memory_holds(memory: Memory) -> None:
    memory.remember("Alice owns billing", project="p", key="owner.billing")
    other = memory.remember("Bob owns search", project="p", key="owner.search")
    before = memory.stats()
    with pytest.raises(ConflictError, match="owner.billing"):
        memory.revise(other.memory.id, "Bob owns billing", key="owner.billing")
    assert memory.stats() == before


def test_a_delete_purges_the_index_beside_the_writer_not_under_it(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    mem = Memory(tmp_path / "data", embedder=FakeEmbedder())
    try:
        victim = mem.remember("The old vault password is hunter2quokka", project="p").memory
        building, written = threading.Event(), threading.Event()
        real = type(mem.indexes)._build_bm25

        def waiting_build(self):  # type: ignore[no-untyped-def]
            building.set()
            assert written.wait(30), "a remember could not get through while the purge rebuilt BM25"
            return real(self)

        monkeypatch.setattr(type(mem.indexes), "_build_bm25", waiting_build)
        with ThreadPoolExecutor(2) as pool:
            deleted = pool.submit(mem.delete, ids=[victim.id], reason="leaked")
            assert building.wait(30)
            r = mem.remember("The new vault is rotated monthly", project="p")  # the writer is free
            written.set()
            assert deleted.result().versions == 1
        assert mem.recall("vault rotated", project="p")[0].memory.id == r.memory.id
        assert mem.indexes.search_text("hunter2quokka", 10) == [] and mem.check().ok
    finally:
        mem.close()


def test_a_stored_vector_is_reused_in_its_own_project_only(
    open_memory, memory: Memory, embedder: FakeEmbedder, clock
) -> None:  # type: ignore[no-untyped-def]
    """Issue 34 (findings 2 and 7): a write reuses the stored vector of a text only when its own
    project holds that text; a text only another project holds is embedded again, so the time a
    write takes does not tell one project what another stores. The engine's sets must agree with
    the store through deletes and a reopen."""
    text = "The staging database is on db-7"
    a = memory.remember(text, project="a").memory
    before = embedder.texts
    memory.remember(text, project="a")  # its own project holds it: the stored vector
    assert embedder.texts == before
    b = memory.remember(text, project="b").memory  # only another project holds it: embedded again
    assert embedder.texts == before + 1
    memory.delete(reason="test", ids=[a.id])  # b still holds the content: its vector stays
    memory.remember(text, project="a")  # a held it once, but no longer: embedded again
    assert embedder.texts == before + 2
    c = memory.remember(text, project="c").memory
    assert embedder.texts == before + 3
    victims = [m.id for m in memory.list_versions(status=None, latest_only=False)[0] if m.content == text]
    memory.delete(reason="test", ids=victims)  # now nothing holds it: the vector is erased
    assert not memory.engine.store.embedded([c.content_hash], memory.engine.serving.model)
    d = memory.remember(text, project="d").memory  # embedded and stored again, no conflict
    assert embedder.texts == before + 4 and b.id < d.id
    assert memory.engine.store.embedded([a.content_hash], memory.engine.serving.model) == {a.content_hash}
    memory.close()
    with open_memory(embedder=embedder, clock=clock) as again:  # the sets are rebuilt from the store
        again.remember(text, project="d")
        assert embedder.texts == before + 4
        again.remember(text, project="e")
        assert embedder.texts == before + 5
        assert [h.memory.id for h in again.recall("staging database", project="d")] == [d.id]
        assert again.check().ok
