"""Numbered migrations: a data directory from an older schema opens and is upgraded in order."""

from __future__ import annotations

import duckdb

from agentmem import Memory
from agentmem.migrations import MIGRATIONS, current_version, migrate


def test_fresh_database_gets_every_migration(tmp_path) -> None:  # type: ignore[no-untyped-def]
    conn = duckdb.connect(str(tmp_path / "x.duckdb"))
    assert migrate(conn) == MIGRATIONS[-1][0]
    names = [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY version").fetchall()]
    assert names == [m[1] for m in MIGRATIONS]
    assert migrate(conn) == MIGRATIONS[-1][0]  # idempotent


def test_old_directory_upgrades_and_keeps_data(data_dir, embedder, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    with Memory(data_dir, embedder=embedder) as mem:
        kept = mem.remember("We use Postgres", project="p").memory
    # A later release adds a migration: the directory written by this one must open under it.
    extra = (MIGRATIONS[-1][0] + 1, "m_test_add_column", ["ALTER TABLE memories ADD COLUMN note VARCHAR"])
    monkeypatch.setattr("agentmem.migrations.MIGRATIONS", [*MIGRATIONS, extra])
    monkeypatch.setattr("agentmem.store.migrate", lambda conn: migrate(conn, [*MIGRATIONS, extra]))
    with Memory(data_dir, embedder=embedder) as mem:
        assert current_version(mem.store.cursor()) == extra[0]
        assert mem.get(kept.id).content == "We use Postgres"
        assert mem.recall("Postgres", project="p")[0].memory.id == kept.id


def test_failed_migration_rolls_back(tmp_path) -> None:  # type: ignore[no-untyped-def]
    conn = duckdb.connect(str(tmp_path / "x.duckdb"))
    migrate(conn)
    bad = [*MIGRATIONS, (MIGRATIONS[-1][0] + 1, "m_bad", ["CREATE TABLE t (a INT)", "SELECT * FROM nowhere"])]
    try:
        migrate(conn, bad)
    except duckdb.Error:
        pass
    assert current_version(conn) == MIGRATIONS[-1][0]
    assert conn.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 't'").fetchone()[0] == 0


def test_schema_1_directory_gains_the_lifecycle_columns(data_dir, embedder) -> None:  # type: ignore[no-untyped-def]
    """A directory written by the first release (schema 1) opens, and its memories can be archived."""
    data_dir.mkdir(parents=True)
    conn = duckdb.connect(str(data_dir / "agentmem.duckdb"))
    migrate(conn, MIGRATIONS[:1])
    conn.execute(
        "INSERT INTO memories (id, lineage_id, version, is_latest, status, content, tier, kind, project, source, "
        "salience, confidence, reinforcements, accesses, pinned, created_at, valid_from, last_reinforced_at, "
        "content_hash, norm_hash) VALUES (1, 1, 1, true, 'active', 'We use Postgres', 'semantic', 'fact', 'p', "
        "'api', 0.5, 0.7, 0, 0, false, now(), now(), now(), 'h', 'n')"
    )
    conn.close()
    with Memory(data_dir, embedder=embedder) as mem:
        assert current_version(mem.store.cursor()) == MIGRATIONS[-1][0]
        old = mem.get(1)
        assert old.content == "We use Postgres" and old.archived_at is None and old.status_reason is None
        assert mem.recall("Postgres", project="p")[0].memory.id == 1  # embedded on open, indexed
        assert mem.sweep(threshold=1.0).archived == 1
        assert mem.get(1).status == "archived" and mem.audit()[0][0].action == "archive"
