"""The PostgreSQL store of record: the DuckDB store's queries and writes on a database many nodes share.

A unit decides inside one database transaction (`open_unit`): its reads of current versions
take the locks that make a decision hold across nodes (`agentmem.postgres.current`), and the
commit writes the versions, retires the old ones, refreshes the search documents and the
vectors of the versions it made current, and writes the audit, all in that transaction. There
is no outbox to replay: the search indexes are the database's own, and they change with the
rows. A deadlock or a lock timeout rolls the transaction back and is raised as
`RetryConflict`: the engine's writer runs the batch again (with backoff, until its deadline).
Any other database error also ends the transaction there and then (nothing runs on in an
aborted transaction): an error the values caused (PostgreSQL's data exceptions and limits) is a
`ValidationError`, the others a `StoreError`.

Every statement of a unit names the project of the rows it touches (Citus routes by it): the
transaction remembers the project of every version it read or wrote (`Tx.projects`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import msgspec
import numpy as np
import psycopg
import psycopg.errors
from pgvector.psycopg import register_vector
from psycopg_pool import ConnectionPool

from agentmem.audit import AuditEntry
from agentmem.documents import doc_text
from agentmem.errors import AgentMemError, ConflictError, StoreError, ValidationError
from agentmem.filters import Filter
from agentmem.postgres import bm25, schema
from agentmem.postgres.current import Current, slot_key
from agentmem.records import MAX_ID, Link, MemoryVersion
from agentmem.store import COLUMNS, NO_READS, RetryConflict, StoreOfRecord, filter_sql, to_version, version_row
from agentmem.text import identity, sha256, slot_of
from indexes.docs import OutboxEntry, OutboxOp

_RETRY = (psycopg.errors.DeadlockDetected, psycopg.errors.LockNotAvailable, psycopg.errors.SerializationFailure)
_NAMES = COLUMNS + ("norm_hash", "slot")
# the columns each binary COPY writes
BUILD_SPEEDUP = 7  # pgvector's HNSW build per vector, against inserting vectors one at a time (`loading`)
_COPIED = {"memories": (*_NAMES, "doc", "doc_len", "embedding", "analysis"), "memory_projects": ("id", "project")}
_AUDIT_COLUMNS = ("project", "id", "created_at", "action", "actor", "memory_id", "lineage_id", "affected", "reason",
                  "details")  # fmt: skip
_encode = msgspec.json.Encoder().encode
_IDS_LOCK = 4242002  # shared by every unit that takes new ids, exclusive for an import that brings its own
LOCK_TIMEOUT = 5.0  # seconds one statement waits for a lock before the batch is rolled back and run again


def database_error(exc: psycopg.Error) -> AgentMemError:
    """The agentmem error for a database error that is not a conflict to retry."""
    text = (exc.diag.message_primary if exc.diag and exc.diag.message_primary else str(exc)).strip()
    if isinstance(exc, psycopg.errors.ProgramLimitExceeded | psycopg.DataError):
        return ValidationError(f"the database refused a value: {text}")
    if isinstance(exc, psycopg.errors.UniqueViolation):
        return ConflictError(f"the database refused a duplicate: {text}")
    return StoreError(f"database error: {text}")


def sql(text: str) -> str:
    """A query written with `?` placeholders (as `agentmem.store` writes them) for psycopg."""
    return text.replace("%", "%%").replace("?", "%s")


def _setup(lock_timeout: float) -> Any:
    def setup(conn: psycopg.Connection[Any]) -> None:
        conn.execute("SET TIME ZONE 'UTC'")
        conn.execute("SET hnsw.iterative_scan = relaxed_order")  # a project filter still yields k rows
        # a lock held that long is a stuck node: roll back, and the writer retries until its deadline
        conn.execute(f"SET lock_timeout = '{max(1, int(lock_timeout * 1000))}ms'")
        register_vector(conn)
        conn.commit()

    return setup


class Tx:
    """One unit's database transaction: its connection, the vectors it brings, its locks."""

    def __init__(self, store: PgStore) -> None:
        self.store = store
        self.conn = store.pool.getconn()
        self.vectors: dict[str, np.ndarray] = {}  # by content hash: what this unit's versions are indexed by
        self.current = Current(self)
        self.done = False
        self.projects: dict[int, str] = {}  # memory id -> project, of every version read or written
        self.ids_locked = False
        self.counts = bm25.Counts()  # what this transaction changes in the BM25 statistics
        self.indexed: set[int] = set()  # versions inserted with their search document
        self.erased = False  # a governance delete ran: survivors' documents are written again
        self.before_commit: list[str] = []  # statements run last, in the transaction (`PgStore.loading`)

    def run(self, text: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """A statement in this transaction (`?` placeholders); its rows, if it returns any."""
        if self.done:
            raise StoreError("this unit's database transaction has ended")
        try:
            cur = self.conn.execute(sql(text), list(params))  # type: ignore[arg-type]
            return cur.fetchall() if cur.description is not None else []
        except _RETRY as exc:
            self.end(commit=False)
            raise RetryConflict(str(exc)) from exc
        except psycopg.Error as exc:  # the transaction is aborted: end it here, never run on in it
            self.end(commit=False)
            raise database_error(exc) from exc

    def seen(self, versions: Sequence[MemoryVersion]) -> None:
        self.projects.update((v.id, v.project) for v in versions)

    def allocate_id(self) -> int:
        if not self.ids_locked:  # an import bringing its own ids waits for units holding new ones
            self.run("SELECT pg_advisory_xact_lock_shared(?)", [_IDS_LOCK])
            self.ids_locked = True
        nid = int(self.run("SELECT nextval('memory_ids')")[0][0])
        if nid > MAX_ID:
            raise StoreError(f"the id space is used up: ids go up to 2**53, and {nid - 1} is taken")
        return nid

    def end(self, *, commit: bool) -> None:
        """Commit or roll back, and give the connection back (once)."""
        if self.done:
            return
        self.done = True
        try:
            if commit:
                for statement in self.before_commit:
                    self.conn.execute(statement)  # type: ignore[arg-type]
                self.conn.commit()
            else:
                self.conn.rollback()
        finally:
            self.store.pool.putconn(self.conn)


class PgStore(StoreOfRecord):
    """One PostgreSQL database (a URL psycopg accepts), shared by every node."""

    def __init__(
        self, url: str, *, model: str, dim: int, pool_size: int = 8, lock_timeout: float = LOCK_TIMEOUT
    ) -> None:
        self.url = url
        self.model = model
        try:
            with psycopg.connect(url, autocommit=True, connect_timeout=30) as conn:
                self.schema_version = schema.migrate(conn, dim, model)  # before the pool: it makes `vector`
                self.copy_types = {t: _column_types(conn, t, c) for t, c in _COPIED.items()}
            self.pool = ConnectionPool(
                url, min_size=1, max_size=pool_size, configure=_setup(lock_timeout), open=True, timeout=30
            )
        except psycopg.Error as exc:
            raise StoreError(f"cannot use the database: {exc}") from exc
        except Exception:
            if hasattr(self, "pool"):
                self.pool.close()
            raise
        self._local = threading.local()

    # -- connections -------------------------------------------------------

    def _rows(self, sql_text: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.query(sql_text, params)

    def query(
        self, sql_text: str, params: Sequence[Any] = (), *, autocommit: bool = False, binary: bool = False
    ) -> list[tuple[Any, ...]]:
        """One statement outside any unit (`?` placeholders): it sees every committed write, on
        every node. `autocommit` for what runs outside a transaction (VACUUM, REINDEX CONCURRENTLY);
        `binary` for rows read in PostgreSQL's binary format (vectors: no text to parse)."""
        with self.pool.connection() as conn:
            if autocommit:
                conn.autocommit = True
            try:
                cur = conn.execute(sql(sql_text), list(params), binary=binary)  # type: ignore[arg-type]
                return cur.fetchall() if cur.description is not None else []
            finally:
                if autocommit:
                    conn.autocommit = False

    def open_unit(self) -> Tx:
        return Tx(self)

    def abort(self, session: Any) -> None:
        if isinstance(session, Tx):
            session.end(commit=False)

    @contextmanager
    def transaction(self, session: Any = None) -> Iterator[Tx]:
        tx = session if isinstance(session, Tx) else Tx(self)
        try:
            yield tx
            if tx.done:
                raise StoreError("this unit's database transaction has ended")
            if tx.counts:  # last: the statistics rows stay locked only until the commit
                tx.counts.flush(tx.run)
            tx.conn.commit()
        except _RETRY as exc:
            tx.end(commit=False)
            raise RetryConflict(str(exc)) from exc
        except psycopg.Error as exc:
            tx.end(commit=False)
            raise database_error(exc) from exc
        except BaseException:
            tx.end(commit=False)
            raise
        tx.end(commit=True)

    def allocate_id(self) -> int:
        return int(self.scalar("SELECT nextval('memory_ids')"))

    def claim_ids(self, session: Any, ids: Sequence[int]) -> int:
        """Before an import writes versions with ids of their own: waits for every unit holding new
        ids to end, moves the id sequence past `ids` (new ids never meet them), and returns how
        many of them are in use (in any project), all in the import's transaction."""
        tx: Tx = session
        tx.run("SELECT pg_advisory_xact_lock(?)", [_IDS_LOCK])
        tx.ids_locked = True
        tx.run("SELECT setval('memory_ids', greatest(?, (SELECT last_value FROM memory_ids)))", [max(1, max(ids))])
        return len(self.projects_of(ids, tx.run))

    def reserve_ids_through(self, max_id: int) -> None:
        self._rows(
            "SELECT setval('memory_ids', greatest(?, (SELECT last_value FROM memory_ids)))", [max(1, int(max_id))]
        )

    def close(self) -> None:
        self.pool.close()

    def checkpoint(self) -> bool:
        return True  # PostgreSQL checkpoints on its own

    def loading(self, session: Any, current: int) -> None:
        """An import of `current` current versions builds the vector index after its rows, as
        pgvector and pg_restore do, when that costs less than adding each vector to it: pgvector's
        HNSW build is about `BUILD_SPEEDUP` times faster per vector than inserting one at a time
        (10,000 memories: 1.4 s against 10 s), so it pays while the index holds fewer than
        (BUILD_SPEEDUP - 1) x `current` vectors (a restore into an empty database; the first
        chunks of a chunked import). The index is dropped and built again in the import's
        transaction, so a failed import leaves it as it was; meanwhile other transactions wait for
        the table. If another transaction is using the table now, the import does not wait for it
        and keeps the index as it goes."""
        tx: Tx = session
        enough = (BUILD_SPEEDUP - 1) * current
        if not current or tx.run(schema.CURRENT_UP_TO, [enough])[0][0] >= enough:
            return
        tx.run("SAVEPOINT loading")
        try:
            tx.conn.execute("LOCK TABLE memories IN ACCESS EXCLUSIVE MODE NOWAIT")
        except psycopg.errors.LockNotAvailable:
            tx.run("ROLLBACK TO SAVEPOINT loading")
            return
        tx.run("DROP INDEX memories_embedding")
        tx.run("RELEASE SAVEPOINT loading")
        tx.before_commit.append(schema.VECTOR_INDEX)

    def loaded(self) -> None:
        """ANALYZE the tables an import fills, as PostgreSQL advises after a bulk load: until
        autovacuum gets to them (a minute or more), the planner takes a fresh table for an empty
        one and scans a project's every row for a text query instead of the GIN index (10,000
        memories: recall p50 133 ms before, 14 ms after)."""
        self.query("ANALYZE memories, memory_projects, bm25_terms, bm25_projects, embeddings, links",
                   autocommit=True)  # fmt: skip

    def prune_outbox(self, upto: int) -> None:
        return None  # no outbox: the search indexes change with the rows

    def outbox_after(self, seq: int, limit: int) -> list[OutboxEntry]:
        return []

    # -- writes (inside transaction()) -------------------------------------

    def put_embeddings(
        self, conn: Any, hashes: Sequence[str], model: str, vectors: np.ndarray, *, new: bool = False
    ) -> None:
        """Vectors by content hash: kept with the unit, stored per project with the versions that use them."""
        if isinstance(conn, Tx):
            for h, v in zip(hashes, vectors, strict=True):
                conn.vectors.setdefault(h, np.asarray(v, dtype=np.float32))
            return
        raise StoreError("embeddings are stored with a unit's versions on PostgreSQL")

    def put_unit_vectors(self, conn: Any, vectors: dict[str, np.ndarray], model: str) -> None:
        if vectors:
            self.put_embeddings(conn, list(vectors), model, np.stack(list(vectors.values())))

    def insert_versions(self, conn: Any, versions: Sequence[MemoryVersion], analyses: Mapping[int, bytes]) -> None:
        """The versions in one COPY, each with its vector, and every id's project in another.

        A current version whose whole lineage is in `versions` (a new memory, or an import) and
        whose vector the unit brings gets its search document here too, so it is written once (an
        update would write the row and its index entries again); the others get theirs in
        `enqueue`, and their vector with it."""
        tx: Tx = conn
        if not versions:
            return
        tx.seen(versions)
        have = {(v.lineage_id, v.version) for v in versions}
        indexed: list[MemoryVersion] = []
        past: dict[int, list[MemoryVersion]] = {}
        for v in versions:
            if v.status == "superseded":
                past.setdefault(v.lineage_id, []).append(v)
        with tx.conn.cursor() as cur:
            with cur.copy(f"COPY memories ({', '.join(_COPIED['memories'])}) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(self.copy_types["memories"])
                for v in versions:
                    doc = None
                    whole = all((v.lineage_id, n) in have for n in range(1, v.version))
                    if v.is_latest and v.status == "active" and whole and v.content_hash in tx.vectors:
                        history = [o.content for o in sorted(past.get(v.lineage_id, []), key=lambda o: o.version)]
                        doc = doc_text(v.title, v.content, history)
                        indexed.append(v)
                    waits = v.is_latest and v.status == "active" and doc is None  # `enqueue` sets both
                    vector = None if waits else tx.vectors.get(v.content_hash)
                    copy.write_row([*version_row(v, sha256(identity(v.content)), _slot(v)), doc,
                                    None if doc is None else bm25.doc_length(doc), vector,
                                    analyses.get(v.id)])  # fmt: skip
            with cur.copy("COPY memory_projects (id, project) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(self.copy_types["memory_projects"])
                for v in versions:
                    copy.write_row((v.id, v.project))
        tx.indexed.update(v.id for v in indexed)
        for project in sorted({v.project for v in versions}):
            mine = [v.id for v in indexed if v.project == project]
            if mine:
                added = tx.run(f"SELECT {bm25.counted('m')} FROM memories m WHERE m.project = ? "
                               "AND m.id = ANY(?::bigint[]) AND m.doc IS NOT NULL", [project, mine])  # fmt: skip
                tx.counts.add(added, 1)
            hashes = sorted({v.content_hash for v in versions if v.project == project and v.content_hash in tx.vectors})
            if hashes:
                with tx.conn.cursor() as cur:  # the vectors in binary (%b): as fast as the COPY
                    cur.execute(
                        "INSERT INTO embeddings (project, content_hash, model, vector) SELECT %s, h, %s, v::real[] "
                        "FROM unnest(%s::text[], %b::vector[]) AS r(h, v) ORDER BY h ON CONFLICT DO NOTHING",
                        [project, self.model, hashes, [tx.vectors[h] for h in hashes]],
                    )

    def apply_updates(
        self, conn: Any, updates: dict[int, dict[str, Any]], read: Mapping[int, tuple[str, str, bool]] = NO_READS
    ) -> None:
        """Each update in one statement, which holds only if the version is still as the unit read
        it (status, is_latest): a unit reading outside the locks (a sweep, a restore) may have raced
        another node, whose change is then never overwritten (the batch runs again)."""
        tx: Tx = conn
        for memory_id, fields in updates.items():
            sets = ", ".join(f"{name} = ?" for name in fields)
            project, status, latest = read[memory_id]
            changed = tx.run(
                f"UPDATE memories SET {sets} WHERE project = ? AND id = ? AND status = ? AND is_latest = ? "
                "RETURNING id",
                [*fields.values(), project, memory_id, status, latest],
            )
            if not changed:
                tx.end(commit=False)
                raise RetryConflict(f"memory {memory_id} was changed by another node meanwhile")
            tx.projects[memory_id] = project

    def erase(
        self,
        conn: Any,
        ids: Sequence[int],
        hashes: Sequence[str],
        fields: dict[str, Any],
        *,
        lineages: Sequence[tuple[str, int]] = (),
        known: AbstractSet[int] = frozenset(),
    ) -> None:
        """Blank erased versions (their search document and vector too), and drop their stored
        vectors unless a surviving version of the project has the very same text.

        First every version of their lineages is locked; one the delete did not read (another
        node superseded a version meanwhile) refuses the commit, and the delete runs again. The
        versions of those lineages that are not current lose their search documents too: they
        held words of older versions."""
        tx: Tx = conn
        for project in sorted({p for p, _ in lineages}):
            mine = [lid for p, lid in lineages if p == project]
            tx.run("SELECT id FROM memories WHERE project = ? AND lineage_id = ANY(?::bigint[]) FOR UPDATE",
                   [project, mine])  # fmt: skip
            now = tx.run(  # a new statement: it sees versions committed while it waited for the locks
                "SELECT id FROM memories WHERE project = ? AND lineage_id = ANY(?::bigint[]) AND status <> 'deleted'",
                [project, mine],
            )
            added = sorted({int(r[0]) for r in now} - set(known))
            if added:
                tx.end(commit=False)
                raise RetryConflict(
                    f"memories {added[:5]} were added to the deleted lineages by another node meanwhile"
                )
            tx.erased = True
            sets = ", ".join(f"{name} = ?" for name in fields)
            erased = tx.run(
                f"UPDATE memories m SET {sets}, doc = NULL, doc_len = NULL, embedding = NULL FROM memories o "
                "WHERE m.project = ? AND m.id = ANY(?::bigint[]) AND o.project = m.project AND o.id = m.id "
                f"RETURNING o.doc IS NOT NULL, {bm25.counted('o')}",
                [*fields.values(), project, list(ids)],
            )
            tx.counts.add([r[1:] for r in erased if r[0]], -1)
            tx.counts.add(tx.run(
                "UPDATE memories m SET doc = NULL, doc_len = NULL FROM memories o WHERE m.project = ? "
                f"AND m.lineage_id = ANY(?::bigint[]) AND m.doc IS NOT NULL AND NOT ({schema.M_CURRENT}) "
                "AND o.project = m.project AND o.id = m.id "
                f"RETURNING {bm25.counted('o')}",
                [project, mine],
            ), -1)  # fmt: skip
            tx.run(
                "DELETE FROM embeddings e WHERE e.project = ? AND e.content_hash = ANY(?::text[]) AND NOT EXISTS "
                "(SELECT 1 FROM memories m WHERE m.project = ? AND m.content_hash = e.content_hash "
                "AND m.status <> 'deleted')",
                [project, list(hashes), project],
            )

    def add_links(self, conn: Any, links: Sequence[Link]) -> None:
        """Each link in its source's project (a link never joins two projects)."""
        tx: Tx = conn
        unknown = sorted({x.src_id for x in links} - set(tx.projects))
        if unknown:  # sources this unit did not read or write (not one of agentmem's own paths)
            tx.seen(list(self.get_many(unknown).values()))
        rows = [
            (tx.projects[x.src_id], x.src_id, x.dst_id, x.kind, x.created_at) for x in links if x.src_id in tx.projects
        ]
        if rows:
            with tx.conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO links (project, src_id, dst_id, kind, created_at) VALUES (%s, %s, %s, %s, %s)", rows
                )

    def enqueue(self, conn: Any, ops: Sequence[tuple[OutboxOp, int]], at: datetime) -> int:
        """What the embedded engine hands its indexes, done in the transaction: each version this
        unit made current gets its search document (`documents.doc_text`) and its vector; each it
        took out of the current ones loses its search document (only current versions are
        searched, and a document holds words of older versions, which a delete may erase). The
        BM25 statistics follow every document set or cleared (`bm25.Counts`)."""
        tx: Tx = conn
        upserts = sorted({i for op, i in ops if op == "upsert"} - (set() if tx.erased else tx.indexed))
        left = sorted({i for op, i in ops if op == "delete"} - set(upserts) - tx.indexed)
        projects = self._projects(tx, [*upserts, *left])
        for project in sorted(set(projects.values())):
            gone = [i for i in left if projects.get(i) == project]
            if gone:
                tx.counts.add(tx.run(
                    "UPDATE memories m SET doc = NULL, doc_len = NULL FROM memories o WHERE m.project = ? "
                    f"AND m.id = ANY(?::bigint[]) AND m.doc IS NOT NULL AND NOT ({schema.M_CURRENT}) "
                    "AND o.project = m.project AND o.id = m.id "
                    f"RETURNING {bm25.counted('o')}", [project, gone]), -1)  # fmt: skip
            mine = [i for i in upserts if projects.get(i) == project]
            if mine:
                self._index(tx, project, mine)
        return 0

    def _projects(self, tx: Tx, ids: Sequence[int]) -> dict[int, str]:
        unknown = [i for i in ids if i not in tx.projects]
        if unknown:  # e.g. a delete's surviving versions, which it read outside the unit
            tx.seen(list(self.get_many(unknown).values()))
        return {i: tx.projects[i] for i in ids if i in tx.projects}

    def _index(self, tx: Tx, project: str, ids: list[int]) -> None:
        """The search documents (and missing vectors) of current versions, in one statement."""
        rows = tx.run(
            "SELECT m.id, m.title, m.content, m.content_hash, "
            "(SELECT array_agg(o.content ORDER BY o.version) FROM memories o WHERE o.project = m.project "
            "AND o.lineage_id = m.lineage_id AND o.status = 'superseded') "
            f"FROM memories m WHERE m.project = ? AND m.id = ANY(?::bigint[]) AND {schema.M_CURRENT} ORDER BY m.id",
            [project, ids],
        )
        if not rows:
            return
        docs = [doc_text(r[1], r[2], r[4]) for r in rows]
        # the unit's vector, else the one the row has, else one this project stored for the same text
        changed = tx.run(
            "UPDATE memories m SET doc = v.doc, doc_len = v.len, embedding = coalesce(v.vec, m.embedding, "
            "(SELECT e.vector::vector FROM embeddings e WHERE e.project = m.project "
            "AND e.content_hash = m.content_hash AND e.model = ?)) "
            "FROM unnest(?::bigint[], ?::text[], ?::integer[], ?::vector[]) AS v(id, doc, len, vec), memories o "
            "WHERE m.project = ? AND m.id = v.id AND o.project = m.project AND o.id = m.id "
            f"RETURNING o.doc IS NOT NULL, {bm25.counted('o')}, {bm25.counted('m')}",
            [self.model, [r[0] for r in rows], docs, [bm25.doc_length(d) for d in docs],
             [tx.vectors.get(r[3]) for r in rows], project],
        )  # fmt: skip
        tx.counts.add([r[1:4] for r in changed if r[0]], -1)
        tx.counts.add([r[4:7] for r in changed], 1)

    def add_accesses(self, conn: Any, counts: dict[int, int], at: datetime) -> None:
        """Access counts, one statement per project (their ids' projects found first)."""
        tx: Tx = conn
        known = {i: p for i in counts if (p := tx.projects.get(i)) is not None}
        known.update(self.projects_of([i for i in counts if i not in known], tx.run))
        for project in sorted(set(known.values())):
            mine = sorted(i for i, p in known.items() if p == project)
            tx.run(
                "UPDATE memories SET accesses = accesses + v.n, last_accessed_at = ? "
                "FROM (SELECT unnest(?::bigint[]) AS id, unnest(?::integer[]) AS n) v "
                "WHERE memories.project = ? AND memories.id = v.id",
                [at, mine, [counts[i] for i in mine], project],
            )

    def write_audit(self, conn: Any, entries: Sequence[AuditEntry]) -> list[int]:
        """Entries in the caller's transaction; one that spans projects is filed under ''."""
        tx: Tx = conn
        if not entries:
            return []
        ids = [int(r[0]) for r in tx.run("SELECT nextval('audit_ids') FROM generate_series(1, ?)", [len(entries)])]
        ids.sort()
        with tx.conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO audit ({', '.join(_AUDIT_COLUMNS)}) VALUES ({', '.join(['%s'] * len(_AUDIT_COLUMNS))})",
                [
                    (e.project or "", i, e.created_at, e.action, e.actor, e.memory_id, e.lineage_id, e.affected,
                     e.reason, _encode(e.details).decode() if e.details else None)
                    for i, e in zip(ids, entries, strict=True)
                ],
            )  # fmt: skip
        return ids

    def claim_job(self, name: str, every_seconds: float, now: datetime) -> bool:
        """One node of all runs a scheduled job each period: the first whose timer fires after the
        period since the last run (recorded in `agentmem_meta`) claims it; the others skip it."""
        key = f"job:{name}"
        with self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [key])
            row = conn.execute("SELECT value FROM agentmem_meta WHERE name = %s", [key]).fetchone()
            if row is not None and (now - datetime.fromisoformat(row[0])).total_seconds() < 0.9 * every_seconds:
                return False
            conn.execute(
                "INSERT INTO agentmem_meta VALUES (%s, %s) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                [key, now.isoformat()],
            )
        return True

    def recount_bm25(self) -> None:
        """Count every project's BM25 statistics again from the search documents (a rebuild).
        Writers wait meanwhile for the statistics' lock, so none of their changes is counted twice
        or lost."""
        with self.pool.connection() as conn, conn.transaction():

            def run(text: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
                cur = conn.execute(sql(text), list(params))  # type: ignore[arg-type]
                return cur.fetchall() if cur.description is not None else []

            run("LOCK TABLE bm25_projects, bm25_terms IN SHARE ROW EXCLUSIVE MODE")
            for project in self.projects():
                bm25.recount(run, project)

    def projects(self) -> list[str]:
        """Every project that has a version (a read over every shard: upkeep, never a request)."""
        return [r[0] for r in self._rows("SELECT DISTINCT project FROM memories ORDER BY 1")]

    def broken_invariants(self, now: datetime, exempt: Sequence[str]) -> list[str]:
        """The store's invariants (`StoreOfRecord.broken_invariants`), and each project's BM25
        statistics against its search documents."""
        problems = super().broken_invariants(now, exempt)
        for project in self.projects():
            problems += bm25.drift(self._rows, project)
        return problems

    # -- reads by id: each finds its project first --------------------------------
    # `memory_projects` holds every id's project (on Citus it would be distributed by id), so a
    # read that names ids and no project takes two single-shard steps, not one over every shard

    def projects_of(self, ids: Sequence[int], run: Any = None) -> dict[int, str]:
        """The project of each of these ids that is a stored version."""
        wanted = sorted({int(i) for i in ids})
        if not wanted:
            return {}
        rows = (run or self._rows)(schema.PROJECTS_OF, [wanted])
        return {int(i): str(p) for i, p in rows}

    def analyses(self, versions: Iterable[MemoryVersion]) -> dict[int, bytes]:
        """The stored text analyses of `versions`, by id (one read per project)."""
        by_project: dict[str, list[int]] = {}
        for v in versions:
            by_project.setdefault(v.project, []).append(v.id)
        out: dict[int, bytes] = {}
        for project, ids in sorted(by_project.items()):
            rows = self.query("SELECT id, analysis FROM memories WHERE project = ? AND id = ANY(?::bigint[]) "
                              "AND analysis IS NOT NULL", [project, ids])  # fmt: skip
            out.update((int(i), bytes(data)) for i, data in rows)
        return out

    def by_project(self, ids: Sequence[int], run: Any = None) -> dict[str, list[int]]:
        """These ids (those stored) grouped by their project, projects and ids in order."""
        out: dict[str, list[int]] = {}
        for i, p in sorted(self.projects_of(ids, run).items()):
            out.setdefault(p, []).append(i)
        return dict(sorted(out.items()))

    def scoped(self, f: Filter) -> Filter:
        """`f` with the projects of the ids or lineages it names (a lineage's id is its first
        version's), when it names none itself: then the read carries its project."""
        if f.projects is not None:
            return f
        named = [*(f.ids or ()), *(f.lineages or ())]
        if not named:
            return f  # a read over every project (upkeep, or a caller scoped to none)
        return f.narrow(projects=tuple(self.by_project(named)))

    def get_many(self, ids: Sequence[int]) -> dict[int, MemoryVersion]:
        out: dict[int, MemoryVersion] = {}
        for project, mine in self.by_project(ids).items():
            for v in self.where("project = ? AND id = ANY(?::bigint[])", [project, mine]):
                out[v.id] = v
        return out

    def derived_from(self, memory_id: int) -> list[MemoryVersion]:
        return self._linked(memory_id, "dst_id", "src_id")

    def built_on(self, memory_id: int) -> list[MemoryVersion]:
        return self._linked(memory_id, "src_id", "dst_id")

    def _linked(self, memory_id: int, want: str, given: str) -> list[MemoryVersion]:
        project = self.projects_of([memory_id]).get(memory_id)
        if project is None:
            return []
        return self.where(
            f"project = ? AND id IN (SELECT {want} FROM links WHERE project = ? AND {given} = ? "
            "AND kind = 'derived_from')",
            [project, project, memory_id],
        )

    def _derived_rows(self, ids: Sequence[int]) -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = []
        for project, mine in self.by_project(ids).items():  # one shard each
            rows += self._rows(
                "SELECT dst_id, src_id FROM links WHERE project = ? AND kind = 'derived_from' "
                "AND dst_id = ANY(?::bigint[]) ORDER BY dst_id, src_id",
                [project, mine],
            )
        return sorted(rows)

    def links(self, memory_id: int) -> list[Link]:
        project = self.projects_of([memory_id]).get(memory_id)
        if project is None:
            return []
        rows = self._rows(
            "SELECT src_id, dst_id, kind, created_at FROM links WHERE project = ? AND (src_id = ? OR dst_id = ?) "
            "ORDER BY created_at",
            [project, memory_id, memory_id],
        )
        return [Link(*r) for r in rows]

    def current_of_lineages(self, lineages: Sequence[int]) -> list[int]:
        out: list[int] = []
        for project, mine in self.by_project(lineages).items():
            out += [int(r[0]) for r in self._rows(
                f"SELECT id FROM memories WHERE project = ? AND {schema.CURRENT} AND lineage_id = ANY(?::bigint[])",
                [project, mine])]  # fmt: skip
        return out

    def count_links(self, f: Filter) -> int:
        f = self.scoped(f)
        where, params = filter_sql(f)
        mine, more = _in_projects(f, "links")
        return int(self.scalar(f"SELECT count(*) FROM links WHERE {mine} AND src_id IN "
                               f"(SELECT id FROM memories WHERE {where})", [*more, *params]))  # fmt: skip

    def links_from(self, f: Filter) -> list[Link]:
        f = self.scoped(f)
        where, params = filter_sql(f)
        mine, more = _in_projects(f, "links")
        rows = self._rows(
            f"SELECT src_id, dst_id, kind, created_at FROM links WHERE {mine} AND src_id IN "
            f"(SELECT id FROM memories WHERE {where}) ORDER BY created_at, src_id, dst_id",
            [*more, *params],
        )
        return [Link(*r) for r in rows]

    def sessions_not_derived_into(self, f: Filter, tier: str) -> list[str]:
        f = self.scoped(f)
        where, params = filter_sql(f, "m")
        rows = self._rows(
            f"SELECT DISTINCT m.session FROM memories m WHERE {where} AND m.session IS NOT NULL AND NOT EXISTS "
            "(SELECT 1 FROM links l JOIN memories e ON e.project = l.project AND e.id = l.src_id "
            "WHERE l.project = m.project AND l.dst_id = m.id AND l.kind = 'derived_from' AND e.tier = ? "
            "AND e.is_latest AND e.status = 'active') ORDER BY m.session",
            [*params, tier],
        )
        return [r[0] for r in rows]

    # -- reads PostgreSQL does its own way ------------------------------------

    def audit_page(self, **query: Any) -> tuple[list[AuditEntry], int | None]:
        entries, cursor = super().audit_page(**query)
        return [msgspec.structs.replace(e, project=e.project or None) for e in entries], cursor

    def versions_with_vectors(self, f: Filter, model: str) -> Iterator[tuple[MemoryVersion, list[float] | None]]:
        where, params = filter_sql(f, "m")
        cols = ", ".join(f"m.{c}" for c in COLUMNS)
        with self.pool.connection() as conn, conn.transaction(), conn.cursor(name="versions_with_vectors") as cur:
            cur.execute(
                sql(
                    f"SELECT {cols}, e.vector FROM memories m LEFT JOIN embeddings e ON e.project = m.project "
                    f"AND e.content_hash = m.content_hash AND e.model = ? WHERE {where} ORDER BY m.id"
                ),
                [model, *params],
            )
            while rows := cur.fetchmany(1000):
                for r in rows:
                    yield to_version(r[:-1]), (list(r[-1]) if r[-1] is not None else None)

    def nearest(self, f: Filter, model: str, vector: np.ndarray, n: int) -> list[tuple[MemoryVersion, float]]:
        """Exact cosine over the versions `f` selects (any status: `as_of` reads past versions too)."""
        where, params = filter_sql(f, "m")
        cols = ", ".join(f"m.{c}" for c in COLUMNS)
        rows = self._rows(
            f"SELECT {cols}, 1 - (m.embedding <=> ?::vector) AS score FROM memories m "
            f"WHERE {where} AND m.embedding IS NOT NULL ORDER BY score DESC, m.id DESC LIMIT {int(n)}",
            [np.asarray(vector, dtype=np.float32), *params],
        )
        return [(to_version(r[:-1]), float(r[-1])) for r in rows]

    def word_matches(self, f: Filter, prefixes: Sequence[str], n: int) -> list[MemoryVersion]:
        """As the DuckDB store's, without accent folding of the stored text (PostgreSQL's
        `unaccent` is an extension the test server does not ship)."""
        if not prefixes:
            return []
        where, params = filter_sql(f, "m")
        patterns = [rf"\m{_regex_escape(p)}" for p in prefixes]
        score = " + ".join(["(lower(m.content) ~ ?)::integer"] * len(patterns))
        cols = ", ".join(f"m.{c}" for c in COLUMNS)
        rows = self._rows(
            f"SELECT {cols}, {score} AS score FROM memories m WHERE {where} AND ({score}) > 0 "
            f"ORDER BY score DESC, m.id DESC LIMIT {int(n)}",
            [*patterns, *params, *patterns],
        )
        return [to_version(r[:-1]) for r in rows]

    def vectors(self, hashes: Sequence[str], model: str, *, project: str | None = None) -> dict[str, np.ndarray]:
        """Stored vectors by content hash: `project`'s (where embeddings are kept), or any project's."""
        if not hashes:
            return {}
        mine = " AND project = ?" if project is not None else ""
        rows = self._rows(
            "SELECT DISTINCT ON (content_hash) content_hash, vector FROM embeddings WHERE model = ? "
            f"AND content_hash = ANY(?::text[]){mine}",
            [model, list(dict.fromkeys(hashes)), *([project] if project is not None else [])],
        )
        return {h: np.asarray(v, dtype=np.float32) for h, v in rows}

    def vector(self, content_hash: str, model: str, *, project: str | None = None) -> np.ndarray | None:
        return self.vectors([content_hash], model, project=project).get(content_hash)

    def held_embedded(self, model: str) -> list[tuple[str, str]]:
        """(project, content hash) of every stored vector: each project keeps its own."""
        rows = self._rows("SELECT project, content_hash FROM embeddings WHERE model = ?", [model])
        return [(r[0], r[1]) for r in rows]

    def embedded(self, hashes: Sequence[str], model: str, *, project: str | None = None) -> set[str]:
        """Which of these content hashes have a stored vector in `project` (or in any project)."""
        return set(self.vectors(hashes, model, project=project))

    def cache_reply(self, prompt_hash: str, model: str, reply: str, at: datetime) -> None:
        self._rows(
            "INSERT INTO provider_cache VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING", [prompt_hash, model, reply, at]
        )


def _column_types(conn: psycopg.Connection[Any], table: str, columns: Sequence[str]) -> list[str]:
    """The type of each of `table`'s `columns`, as a binary COPY names them (`int8`, `int8[]`, `vector`)."""
    rows = dict(conn.execute(
        "SELECT a.attname, t.typname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
        "WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped", [table]).fetchall())  # fmt: skip
    return [f"{rows[c][1:]}[]" if rows[c].startswith("_") else rows[c] for c in columns]


def _in_projects(f: Filter, alias: str) -> tuple[str, list[Any]]:
    """The condition on `alias`'s project that `f` names (true when it names none), and its parameter."""
    if f.projects is None:
        return "true", []
    if len(f.projects) == 1:
        return f"{alias}.project = ?", [f.projects[0]]
    return f"{alias}.project = ANY(?::text[])", [list(f.projects)]


def _slot(v: MemoryVersion) -> str | None:
    return slot_key(slot_of(v.triple.subject, v.triple.predicate)) if v.triple else None


def _regex_escape(text: str) -> str:
    """`text` as a literal in a PostgreSQL regular expression (ARE)."""
    return "".join("\\" + c if not c.isalnum() and c != " " else c for c in text)
