"""The PostgreSQL backend's own guarantees: several nodes on one database decide as one.

The behaviour suite runs on both backends through `BACKENDS` in its modules (see conftest.py);
these tests are about what only a shared database has: more than one node (here, more than one
`Memory` on the same database, each with its own pool of connections, as separate processes
would have), search in the database, and moving a data directory into it.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

import msgspec
import numpy as np
import psycopg
import pytest

from agentmem import Memory
from agentmem.config import Config
from agentmem.errors import AgentMemError, StoreBusyError, StoreError
from agentmem.postgres.backend import PgBackend
from agentmem.postgres.search import text_query
from fakes import FakeEmbedder


def _node(tmp_path: Path, name: str, url: str, **kwargs: object) -> Memory:
    return Memory(tmp_path / name, embedder=FakeEmbedder(), database_url=url, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def nodes(tmp_path: Path, database_url: str):  # type: ignore[no-untyped-def]
    opened = [_node(tmp_path, f"node{i}", database_url) for i in range(2)]
    yield opened
    for mem in opened:
        mem.close()


def _rows(url: str, sql: str, params: list[object] | None = None) -> list[tuple[object, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql, params or []).fetchall()  # type: ignore[arg-type]


def test_a_write_on_one_node_is_read_and_searched_on_another(nodes: list[Memory]) -> None:
    a, b = nodes
    first = a.remember("The staging cluster answers on port 6443", project="ops", key="staging.port").memory
    assert b.get(first.id).content == first.content
    assert b.recall("staging cluster port", project="ops")[0].memory.id == first.id  # read your writes, on B
    later = b.remember("The staging cluster answers on port 7443", project="ops", key="staging.port")
    assert later.outcome == "superseded" and later.superseded_id == first.id  # B decided against A's write
    hits = a.recall("staging cluster port", project="ops", k=5)
    assert [h.memory.id for h in hits] == [later.memory.id]  # the old version left search on every node
    assert [v.status for v in a.history(first.id)] == ["superseded", "active"]
    assert a.check().ok and b.check().ok


def test_writers_on_two_nodes_to_one_key_leave_one_current_version_and_a_full_chain(nodes: list[Memory]) -> None:
    writers, each = 8, 6
    acknowledged: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def write(n: int) -> None:
        mem = nodes[n % len(nodes)]
        for i in range(each):
            try:
                r = mem.remember(f"The release owner is person {n}-{i}", project="shop", key="release.owner")
            except BaseException as exc:  # every write must be acknowledged: none may fail
                errors.append(exc)
                return
            with lock:
                acknowledged.append(r.memory.id)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(acknowledged) == writers * each
    chain = nodes[0].history(acknowledged[0])
    assert [v.version for v in chain] == list(range(1, len(chain) + 1))
    assert {v.id for v in chain} == set(acknowledged)  # every acknowledged write is in the one chain
    assert Counter(v.status for v in chain) == {"superseded": len(chain) - 1, "active": 1}
    for old, new in zip(chain, chain[1:], strict=False):
        assert old.superseded_by == new.id and new.parent_id == old.id
    current = [v for v in chain if v.is_latest]
    assert len(current) == 1 and current[0].id == chain[-1].id
    assert nodes[1].live.by_key("shop", "release.owner").id == chain[-1].id  # type: ignore[union-attr]
    assert nodes[0].check().ok


def test_a_unit_that_read_outside_the_locks_cannot_retire_what_another_node_replaced(nodes: list[Memory]) -> None:
    """A sweep reads the current versions without locks; if another node replaces one before the
    sweep commits, the commit is refused whole (and a batch would be run again), never applied to
    a version that is no longer current."""
    a, b = nodes
    old = a.remember("The cache TTL is 5 minutes", project="p", key="ttl").memory
    with pytest.raises(StoreBusyError, match="another node"), a.engine.write() as w:
        seen = a.live.get(old.id)
        assert seen is not None
        b.remember("The cache TTL is 10 minutes", project="p", key="ttl")  # meanwhile, on node B
        w.retire([(seen, "archived", "retention")])
    assert [v.status for v in a.history(old.id)] == ["superseded", "active"]
    assert a.audit(actions=["archive"])[0] == [] and a.check().ok


def test_the_same_new_text_on_two_nodes_is_stored_once(nodes: list[Memory]) -> None:
    barrier = threading.Barrier(4)
    outcomes: list[str] = []

    def write(n: int) -> None:
        barrier.wait()
        outcomes.append(nodes[n % 2].remember("Deploys freeze on Fridays after noon", project="p").outcome)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["created", "reinforced", "reinforced", "reinforced"]
    (m,) = nodes[0].live.values()
    assert m.reinforcements == 3


def test_projects_stay_apart(nodes: list[Memory]) -> None:
    a, b = nodes
    shop = a.remember("The database is Postgres 15", project="shop", key="db").memory
    blog = b.remember("The database is SQLite", project="blog", key="db").memory
    assert shop.lineage_id != blog.lineage_id  # the same key in another project never supersedes
    assert [h.memory.id for h in a.recall("database", project="blog")] == [blog.id]
    assert [h.memory.id for h in b.recall("database", project="shop")] == [shop.id]
    report = a.delete(project="blog", reason="project closed")
    assert report.ids == [blog.id]
    assert a.get(shop.id).status == "active"
    entries, _ = b.audit(projects=["shop"])
    assert entries == []  # the delete is blog's
    (entry,), _ = b.audit(projects=["blog"])
    assert entry.action == "delete" and entry.project == "blog"
    assert a.stats(["shop"]).latest_active == 1 and a.stats(["blog"]).latest_active == 0


def test_governance_delete_leaves_no_text_in_rows_search_or_vectors(nodes: list[Memory], database_url: str) -> None:
    a, b = nodes
    v1 = a.remember("The vault password hint is zanzibarquokka", project="p", key="vault").memory
    v2 = b.remember("The vault password hint is xylophonewombat", project="p", key="vault").memory
    keep = a.remember("The vault lives in the basement", project="p").memory
    vector = a.embedder.embed([v2.content])[0]
    report = b.delete(lineages=[v2.id], reason="GDPR erasure request 17", actor="dpo")
    assert report.versions == 2
    for word in ("zanzibarquokka", "xylophonewombat"):
        assert a.indexes.search_text(word, 10) == []
        assert {h.memory.id for h in a.recall(word, project="p", k=10)} <= {keep.id}
        found = _rows(
            database_url,
            "SELECT count(*) FROM memories WHERE content LIKE %s OR title LIKE %s OR key LIKE %s OR doc LIKE %s",
            [f"%{word}%"] * 4,
        )
        assert found == [(0,)]
    assert _rows(database_url, "SELECT count(*) FROM embeddings WHERE content_hash = ANY(%s)",
                 [[v1.content_hash, v2.content_hash]]) == [(0,)]  # fmt: skip
    assert _rows(database_url, "SELECT count(*) FROM memories WHERE embedding IS NOT NULL AND status = 'deleted'") == [
        (0,)
    ]
    assert v2.id not in [i for i, _ in a.indexes.search_vector(vector, 10)]
    assert [v.status for v in a.history(v1.id)] == ["deleted", "deleted"]  # the tombstones stay
    (entry,), _ = a.audit(actions=["delete"])
    assert (entry.actor, entry.affected, entry.reason) == ("dpo", 2, "GDPR erasure request 17")
    assert a.check().ok


def test_search_runs_in_the_database_over_current_versions_only(nodes: list[Memory], database_url: str) -> None:
    a, _ = nodes
    a.remember("The build cache bucket is amber-7", project="p", key="cache")
    new = a.remember("The build cache bucket is cobalt-9", project="p", key="cache").memory
    assert [i for i, _ in a.indexes.search_text("build cache bucket", 10, project="p")] == [new.id]
    assert [i for i, _ in a.indexes.search_vector(a.embedder.embed(["build cache bucket"])[0], 10)] == [new.id]
    # the words of the version it replaced still find it (its search document carries them)
    assert [i for i, _ in a.indexes.search_text("amber", 10, project="p")] == []  # a dead value is not carried
    indexes = dict(_rows(database_url, "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'memories'"))
    for name in ("memories_search", "memories_embedding"):
        assert "WHERE (is_latest AND (status = 'active'::text))" in str(indexes[name])
    assert "USING gin" in str(indexes["memories_search"]) and "USING hnsw" in str(indexes["memories_embedding"])


def test_a_small_project_in_a_big_database_gets_k_vector_hits(tmp_path: Path, database_url: str) -> None:
    """One HNSW graph serves every project: a plain index scan stops after hnsw.ef_search (40)
    candidates, most of them another project's, and the project filter would leave fewer than k.
    The nodes' connections set hnsw.iterative_scan, so the scan goes on until k rows pass."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        (name,) = conn.execute("SELECT current_database()").fetchone()  # type: ignore[misc]
        conn.execute(f"ALTER DATABASE {name} SET enable_seqscan = off")  # the index, as on a big table
    with _node(tmp_path, "n", database_url) as mem:
        for i in range(300):
            mem.remember(f"Big project note {i} about release trains and build caches", project="big", kind="event")
        small = [mem.remember(f"Small project note {i} about release trains", project="small", kind="event").memory.id
                 for i in range(8)]  # fmt: skip
        query = mem.embedder.embed(["release trains and build caches"])[0]
        hits = mem.indexes.search_vector(query, 8, project="small")
        assert sorted(i for i, _ in hits) == sorted(small)
        assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)  # relaxed order put right
        assert mem.engine.store.query("SHOW hnsw.iterative_scan") == [("relaxed_order",)]  # type: ignore[attr-defined]
        with psycopg.connect(database_url) as conn:  # without it, the same index scan comes up short
            from pgvector.psycopg import register_vector

            register_vector(conn)
            conn.execute("SET hnsw.iterative_scan = off")
            sql = (
                "SELECT id FROM memories m WHERE m.is_latest AND m.status = 'active' AND m.project = 'small' "
                "AND m.embedding IS NOT NULL ORDER BY m.embedding <=> %s LIMIT 8"
            )
            vector = [np.asarray(query, dtype=np.float32)]
            plan = " ".join(r[0] for r in conn.execute("EXPLAIN " + sql, vector).fetchall())
            rows = conn.execute(sql, vector).fetchall()
        # The planner may read the small project through a btree index and sort it exactly (it did in a
        # CI run, once statistics were fresh): then no HNSW scan runs to come up short.
        if "memories_embedding" in plan:
            assert len(rows) < 8, plan


def test_the_vector_search_can_use_the_partial_hnsw_index(nodes: list[Memory], database_url: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The planner may take the HNSW index for the very query recall runs (a sequential scan, which
    a table this small would rather have, ruled out). The text search's GIN index is checked by its
    definition only: on a few rows the planner keeps to the small partial btree index."""
    from agentmem.postgres.store import sql

    a, _ = nodes
    a.remember("The build cache bucket is amber-7", project="p")
    seen: list[tuple[str, list[object]]] = []
    real = a.engine.store.query  # type: ignore[attr-defined]
    monkeypatch.setattr(a.engine.store, "query", lambda text, params=(), **kw: seen.append((text, list(params))) or
                        real(text, params, **kw))  # fmt: skip
    a.indexes.search_vector(a.embedder.embed(["build cache"])[0], 5, project="p")
    with psycopg.connect(database_url) as conn:
        from pgvector.psycopg import register_vector

        register_vector(conn)
        conn.execute("SET enable_seqscan = off")
        ((text, params),) = seen
        plan = " ".join(str(r[0]) for r in conn.execute("EXPLAIN " + sql(text), params).fetchall())  # type: ignore[arg-type]
    assert "Index Scan using memories_embedding" in plan, plan


def test_every_table_carries_the_project_in_its_primary_key(database_url: str, tmp_path: Path) -> None:
    _node(tmp_path, "n", database_url).close()
    keys = dict(
        _rows(
            database_url,
            "SELECT c.relname, pg_get_constraintdef(k.oid) FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid "
            "WHERE k.contype = 'p' AND c.relname IN ('memories', 'embeddings', 'audit')",
        )
    )
    assert all(str(v).startswith("PRIMARY KEY (project") for v in keys.values()) and len(keys) == 3
    links = _rows(database_url, "SELECT column_name FROM information_schema.columns WHERE table_name = 'links'")
    assert ("project",) in links


def test_a_database_made_for_another_model_is_refused(database_url: str, tmp_path: Path) -> None:
    _node(tmp_path, "n", database_url).close()

    class Other(FakeEmbedder):
        name = "other-model"
        dim = 32

    with pytest.raises(StoreError, match="other-model"):
        Memory(tmp_path / "m", embedder=Other(), database_url=database_url)


def test_a_data_directory_moves_into_postgres_whole(tmp_path: Path, database_url: str) -> None:
    with Memory(tmp_path / "local", embedder=FakeEmbedder()) as local:
        old = local.remember("Standups are at 9:30", project="team", key="standup").memory
        new = local.remember("Standups are at 10:00", project="team", key="standup").memory
        evidence = local.remember("The retro is every other Friday", project="team", kind="event").memory
        derived = local.remember("Retros happen biweekly", project="team", source_ids=[evidence.id]).memory
        gone = local.remember("The old wiki password is hunter2", project="team").memory
        local.delete(ids=[gone.id], reason="erasure request", actor="dpo")
        links = local.links(derived.id)
        audit, _ = local.audit(limit=100)
        exported = list(local.export_lines())
        before = {v.id: v for v in local.store.versions(local_scope())}
        vectors = local.store.vectors([v.content_hash for v in before.values()], local.embedder.name)
    with _node(tmp_path, "pg", database_url) as pg:
        assert pg.import_lines(exported) == len(before)
        after = {v.id: v for v in pg.store.versions(local_scope())}
        assert after == before  # every version, with its ids, lineage, statuses and times
        assert pg.links(derived.id) == links and len(links) == 1
        moved_audit, _ = pg.audit(limit=100)  # the audit log moves too, entry by entry, in order
        assert [msgspec.structs.replace(e, id=0) for e in moved_audit] == [
            msgspec.structs.replace(e, id=0) for e in audit
        ]
        assert {e.action for e in audit} >= {"supersede", "delete"}
        moved = pg.store.vectors(list(vectors), pg.embedder.name)
        assert set(moved) == set(vectors) and all(np.allclose(moved[h], vectors[h]) for h in vectors)
        assert [h.memory.id for h in pg.recall("standups", project="team")][:1] == [new.id]
        assert pg.history(old.id)[-1].id == new.id
        nxt = pg.remember("Standups are at 10:15", project="team", key="standup")
        assert nxt.superseded_id == new.id and nxt.memory.id > max(before)  # ids go on after the imported ones
        assert pg.check().ok


def local_scope():  # type: ignore[no-untyped-def]
    from agentmem.filters import ALL

    return ALL


def test_text_queries_are_words_only() -> None:
    assert text_query("port 3000 -- or 'x' & !y") == "port or 3000 or x or y"  # "or" itself is a stopword
    assert text_query("!!!") == ""


def test_config_carries_through_to_a_node(database_url: str, tmp_path: Path) -> None:
    strict = Config(shortlist=5)
    with _node(tmp_path, "n", database_url, config=strict) as mem:
        assert mem.engine.config.shortlist == 5 and isinstance(mem.engine.backend, PgBackend)


def test_the_database_url_comes_from_the_environment_or_the_config_file(tmp_path: Path) -> None:
    from agentmem.errors import ValidationError
    from api.settings import load

    url = "postgresql://agentmem@db.internal/agentmem"
    assert load(env={"AGENTMEM_DATABASE_URL": url}).database_url == url
    config = tmp_path / "agentmem.toml"
    config.write_text(f'database_url = "{url}"\n')
    assert load(config, env={}).database_url == url
    assert load(env={}).database_url == ""  # the data directory, as before
    with pytest.raises(ValidationError, match="postgresql://"):
        load(env={"AGENTMEM_DATABASE_URL": "mysql://db/agentmem"})


def test_a_scheduled_job_runs_on_one_node_a_period(tmp_path: Path, database_url: str, clock) -> None:  # type: ignore[no-untyped-def]
    a, b = (_node(tmp_path, name, database_url, clock=clock) for name in ("a", "b"))
    try:
        assert a.engine.claim_job("sweep", 3600) and not b.engine.claim_job("sweep", 3600)
        assert b.engine.claim_job("consolidation", 3600)  # each job on its own
        clock.advance(minutes=50)  # timers drift: a period counts from 90% of it
        assert not a.engine.claim_job("sweep", 3600) and not b.engine.claim_job("sweep", 3600)
        clock.advance(minutes=10)
        assert b.engine.claim_job("sweep", 3600) and not a.engine.claim_job("sweep", 3600)
    finally:
        a.close()
        b.close()


def test_an_import_leaves_the_planner_knowing_the_tables(tmp_path: Path, database_url: str) -> None:
    """After a bulk load the tables are analyzed at once, not a minute later by autovacuum: the
    planner sees the imported rows (a never-analyzed table has reltuples -1 or 0), so that a text
    query takes the GIN index instead of reading the project's every row."""
    with Memory(tmp_path / "local", embedder=FakeEmbedder()) as local:
        for n in range(300):
            local.remember(f"Note {n}: the build of service {n} takes {n % 7 + 2} minutes", project="p")
        exported = list(local.export_lines())
    with _node(tmp_path, "pg", database_url) as pg:
        pg.import_lines(exported)
        tuples = dict(_rows(database_url, "SELECT relname, reltuples FROM pg_class WHERE relname = ANY(%s)",
                            [["memories", "bm25_terms", "memory_projects"]]))  # fmt: skip
        assert tuples["memories"] >= 300 and tuples["memory_projects"] >= 300  # type: ignore[operator]
        assert tuples["bm25_terms"] > 0  # type: ignore[operator]


def _exported(tmp_path: Path, name: str, texts: list[str], **fields: str) -> list[bytes]:
    with Memory(tmp_path / name, embedder=FakeEmbedder()) as local:
        for text in texts:
            local.remember(text, project="p", **fields)  # type: ignore[arg-type]
        return [line if isinstance(line, bytes) else line.encode() for line in local.export_lines()]


def _vector_index(url: str) -> tuple[int, str]:
    """The HNSW index's oid (a new one once it is built again) and its definition."""
    ((oid, definition),) = _rows(url, "SELECT c.oid::int, pg_get_indexdef(c.oid) FROM pg_class c "
                                      "WHERE c.relname = 'memories_embedding'")  # fmt: skip
    return int(oid), str(definition)  # type: ignore[call-overload]


def test_an_import_into_an_empty_database_builds_the_vector_index_after_its_rows(
    tmp_path: Path, database_url: str
) -> None:
    """A restore builds the HNSW index once, after the rows (a new index, as defined before, that
    finds what was imported); an import into a database that holds current memories adds to the
    index as it goes (the same index)."""
    first = _exported(tmp_path, "a", [f"Service {n} is deployed from the {n}th pipeline" for n in range(40)])
    with _node(tmp_path, "pg", database_url) as pg:
        before = _vector_index(database_url)
        assert pg.import_lines(first) > 0
        rebuilt = _vector_index(database_url)
        assert rebuilt[0] != before[0] and rebuilt[1] == before[1]
        hits = pg.indexes.search_vector(pg.embedder.embed(["Service 7 is deployed from the 7th pipeline"])[0], 3,
                                        project="p")  # fmt: skip
        assert hits and pg.get(hits[0][0]).content == "Service 7 is deployed from the 7th pipeline"
        assert pg.check().ok
        more = [line for line in _exported(tmp_path, "b", ["The cache bucket is amber-7"]) if b'"memory"' in line]
        header = first[0]
        moved = [msgspec.json.encode({**msgspec.json.decode(line), "memory": {
            **msgspec.json.decode(line)["memory"], "id": 1000, "lineage_id": 1000}}) for line in more]  # fmt: skip
        assert pg.import_lines([header, *moved]) == 1
        assert _vector_index(database_url) == rebuilt  # a database with memories: the index is kept


def test_an_import_many_times_what_the_database_holds_builds_the_vector_index_again(
    tmp_path: Path, database_url: str
) -> None:
    """Building the index again costs less than adding each vector while it holds fewer than
    (BUILD_SPEEDUP - 1) x the imported current versions: 1 held, 40 imported."""
    lines = _exported(tmp_path, "a", [f"Service {n} is deployed from the {n}th pipeline" for n in range(40)])
    header, body = lines[0], [line for line in lines[1:] if b'"memory"' in line]
    moved = [msgspec.json.encode({**msgspec.json.decode(line), "memory": {
        **msgspec.json.decode(line)["memory"], "id": 1000 + n, "lineage_id": 1000 + n}})
        for n, line in enumerate(body)]  # fmt: skip
    with _node(tmp_path, "pg", database_url) as pg:
        held = pg.remember("The cache bucket is amber-7", project="p").memory
        before = _vector_index(database_url)
        assert pg.import_lines([header, *moved]) == 40
        rebuilt = _vector_index(database_url)
        assert rebuilt[0] != before[0] and rebuilt[1] == before[1]
        for text, want in (
            ("The cache bucket is amber-7", held.id),
            ("Service 7 is deployed from the 7th pipeline", 1007),
        ):
            hits = pg.indexes.search_vector(pg.embedder.embed([text])[0], 1, project="p")
            assert hits and hits[0][0] == want  # what was held and what came in, both found
        assert pg.check().ok


def test_a_failed_import_into_an_empty_database_leaves_the_vector_index(tmp_path: Path, database_url: str) -> None:
    """The index is dropped and built again in the import's transaction: an import refused while
    it loads (two current memories holding one key) leaves the index and no rows."""
    lines = _exported(tmp_path, "local", ["The deploy window is Tuesday"], key="deploy.window")
    header, body = lines[0], [line for line in lines[1:] if b'"memory"' in line]
    twin = msgspec.json.decode(body[0])
    twin["memory"] = {**twin["memory"], "id": 2, "lineage_id": 2, "content": "The deploy window is Friday"}
    with _node(tmp_path, "pg", database_url) as pg:
        before = _vector_index(database_url)
        with pytest.raises(AgentMemError):
            pg.import_lines([header, *body, msgspec.json.encode(twin)])
        assert _vector_index(database_url) == before
        assert _rows(database_url, "SELECT count(*) FROM memories") == [(0,)]


def test_an_import_does_not_wait_for_a_reader_to_set_the_index_aside(tmp_path: Path, database_url: str) -> None:
    """Another transaction reading the table keeps the import from taking it alone: the import
    then adds to the index as it goes, at once, instead of waiting for the reader."""
    lines = _exported(tmp_path, "a", [f"Host {n} runs the {n}th queue worker" for n in range(10)])
    with _node(tmp_path, "pg", database_url) as pg, psycopg.connect(database_url) as reader:
        before = _vector_index(database_url)
        reader.execute("SELECT count(*) FROM memories").fetchall()  # its transaction stays open
        assert pg.import_lines(lines) > 0
        assert _vector_index(database_url) == before
        reader.rollback()
        assert pg.check().ok


def _table_counts(url: str, at_least: tuple[int, int]) -> tuple[int, int, int]:
    """(inserted, updated, of those heap-only) rows of `memories`, once the server's statistics
    show at least `at_least` (inserted, updated): a closed node's counts arrive a moment after it
    exits."""
    deadline = time.monotonic() + 20
    while True:
        row = _rows(url, "SELECT n_tup_ins, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables "
                         "WHERE relname = 'memories'")[0]  # fmt: skip
        ins, upd, hot = (int(x) for x in row)  # type: ignore[call-overload]
        if ins >= at_least[0] and upd >= at_least[1] or time.monotonic() > deadline:
            return ins, upd, hot
        time.sleep(0.05)


def test_counting_accesses_rewrites_no_index_entry(tmp_path: Path, database_url: str) -> None:
    """`memories` leaves room on each page (`schema.MEMORY_FILL`), so a recall's access counts
    update its versions in place (heap-only), with no new entry in the vector or text index; a
    database of schema 5 gets the room when it is opened."""
    with _node(tmp_path, "a", database_url) as mem:
        for n in range(60):
            mem.remember(f"Note {n}: the garden needs {n} litres of water in week {n % 7}", project="p")
    ins, upd, hot = _table_counts(database_url, (60, 0))
    with _node(tmp_path, "b", database_url) as mem:
        for n in range(20):  # each round's counts written before the next
            assert len(mem.recall(f"garden water in week {n % 7}", project="p", k=10)) == 10
            mem.flush()
    _, upd2, hot2 = _table_counts(database_url, (ins, upd + 200))
    assert upd2 - upd == 200 and hot2 - hot >= 185  # 193 here; 131 with pages packed full
    options = "SELECT reloptions FROM pg_class WHERE relname = 'memories'"
    assert _rows(database_url, options) == [(["fillfactor=80"],)]
    with psycopg.connect(database_url) as conn:  # as schema 5 left it
        conn.execute("ALTER TABLE memories RESET (fillfactor)")
        conn.execute("UPDATE agentmem_meta SET value = '5' WHERE name = 'schema_version'")
    with _node(tmp_path, "c", database_url) as mem:
        assert mem.check().ok
    assert _rows(database_url, options) == [(["fillfactor=80"],)]
