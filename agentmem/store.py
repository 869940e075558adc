"""The DuckDB store of record: every version, embeddings, links, and the index outbox.

One process owns the file. Writes happen on the owning connection inside `transaction()`,
serialised by the caller; reads use one cursor per thread.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from agentmem.errors import NotFoundError, StoreError, StoreLockedError
from agentmem.migrations import migrate
from agentmem.records import Link, MemoryVersion, Triple
from agentmem.text import identity, sha256, slot_of
from indexes.docs import OutboxOp

# Column order of every SELECT that builds a MemoryVersion.
COLUMNS = (
    "id", "lineage_id", "version", "parent_id", "is_latest", "status", "content", "title",
    "subject", "predicate", "object", "key", "tier", "kind", "project", "agent", "session",
    "source", "source_ref", "source_ids", "salience", "confidence", "reinforcements", "accesses",
    "pinned", "created_at", "valid_from", "valid_to", "expires_at", "last_reinforced_at",
    "last_accessed_at", "superseded_by", "superseded_at", "supersede_reason",
    "supersede_similarity", "content_hash", "archived_at", "deleted_at", "status_reason",
)  # fmt: skip
SELECT = "SELECT " + ", ".join(COLUMNS) + " FROM memories"
INDEXABLE = "is_latest AND status = 'active'"


def to_version(row: Sequence[Any]) -> MemoryVersion:
    d = dict(zip(COLUMNS, row, strict=True))
    subject, predicate, obj = d.pop("subject"), d.pop("predicate"), d.pop("object")
    d["triple"] = Triple(subject, predicate, obj) if subject is not None else None
    d["source_ids"] = list(d["source_ids"] or [])
    return MemoryVersion(**d)


def version_row(v: MemoryVersion, norm_hash: str, slot: str | None) -> list[Any]:
    t = v.triple
    values = {
        **{name: getattr(v, name) for name in COLUMNS if name not in ("subject", "predicate", "object")},
        "subject": t.subject if t else None,
        "predicate": t.predicate if t else None,
        "object": t.object if t else None,
    }
    return [values[name] for name in COLUMNS] + [norm_hash, slot]


def _slot(v: MemoryVersion) -> str | None:
    return slot_of(v.triple.subject, v.triple.predicate) if v.triple else None


# Arrow types of the columns an update may set where Python values alone do not say (None, tz).
_TS = pa.timestamp("us", tz="UTC")
_ARROW_TYPES: dict[str, pa.DataType] = {
    **{n: _TS for n in ("valid_to", "expires_at", "last_reinforced_at", "last_accessed_at", "superseded_at",
                        "archived_at", "deleted_at", "created_at", "valid_from")},
    **{n: pa.string() for n in ("status", "supersede_reason", "status_reason", "content", "title", "key")},
    **{n: pa.int64() for n in ("superseded_by", "reinforcements", "accesses")},
    **{n: pa.float64() for n in ("supersede_similarity", "confidence", "salience")},
    "is_latest": pa.bool_(),
    "pinned": pa.bool_(),
}  # fmt: skip


def _placeholders(n: int) -> str:
    return ", ".join("?" * n)


class Store:
    """The DuckDB file under a data directory."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._conn = duckdb.connect(str(path))
        except duckdb.IOException as exc:
            if "lock" in str(exc).lower():
                raise StoreLockedError(
                    f"{path} is in use by another process (only one process may own a data directory; "
                    "talk to it over HTTP instead)"
                ) from exc
            raise StoreError(f"cannot open {path}: {exc}") from exc
        except duckdb.Error as exc:
            raise StoreError(f"cannot open {path}: {exc}") from exc
        self._conn.execute("SET TimeZone = 'UTC'")
        self.schema_version = migrate(self._conn)
        self._local = threading.local()
        self._cursor_lock = threading.Lock()
        self._next_id = int(self.scalar("SELECT coalesce(max(id), 0) + 1 FROM memories"))
        # The outbox's last seq: the counter keeps it across a prune that empties the outbox.
        self.last_seq = int(
            self.scalar(
                "SELECT greatest((SELECT value FROM counters WHERE name = 'outbox_seq'), "
                "(SELECT coalesce(max(seq), 0) FROM outbox))"
            )
        )
        self._pending_seq = self.last_seq

    # -- connections -------------------------------------------------------

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """This thread's read cursor."""
        cur = getattr(self._local, "cursor", None)
        if cur is None:
            cur = self._local.cursor = self.new_cursor()
        return cur

    def new_cursor(self) -> duckdb.DuckDBPyConnection:
        """A connection of its own to the same database, for one thread (e.g. a long scan)."""
        with self._cursor_lock:
            cur = self._conn.cursor()
        cur.execute("SET TimeZone = 'UTC'")
        return cur

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One DuckDB transaction on the owning connection; rolled back whole on any error."""
        conn = self._conn
        conn.execute("BEGIN TRANSACTION")
        next_id = self._next_id
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            self._next_id = next_id
            self._pending_seq = self.last_seq
            raise
        self.last_seq = self._pending_seq

    def allocate_id(self) -> int:
        nid = self._next_id
        self._next_id += 1
        return nid

    def reserve_ids_through(self, max_id: int) -> None:
        """New ids start after `max_id` (after an import that brought its own ids)."""
        self._next_id = max(self._next_id, max_id + 1)

    def close(self) -> None:
        self._conn.close()

    def checkpoint(self) -> bool:
        """Fold the write-ahead log into the database file (e.g. so erased content leaves the WAL).

        Best effort, on a cursor of its own so the writer is not held up: while another
        transaction is open DuckDB refuses, and the WAL is folded in later by DuckDB's own
        automatic checkpoint (or on close).
        """
        cur = self.new_cursor()
        try:
            cur.execute("CHECKPOINT")
        except duckdb.TransactionException:
            return False
        finally:
            cur.close()
        return True

    def prune_outbox(self, upto: int) -> None:
        """Forget outbox entries every index has applied and saved (the counter keeps the seq)."""
        with self.transaction() as tx:
            tx.execute("DELETE FROM outbox WHERE seq <= ?", [upto])
            tx.execute("UPDATE counters SET value = greatest(value, ?) WHERE name = 'outbox_seq'", [upto])

    # -- writes (inside transaction()) -------------------------------------

    @staticmethod
    def insert_version(conn: duckdb.DuckDBPyConnection, v: MemoryVersion, norm_hash: str, slot: str | None) -> None:
        names = COLUMNS + ("norm_hash", "slot")
        conn.execute(
            f"INSERT INTO memories ({', '.join(names)}) VALUES ({_placeholders(len(names))})",
            version_row(v, norm_hash, slot),
        )

    @staticmethod
    def update(conn: duckdb.DuckDBPyConnection, memory_id: int, **fields: Any) -> None:
        sets = ", ".join(f"{name} = ?" for name in fields)
        conn.execute(f"UPDATE memories SET {sets} WHERE id = ?", [*fields.values(), memory_id])

    @staticmethod
    def put_embedding(conn: duckdb.DuckDBPyConnection, content_hash: str, model: str, vector: np.ndarray) -> None:
        conn.execute(
            "INSERT OR IGNORE INTO embeddings VALUES (?, ?, ?)",
            [content_hash, model, np.asarray(vector, dtype=np.float32).tolist()],
        )

    @staticmethod
    def put_embeddings(conn: duckdb.DuckDBPyConnection, hashes: Sequence[str], model: str, vectors: np.ndarray) -> None:
        """Many vectors at once through Arrow (binding nested Python lists is ~15x slower); one
        or two as plain parameters (registering an Arrow table costs more than it saves)."""
        if not len(hashes):
            return
        if len(hashes) <= 2:
            for h, v in zip(hashes, vectors, strict=True):
                Store.put_embedding(conn, h, model, v)
            return
        matrix = np.ascontiguousarray(vectors, dtype=np.float32)
        table = pa.table(
            {
                "h": pa.array(list(hashes)),
                "v": pa.FixedSizeListArray.from_arrays(pa.array(matrix.ravel()), matrix.shape[1]),
            }
        )
        conn.register("incoming_vectors", table)
        try:
            conn.execute(
                "INSERT OR IGNORE INTO embeddings SELECT DISTINCT ON (h) h, ?, v::FLOAT[] FROM incoming_vectors",
                [model],
            )
        finally:
            conn.unregister("incoming_vectors")

    @staticmethod
    def insert_versions(conn: duckdb.DuckDBPyConnection, versions: Sequence[MemoryVersion]) -> None:
        """Many versions in one statement, through Arrow (a few as plain parameters)."""
        if len(versions) <= 2:
            for v in versions:
                Store.insert_version(conn, v, sha256(identity(v.content)), _slot(v))
            return
        names = COLUMNS + ("norm_hash", "slot")
        rows = [version_row(v, sha256(identity(v.content)), _slot(v)) for v in versions]
        columns = {name: [r[i] for r in rows] for i, name in enumerate(names)}
        types = {"source_ids": pa.list_(pa.int64())}
        table = pa.table({n: pa.array(vals, type=types.get(n)) for n, vals in columns.items()})
        conn.register("incoming_versions", table)
        try:
            cols = ", ".join(names)
            conn.execute(f"INSERT INTO memories ({cols}) SELECT {cols} FROM incoming_versions")
        finally:
            conn.unregister("incoming_versions")

    @staticmethod
    def add_links(conn: duckdb.DuckDBPyConnection, links: Sequence[Link]) -> None:
        """Many links in one statement."""
        if not links:
            return
        conn.execute(
            "INSERT INTO links SELECT unnest(?::BIGINT[]), unnest(?::BIGINT[]), unnest(?::VARCHAR[]), "
            "unnest(?::TIMESTAMPTZ[])",
            [
                [x.src_id for x in links],
                [x.dst_id for x in links],
                [x.kind for x in links],
                [x.created_at for x in links],
            ],
        )

    @staticmethod
    def apply_updates(conn: duckdb.DuckDBPyConnection, updates: dict[int, dict[str, Any]]) -> None:
        """Set fields on many versions: one statement per distinct set of fields (each version's
        fields are its own values)."""
        groups: dict[tuple[str, ...], list[int]] = {}
        for memory_id, fields in updates.items():
            groups.setdefault(tuple(sorted(fields)), []).append(memory_id)
        for names, ids in groups.items():
            if len(ids) == 1:
                Store.update(conn, ids[0], **updates[ids[0]])
                continue
            columns: dict[str, pa.Array] = {"id": pa.array(ids, type=pa.int64())}
            for n in names:
                values = [updates[i][n] for i in ids]
                columns[n] = pa.array(values, type=_ARROW_TYPES.get(n))
            conn.register("incoming_updates", pa.table(columns))
            try:
                sets = ", ".join(f"{n} = v.{n}" for n in names)
                conn.execute(f"UPDATE memories SET {sets} FROM incoming_updates v WHERE memories.id = v.id")
            finally:
                conn.unregister("incoming_updates")

    def enqueue(self, conn: duckdb.DuckDBPyConnection, ops: Sequence[tuple[OutboxOp, int]], at: datetime) -> int:
        """Append index outbox entries in the caller's transaction (one statement however many);
        returns the seq of the first (the others follow it without gaps). The seqs are counted
        here, by the one writer; `last_seq` moves only when the transaction commits."""
        if not ops:
            return 0
        first = self._pending_seq + 1
        self._pending_seq += len(ops)
        if len(ops) == 1:
            conn.execute("INSERT INTO outbox VALUES (?, ?, ?, ?)", [first, ops[0][0], ops[0][1], at])
            return first
        conn.execute(
            "INSERT INTO outbox SELECT unnest(?::BIGINT[]), unnest(?::VARCHAR[]), unnest(?::BIGINT[]), ?",
            [list(range(first, first + len(ops))), [op for op, _ in ops], [i for _, i in ops], at],
        )
        return first

    @staticmethod
    def update_many(conn: duckdb.DuckDBPyConnection, ids: Sequence[int], **fields: Any) -> None:
        """Set the same fields on many versions in one statement."""
        if not ids:
            return
        sets = ", ".join(f"{name} = ?" for name in fields)
        conn.execute(
            f"UPDATE memories SET {sets} WHERE id IN (SELECT unnest(?::BIGINT[]))", [*fields.values(), list(ids)]
        )

    @staticmethod
    def erase(
        conn: duckdb.DuckDBPyConnection, ids: Sequence[int], hashes: Sequence[str], fields: dict[str, Any]
    ) -> None:
        """Blank erased versions, and drop their vectors unless a surviving version has the very
        same text (a vector is content too)."""
        Store.update_many(conn, ids, **fields)
        conn.execute(
            "DELETE FROM embeddings WHERE content_hash IN (SELECT unnest(?::VARCHAR[])) AND content_hash NOT IN "
            "(SELECT content_hash FROM memories WHERE status <> 'deleted')",
            [list(hashes)],
        )

    @staticmethod
    def add_accesses(conn: duckdb.DuckDBPyConnection, counts: dict[int, int], at: datetime) -> None:
        """Count recalls: `counts` maps ids to how often each was returned since the last time."""
        conn.execute(
            "UPDATE memories SET accesses = accesses + v.n, last_accessed_at = ? "
            "FROM (SELECT unnest(?::BIGINT[]) AS id, unnest(?::INTEGER[]) AS n) v WHERE memories.id = v.id",
            [at, list(counts), list(counts.values())],
        )

    # -- reads -------------------------------------------------------------

    def get_many(self, ids: Sequence[int]) -> dict[int, MemoryVersion]:
        if not ids:
            return {}
        rows = self.cursor().execute(f"{SELECT} WHERE id IN ({_placeholders(len(ids))})", list(ids)).fetchall()
        return {r[0]: to_version(r) for r in rows}

    def where(
        self, condition: str, params: Sequence[Any] = (), order: str = "id", limit: int | None = None
    ) -> list[MemoryVersion]:
        sql = f"{SELECT} WHERE {condition} ORDER BY {order}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [to_version(r) for r in self.cursor().execute(sql, list(params)).fetchall()]

    def has_embedding(self, content_hash: str, model: str) -> bool:
        row = (
            self.cursor()
            .execute("SELECT 1 FROM embeddings WHERE content_hash = ? AND model = ?", [content_hash, model])
            .fetchone()
        )
        return row is not None

    def vector(self, content_hash: str, model: str) -> np.ndarray | None:
        """One stored embedding, or None."""
        row = (
            self.cursor()
            .execute("SELECT vector FROM embeddings WHERE content_hash = ? AND model = ?", [content_hash, model])
            .fetchone()
        )
        return None if row is None else np.asarray(row[0], dtype=np.float32)

    def vectors(self, hashes: Sequence[str], model: str) -> dict[str, np.ndarray]:
        """Stored embeddings by content hash (hashes with none for `model` are left out)."""
        if not hashes:
            return {}
        cur = self.new_cursor()  # a relation of its own: the thread's cursor may hold an unfinished result
        try:
            table = cur.sql(
                "SELECT content_hash, vector FROM embeddings WHERE model = $1 AND content_hash IN "
                "(SELECT unnest($2::VARCHAR[]))",
                params=[model, list(dict.fromkeys(hashes))],
            ).to_arrow_table()
        finally:
            cur.close()
        if not table.num_rows:
            return {}
        flat = table.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
        matrix = flat.reshape(table.num_rows, -1).astype(np.float32, copy=False)
        return dict(zip(table.column("content_hash").to_pylist(), matrix, strict=True))

    def current_of_lineages(self, lineages: Sequence[int]) -> list[int]:
        """Ids of the current (latest, active) versions of these lineages."""
        rows = (
            self.cursor()
            .execute(f"SELECT id FROM memories WHERE {INDEXABLE} AND lineage_id IN (SELECT unnest(?::BIGINT[]))",
                     [list(lineages)])
            .fetchall()
        )  # fmt: skip
        return [r[0] for r in rows]

    def derived_from(self, memory_id: int) -> list[MemoryVersion]:
        """The versions `memory_id` was derived from (its evidence), oldest first."""
        return self.where(
            "id IN (SELECT dst_id FROM links WHERE src_id = ? AND kind = 'derived_from')", [memory_id], order="id"
        )

    def built_on(self, memory_id: int) -> list[MemoryVersion]:
        """The versions derived from `memory_id`."""
        return self.where(
            "id IN (SELECT src_id FROM links WHERE dst_id = ? AND kind = 'derived_from')", [memory_id], order="id"
        )

    def links(self, memory_id: int) -> list[Link]:
        rows = (
            self.cursor()
            .execute(
                "SELECT src_id, dst_id, kind, created_at FROM links WHERE src_id = ? OR dst_id = ? ORDER BY created_at",
                [memory_id, memory_id],
            )
            .fetchall()
        )
        return [Link(*r) for r in rows]

    def scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        row = self.cursor().execute(sql, list(params)).fetchone()
        return row[0] if row else None

    def counts(self, column: str, where: str = "true", params: Sequence[Any] = ()) -> dict[str, int]:
        sql = f"SELECT {column}, count(*) FROM memories WHERE {where} GROUP BY 1 ORDER BY 1"
        rows = self.cursor().execute(sql, list(params)).fetchall()
        return {str(k): int(n) for k, n in rows}


def compact(path: Path) -> tuple[int, int]:
    """Rewrite the DuckDB file into a fresh one and swap it in; returns (bytes before, after).

    DuckDB reuses freed blocks but does not wipe them, so content erased by a governance delete
    can linger in the file's free space until it is overwritten. Compacting copies only live
    data. It needs the file to itself: run it while no server holds the data directory.
    """
    if not path.exists():
        raise NotFoundError(f"no database at {path}")
    fresh = path.with_name(path.name + ".compact")
    for leftover in (fresh, fresh.with_name(fresh.name + ".wal")):
        leftover.unlink(missing_ok=True)
    store = Store(path)  # takes the lock (StoreLockedError if a server holds it) and migrates
    before = path.stat().st_size
    try:
        conn = store._conn
        conn.execute("CHECKPOINT")
        name = conn.execute("SELECT current_database()").fetchone()[0]  # type: ignore[index]
        conn.execute(f"ATTACH '{fresh}' AS compacted")
        try:
            conn.execute(f'COPY FROM DATABASE "{name}" TO compacted')
        finally:
            conn.execute("DETACH compacted")
    except BaseException:
        store.close()
        fresh.unlink(missing_ok=True)
        raise
    store.close()
    os.replace(fresh, path)
    return before, path.stat().st_size
