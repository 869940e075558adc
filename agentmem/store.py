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
from agentmem.supersede import carried, slot_of
from agentmem.text import identity, sha256
from indexes.docs import Doc, OutboxEntry

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


_DOC_COLUMNS = ("id", "title", "content", "project", "agent", "kind", "tier")


def doc_text(title: str | None, content: str, history: Sequence[str] | None) -> str:
    """What BM25 indexes for a current version: its title and content, then the words of the
    versions it superseded that still describe it (`supersede.carried`: dead values left out)."""
    text = f"{title}\n{content}" if title else content
    context = " ".join(dict.fromkeys(w for old in history or () for w in carried(old, content).split()))
    return f"{text}\n{context}" if context else text


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
            raise

    def allocate_id(self) -> int:
        nid = self._next_id
        self._next_id += 1
        return nid

    def close(self) -> None:
        self._conn.close()

    def checkpoint(self) -> bool:
        """Fold the write-ahead log into the database file (e.g. so erased content leaves the WAL).

        Best effort: while another connection holds a transaction open DuckDB refuses, and the
        WAL is folded in later by DuckDB's own automatic checkpoint (or on close).
        """
        try:
            self._conn.execute("CHECKPOINT")
        except duckdb.TransactionException:
            return False
        return True

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
        """Many vectors at once through Arrow (binding nested Python lists is ~15x slower)."""
        if not len(hashes):
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
        """Many versions in one statement (bulk import)."""
        if not versions:
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
    def add_link(conn: duckdb.DuckDBPyConnection, src: int, dst: int, kind: str, at: datetime) -> None:
        conn.execute("INSERT INTO links VALUES (?, ?, ?, ?)", [src, dst, kind, at])

    @staticmethod
    def enqueue(conn: duckdb.DuckDBPyConnection, ops: Sequence[tuple[str, int]], at: datetime) -> None:
        """Append index outbox entries in the caller's transaction (one statement however many)."""
        if not ops:
            return
        row = conn.execute(
            "UPDATE counters SET value = value + ? WHERE name = 'outbox_seq' RETURNING value", [len(ops)]
        ).fetchone()
        assert row is not None
        first = int(row[0]) - len(ops) + 1
        conn.execute(
            "INSERT INTO outbox SELECT unnest(?::BIGINT[]), unnest(?::VARCHAR[]), unnest(?::BIGINT[]), ?",
            [list(range(first, first + len(ops))), [op for op, _ in ops], [i for _, i in ops], at],
        )

    @staticmethod
    def update_many(conn: duckdb.DuckDBPyConnection, ids: Sequence[int], **fields: Any) -> None:
        """Set the same fields on many versions in one statement."""
        if not ids:
            return
        sets = ", ".join(f"{name} = ?" for name in fields)
        conn.execute(
            f"UPDATE memories SET {sets} WHERE id IN (SELECT unnest(?::BIGINT[]))", [*fields.values(), list(ids)]
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


class StoreSource:
    """The store seen from the indexes: latest active versions as documents, and the outbox."""

    def __init__(self, store: Store, model: str) -> None:
        self.store = store
        self.model = model

    # `history`: the contents of the versions this one superseded (erased ones are gone)
    _DOC_SQL = (
        "SELECT m.id, m.title, m.content, m.project, m.agent, m.kind, m.tier, e.vector, "
        "(SELECT list(o.content ORDER BY o.version) FROM memories o "
        "WHERE o.lineage_id = m.lineage_id AND o.status = 'superseded') AS history "
        "FROM memories m JOIN embeddings e ON e.content_hash = m.content_hash AND e.model = ? "
        "WHERE m.is_latest AND m.status = 'active'"
    )

    @staticmethod
    def _docs(rows: Sequence[Sequence[Any]]) -> list[Doc]:
        return [
            Doc(
                id=r[0],
                text=doc_text(r[1], r[2], r[8]),
                vector=np.asarray(r[7], dtype=np.float32),
                project=r[3],
                agent=r[4] or "",
                kind=r[5],
                tier=r[6],
            )
            for r in rows
        ]

    def outbox_after(self, seq: int, limit: int) -> list[OutboxEntry]:
        rows = (
            self.store.cursor()
            .execute("SELECT seq, op, memory_id FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?", [seq, limit])
            .fetchall()
        )
        return [OutboxEntry(*r) for r in rows]

    def docs(self, ids: Sequence[int]) -> list[Doc]:
        if not ids:
            return []
        sql = f"{self._DOC_SQL} AND m.id IN ({_placeholders(len(ids))})"
        return self._docs(self.store.cursor().execute(sql, [self.model, *ids]).fetchall())

    def iter_docs(self, batch: int) -> Iterator[list[Doc]]:
        cur = self.store.new_cursor()  # its own cursor: a rebuild may run beside other reads
        try:
            reader = cur.sql(f"{self._DOC_SQL} ORDER BY m.id", params=[self.model]).to_arrow_reader(batch)
            for chunk in reader:
                if not chunk.num_rows:
                    continue
                cols = chunk.to_pydict()
                vectors = chunk.column("vector").flatten().to_numpy(zero_copy_only=False)
                vectors = vectors.reshape(chunk.num_rows, -1).astype(np.float32, copy=False)
                yield [
                    Doc(
                        id=i,
                        text=doc_text(title, content, history),
                        vector=vectors[n],
                        project=project,
                        agent=agent or "",
                        kind=kind,
                        tier=tier,
                    )
                    for n, (i, title, content, project, agent, kind, tier, history) in enumerate(
                        zip(
                            *(cols[c] for c in (*_DOC_COLUMNS, "history")),
                            strict=True,
                        )
                    )
                ]
        finally:
            cur.close()

    def indexable_count(self) -> int:
        return int(self.store.scalar(f"SELECT count(*) FROM memories WHERE {INDEXABLE}"))

    def indexable_ids(self) -> set[int]:
        rows = self.store.cursor().execute(f"SELECT id FROM memories WHERE {INDEXABLE}").fetchall()
        return {r[0] for r in rows}

    def last_seq(self) -> int:
        return int(self.store.scalar("SELECT value FROM counters WHERE name = 'outbox_seq'"))

    def prune_outbox(self, upto: int) -> None:
        self.store._conn.execute("DELETE FROM outbox WHERE seq <= ?", [upto])
