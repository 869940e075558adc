"""The PostgreSQL backend under the races and bad values a review reproduced (issue 20).

Each test sets up, on a real PostgreSQL (the `pgserver` fixture), the interleaving or the value
that broke the preview backend: two nodes (two `Memory` on one database, each with its own pool
of connections) where one reads while the other writes, a lock held from a second psycopg
connection, a value the database refuses in the middle of a batch.
"""

from __future__ import annotations

import json
import random
import string
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from agentmem import Memory
from agentmem.config import Config
from agentmem.errors import ConflictError, StoreBusyError, ValidationError
from agentmem.postgres.schema import SCHEMA_VERSION
from agentmem.records import NewMemory, Triple
from agentmem.text import sha256, slot_of
from agentmem.unit import Write
from fakes import FakeEmbedder


def _node(tmp_path: Path, name: str, url: str, **kwargs: Any) -> Memory:
    return Memory(tmp_path / name, embedder=FakeEmbedder(), database_url=url, **kwargs)


@pytest.fixture
def nodes(tmp_path: Path, database_url: str):  # type: ignore[no-untyped-def]
    opened = [_node(tmp_path, f"node{i}", database_url) for i in range(2)]
    yield opened
    for mem in opened:
        mem.close()


def _rows(url: str, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql, params or []).fetchall()  # type: ignore[arg-type]


def _one_batch(mem: Memory, jobs: list[Any]) -> list[Any]:
    """Run `jobs` through the writer as one batch (queued while the writer is held); each job's
    result, or the error it raised."""
    results: list[Any] = [None] * len(jobs)

    def run(i: int) -> None:
        try:
            results[i] = mem.engine.run(jobs[i])
        except BaseException as exc:
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
    batches = mem.engine.writer.batches
    with mem.engine.writer.lock:
        for t in threads:
            t.start()
        while mem.engine.writer.queued < len(jobs):
            time.sleep(0.005)
    for t in threads:
        t.join()
    assert mem.engine.writer.batches - batches >= 1
    return results


def _insert(content: str, project: str = "p", **fields: Any) -> Any:
    return lambda w: w.insert(NewMemory(content=content, project=project, **fields), content_hash=sha256(content))


# -- 5: bad values -----------------------------------------------------------------


def test_a_very_long_triple_subject_is_stored_and_holds_its_slot(nodes: list[Memory]) -> None:
    """A subject of 3,000 characters once exceeded PostgreSQL's btree row limit on the slot index
    (a 500); the slot column holds its hash, so any subject the validator allows fits."""
    a, b = nodes
    rng = random.Random(5)  # words that do not compress: PostgreSQL compresses an index row first
    subject = "the build farm " + " ".join("".join(rng.choices(string.ascii_lowercase, k=7)) for _ in range(375))
    assert len(subject) > 3000
    first = a.remember("The build farm runs Ubuntu 22.04", project="ops", triple=Triple(subject, "runs", "22.04"))
    assert first.outcome == "created"
    later = b.remember("The build farm runs Ubuntu 24.04", project="ops", triple=Triple(subject, "runs", "24.04"))
    assert later.superseded_id == first.memory.id  # the slot is found by its (hashed) value
    assert a.check().ok


def test_a_database_error_in_one_job_fails_that_job_only(nodes: list[Memory]) -> None:
    """A job whose statement the database refuses ends the unit's transaction at once; the other
    jobs of its batch run again on a fresh one and commit (none runs on in an aborted
    transaction), and the refused value is a 4xx."""
    a, _ = nodes

    def bad(w: Write) -> None:
        w.session.run("SELECT 1 / 0")

    results = _one_batch(a, [_insert("Deploys happen on Tuesdays"), bad, _insert("Backups run at midnight")])
    assert isinstance(results[1], ValidationError) and results[1].status == 400
    assert "division by zero" in str(results[1])
    assert [r.content for r in (results[0], results[2])] == ["Deploys happen on Tuesdays", "Backups run at midnight"]
    assert sorted(v.content for v in a.live.values()) == ["Backups run at midnight", "Deploys happen on Tuesdays"]
    assert a.remember("The next write works", project="p").outcome == "created"


def test_a_value_refused_at_the_commit_fails_its_job_only(nodes: list[Memory]) -> None:
    """A value the validator let through but the database refuses (here a NUL character, written
    past `remember`'s checks) fails at the commit: each job then runs alone, so only its own
    caller hears a 400, and the rest of the batch is written."""
    a, _ = nodes
    results = _one_batch(
        a, [_insert("Standups are at ten"), _insert("bad \x00 value"), _insert("Retros are on Friday")]
    )
    assert isinstance(results[1], ValidationError) and "0x00" in str(results[1])
    assert {v.content for v in a.live.values()} == {"Standups are at ten", "Retros are on Friday"}


# -- 1: one id, one project ---------------------------------------------------------


def test_an_import_cannot_take_an_id_a_write_on_another_node_holds(tmp_path: Path, database_url: str) -> None:
    """Node B has taken id 1 for a write it has not committed; node A imports a file whose
    memory has id 1. The import waits for B's unit, then sees the id in use and is refused:
    one id is never in two projects."""
    with Memory(tmp_path / "local", embedder=FakeEmbedder()) as local:
        local.remember("Imported memory", project="imported")
        lines = list(local.export_lines())
    a, b = _node(tmp_path, "a", database_url), _node(tmp_path, "b", database_url)
    try:
        taken: list[int] = []
        go = threading.Event()

        def write_on_b() -> None:
            with b.engine.write() as w:
                taken.append(_insert("Written on B", project="mine")(w).id)
                go.wait(10)

        writer = threading.Thread(target=write_on_b)
        writer.start()
        while not taken:
            time.sleep(0.01)
        assert taken == [1]
        outcome: list[BaseException | int] = []
        importer = threading.Thread(target=lambda: outcome.append(_try(lambda: a.import_lines(lines))))
        importer.start()
        time.sleep(0.5)  # the import is waiting for B's unit now
        go.set()
        writer.join()
        importer.join()
        assert isinstance(outcome[0], ConflictError), outcome
        assert _rows(database_url, "SELECT project FROM memories WHERE id = 1") == [("mine",)]
    finally:
        a.close()
        b.close()


def test_an_update_names_its_project(nodes: list[Memory], database_url: str) -> None:
    """Where one id is in two projects (as the race above once left it; the primary key is
    (project, id) for Citus), a write in one project changes its own row, never the other's."""
    a, _ = nodes
    old = a.remember("The build server is alpha", project="mine", key="build.server").memory
    with psycopg.connect(database_url) as conn:  # the same id in another project
        listed = conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'memories' "
            "AND column_name <> 'search' ORDER BY ordinal_position"
        )
        names = [r[0] for r in listed.fetchall()]
        columns = ", ".join(names)
        values = columns.replace("project", "'theirs'", 1).replace(", key,", ", 'their.key',", 1)
        conn.execute(f"INSERT INTO memories ({columns}) SELECT {values} FROM memories WHERE id = %s", [old.id])
    a.remember("The build server is beta", project="mine", key="build.server")
    rows = _rows(database_url, "SELECT project, status, is_latest FROM memories WHERE id = %s ORDER BY project",
                 [old.id])  # fmt: skip
    assert rows == [("mine", "superseded", False), ("theirs", "active", True)]


def _try(fn: Any) -> Any:
    try:
        return fn()
    except BaseException as exc:
        return exc


# -- 2, 3: deletes racing other nodes ---------------------------------------------


def test_a_lineage_delete_racing_a_supersede_on_another_node_erases_the_new_version(
    nodes: list[Memory], database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Node A reads the lineage to delete; node B supersedes its current version before A
    commits. A's commit sees a version it did not read, and the delete runs again, so the new
    version is erased too: nothing of the lineage stays active or searchable."""
    a, b = nodes
    v1 = a.remember("The escrow passphrase is quokkasunrise", project="p", key="escrow").memory
    store = a.engine.store
    real = store.current_of_lineages
    raced: list[int] = []

    def meanwhile(lineages: Any) -> list[int]:
        if not raced:  # the first run of the delete: B writes between its reads and its commit
            raced.append(b.remember("The escrow passphrase is wombatmoonrise", project="p", key="escrow").memory.id)
        return real(lineages)

    monkeypatch.setattr(store, "current_of_lineages", meanwhile)
    report = a.delete(lineages=[v1.id], reason="erasure request")
    assert sorted(report.ids) == sorted([v1.id, *raced])
    assert [v.status for v in a.history(v1.id)] == ["deleted", "deleted"]
    for word in ("quokkasunrise", "wombatmoonrise"):
        assert a.recall(word, project="p") == []
        assert _rows(database_url, "SELECT count(*) FROM memories WHERE content LIKE %s OR doc LIKE %s",
                     [f"%{word}%"] * 2) == [(0,)]  # fmt: skip
    assert a.check().ok


def test_a_restore_racing_a_delete_on_another_node_does_not_bring_the_tombstone_back(
    nodes: list[Memory], database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = nodes
    v = a.remember("The old office was on Elm Street", project="p").memory
    with a.engine.write() as w:
        w.retire([(v, "archived", "retention")])
    real = a.engine.get
    calls: list[int] = []

    def get(memory_id: int) -> Any:
        found = real(memory_id)
        calls.append(memory_id)
        if len(calls) == 2:  # inside the restore's unit, after it read the archived version
            b.delete(ids=[v.id], reason="erasure request")
        return found

    monkeypatch.setattr(a.engine, "get", get)
    with pytest.raises(ConflictError, match="deleted"):
        a.restore(v.id)  # run again after the commit was refused: the memory is a tombstone now
    (row,) = _rows(database_url, "SELECT status, content, is_latest FROM memories WHERE id = %s", [v.id])
    assert row == ("deleted", "", True)
    assert a.recall("office Elm Street", project="p") == []


# -- 4: erased words leave every version's search text --------------------------------


def test_deleting_one_version_leaves_its_words_in_no_other_versions_search_text(
    nodes: list[Memory], database_url: str
) -> None:
    a, _ = nodes
    v1 = a.remember("The staging database port of the quokkabilling team is 5432", project="p", key="db.port").memory
    a.remember("The staging database port is 5433", project="p", key="db.port")
    v3 = a.remember("The staging database port is 5434", project="p", key="db.port").memory
    carrying = "SELECT id FROM memories WHERE doc ILIKE %s"
    assert len(_rows(database_url, carrying, ["%quokkabilling%"])) >= 1  # the current version carries them
    a.delete(ids=[v1.id], reason="erasure request")
    assert _rows(database_url, carrying, ["%quokkabilling%"]) == []
    assert a.indexes.search_text("quokkabilling", 10, project="p") == []
    assert [h.memory.id for h in a.recall("staging database port", project="p")] == [v3.id]


# -- 6: stored vectors are per project --------------------------------------------


def test_an_import_of_text_another_project_holds_brings_vectors_for_every_version(
    tmp_path: Path, database_url: str
) -> None:
    text = "The shared runbook lives in the wiki"
    with Memory(tmp_path / "local", embedder=FakeEmbedder()) as local:
        local.remember("A memory of another project", project="filler")  # ids 1 and 2 stay free below
        local.remember("Another memory of another project", project="filler")
        local.remember(text, project="second", key="runbook")
        local.remember("The shared runbook lives in git", project="second", key="runbook")
        lines = [_without_vectors(line) for line in local.export_lines(["second"])]
    with _node(tmp_path, "pg", database_url) as pg:
        pg.remember(text, project="first")  # the same text, already stored (with its vector) in another project
        assert pg.import_lines(lines) == 2
        exported = [json.loads(line) for line in pg.export_lines(["second"])]
        versions = [x for x in exported if x["type"] == "memory"]
        assert len(versions) == 2 and all(x["embedding"] is not None for x in versions)
        assert _rows(database_url, "SELECT count(*) FROM embeddings WHERE project = 'second'") == [(2,)]


def _without_vectors(line: bytes) -> bytes:
    record = json.loads(line)
    if record["type"] == "memory":
        record["embedding"] = None
    return json.dumps(record).encode()


# -- 7: a lock held elsewhere -----------------------------------------------------


def _hold_row(url: str, memory_id: int) -> psycopg.Connection[Any]:
    """A second connection holding the row lock of one version (a stuck node)."""
    conn = psycopg.connect(url)
    conn.execute("SELECT id FROM memories WHERE id = %s FOR UPDATE", [memory_id])
    return conn


def test_a_write_waiting_on_a_stuck_lock_gives_up_at_the_deadline(tmp_path: Path, database_url: str) -> None:
    config = Config(lock_timeout_seconds=0.2, retry_deadline_seconds=1.5)
    with _node(tmp_path, "n", database_url, config=config) as mem:
        old = mem.remember("The on-call phone is 555-0100", project="p", key="oncall").memory
        held = _hold_row(database_url, old.id)
        try:
            start = time.monotonic()
            with pytest.raises(StoreBusyError):
                mem.remember("The on-call phone is 555-0199", project="p", key="oncall")
            took = time.monotonic() - start
        finally:
            held.close()
        assert 1.5 <= took < 1.5 + 1.0  # the deadline, plus at most one lock wait and one pause
        assert mem.engine.writer.retries >= 3  # it tried again, with pauses between
        assert mem.live.by_key("p", "oncall").id == old.id  # type: ignore[union-attr]
        assert mem.remember("The on-call phone is 555-0199", project="p", key="oncall").superseded_id == old.id


def test_a_write_waiting_on_a_lock_released_before_the_deadline_succeeds(tmp_path: Path, database_url: str) -> None:
    config = Config(lock_timeout_seconds=0.2, retry_deadline_seconds=10)
    with _node(tmp_path, "n", database_url, config=config) as mem:
        old = mem.remember("The on-call phone is 555-0100", project="p", key="oncall").memory
        held = _hold_row(database_url, old.id)
        threading.Timer(1.0, held.close).start()  # the stuck node lets go after a second
        result = mem.remember("The on-call phone is 555-0199", project="p", key="oncall")
        assert result.superseded_id == old.id
        assert mem.engine.writer.retries >= 1  # it was refused at least once, then run again
        assert [v.status for v in mem.history(old.id)] == ["superseded", "active"]


def test_a_database_of_the_first_schema_is_brought_up_to_date(tmp_path: Path, database_url: str) -> None:
    """Schema 1 held the slot itself and search documents on superseded versions: opening it
    hashes the slots (so its current slot holders are still found) and drops those documents."""
    with _node(tmp_path, "old", database_url) as mem:
        first = mem.remember("Alice leads payments", project="p", triple=Triple("Alice", "leads", "payments")).memory
        old = mem.remember("The port is 4000", project="p", key="port").memory
        mem.remember("The port is 5000", project="p", key="port")
    with psycopg.connect(database_url) as conn:  # as schema 1 left it
        conn.execute("UPDATE memories SET slot = %s WHERE id = %s", [slot_of("Alice", "leads"), first.id])
        conn.execute("UPDATE memories SET doc = 'the port is 4000' WHERE id = %s", [old.id])
        conn.execute("UPDATE agentmem_meta SET value = '1' WHERE name = 'schema_version'")
    with _node(tmp_path, "new", database_url) as mem:
        assert mem.engine.store.schema_version == SCHEMA_VERSION  # type: ignore[attr-defined]
        later = mem.remember("Alice leads billing", project="p", triple=Triple("Alice", "leads", "billing"))
        assert later.superseded_id == first.id
        assert _rows(database_url, "SELECT doc FROM memories WHERE id = %s", [old.id]) == [(None,)]
