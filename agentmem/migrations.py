"""Numbered schema migrations, applied in order so that an older data directory opens after an upgrade.

Add a migration by appending `(N, "mNNN_what", [statements])`; never edit one that has shipped.
"""

from __future__ import annotations

import duckdb

from agentmem.errors import SchemaTooNewError

MIGRATIONS: list[tuple[int, str, list[str]]] = [
    (
        1,
        "m001_initial",
        [
            """CREATE TABLE memories (
                id BIGINT PRIMARY KEY,
                lineage_id BIGINT NOT NULL,
                version INTEGER NOT NULL,
                parent_id BIGINT,
                is_latest BOOLEAN NOT NULL,
                status VARCHAR NOT NULL,
                content VARCHAR NOT NULL,
                title VARCHAR,
                subject VARCHAR,
                predicate VARCHAR,
                object VARCHAR,
                key VARCHAR,
                tier VARCHAR NOT NULL,
                kind VARCHAR NOT NULL,
                project VARCHAR NOT NULL,
                agent VARCHAR,
                session VARCHAR,
                source VARCHAR NOT NULL,
                source_ref VARCHAR,
                source_ids BIGINT[],
                salience DOUBLE NOT NULL,
                confidence DOUBLE NOT NULL,
                reinforcements INTEGER NOT NULL,
                accesses INTEGER NOT NULL,
                pinned BOOLEAN NOT NULL,
                created_at TIMESTAMPTZ NOT NULL,
                valid_from TIMESTAMPTZ NOT NULL,
                valid_to TIMESTAMPTZ,
                expires_at TIMESTAMPTZ,
                last_reinforced_at TIMESTAMPTZ NOT NULL,
                last_accessed_at TIMESTAMPTZ,
                superseded_by BIGINT,
                superseded_at TIMESTAMPTZ,
                supersede_reason VARCHAR,
                supersede_similarity DOUBLE,
                content_hash VARCHAR NOT NULL,
                norm_hash VARCHAR NOT NULL,
                slot VARCHAR
            )""",
            """CREATE TABLE embeddings (
                content_hash VARCHAR NOT NULL,
                model VARCHAR NOT NULL,
                vector FLOAT[] NOT NULL,
                PRIMARY KEY (content_hash, model)
            )""",
            """CREATE TABLE links (
                src_id BIGINT NOT NULL,
                dst_id BIGINT NOT NULL,
                kind VARCHAR NOT NULL,
                created_at TIMESTAMPTZ NOT NULL
            )""",
            """CREATE TABLE outbox (
                seq BIGINT PRIMARY KEY,
                op VARCHAR NOT NULL,
                memory_id BIGINT NOT NULL,
                created_at TIMESTAMPTZ NOT NULL
            )""",
            "CREATE TABLE counters (name VARCHAR PRIMARY KEY, value BIGINT NOT NULL)",
            "INSERT INTO counters VALUES ('outbox_seq', 0)",
        ],
    ),
    (
        2,
        "m002_lifecycle",
        [
            "ALTER TABLE memories ADD COLUMN archived_at TIMESTAMPTZ",
            "ALTER TABLE memories ADD COLUMN deleted_at TIMESTAMPTZ",
            "ALTER TABLE memories ADD COLUMN status_reason VARCHAR",
            """CREATE TABLE audit (
                id BIGINT PRIMARY KEY,
                created_at TIMESTAMPTZ NOT NULL,
                action VARCHAR NOT NULL,
                actor VARCHAR NOT NULL,
                project VARCHAR,
                memory_id BIGINT,
                lineage_id BIGINT,
                affected INTEGER NOT NULL,
                reason VARCHAR,
                details VARCHAR
            )""",
            "INSERT INTO counters VALUES ('audit_seq', 0)",
        ],
    ),
    (
        3,
        "m003_provider_cache",
        [
            """CREATE TABLE provider_cache (
                prompt_hash VARCHAR PRIMARY KEY,
                model VARCHAR NOT NULL,
                reply VARCHAR NOT NULL,
                created_at TIMESTAMPTZ NOT NULL
            )""",
        ],
    ),
    (
        4,
        "m004_analyses",
        # each version's text analysis (`agentmem.currentness.analysis`): made once, when written
        ["ALTER TABLE memories ADD COLUMN analysis BLOB"],
    ),
]

LATEST = MIGRATIONS[-1][0]


def current_version(conn: duckdb.DuckDBPyConnection) -> int:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations "
        "(version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
    )
    row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def migrate(conn: duckdb.DuckDBPyConnection, migrations: list[tuple[int, str, list[str]]] = MIGRATIONS) -> int:
    """Apply the migrations this file has not seen, each in its own transaction; returns the version."""
    have = current_version(conn)
    known = migrations[-1][0] if migrations else 0
    if have > known:
        raise SchemaTooNewError(
            f"this data directory has schema version {have}, but this agentmem knows only up to {known}: "
            "upgrade agentmem to open it (nothing was changed)"
        )
    for version, name, statements in migrations:
        if version <= have:
            continue
        conn.execute("BEGIN TRANSACTION")
        try:
            for sql in statements:
                conn.execute(sql)
            conn.execute("INSERT INTO schema_migrations (version, name) VALUES (?, ?)", [version, name])
            conn.execute("COMMIT")
        except Exception:
            conn.execute("ROLLBACK")
            raise
        have = version
    return have
