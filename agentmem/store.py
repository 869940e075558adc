"""The DuckDB store of record: every version, embeddings, links, and the index outbox.

One process owns the file. Writes happen on the owning connection inside `transaction()`,
serialised by the caller; reads use one cursor per thread.
"""

from __future__ import annotations

import os
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import duckdb
import numpy as np
import pyarrow as pa

from agentmem import audit
from agentmem.audit import AuditEntry
from agentmem.errors import NotFoundError, StoreBusyError, StoreError, StoreLockedError
from agentmem.filters import ALL, Filter
from agentmem.migrations import migrate
from agentmem.records import MAX_ID, Link, MemoryVersion, Triple
from agentmem.text import identity, sha256, slot_of
from indexes.docs import OutboxEntry, OutboxOp

NO_READS: Mapping[int, tuple[str, str, bool]] = {}


class RetryConflict(StoreBusyError):
    """A shared database rolled a unit back (a deadlock, a lock wait that timed out): the writer
    runs the batch again; a caller hears it only once retries ran out."""


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
_TIMES = tuple(i for i, name in enumerate(COLUMNS) if name.endswith("_at") or name in ("valid_from", "valid_to"))
INDEXABLE = "is_latest AND status = 'active'"


def to_version(row: Sequence[Any]) -> MemoryVersion:
    """A version from a row in `COLUMNS` order. Its times are put in `datetime.UTC`: the drivers give
    them a `zoneinfo` UTC, with which every comparison and subtraction on recall's hot path costs
    three times as much (~0.5 against ~0.16 us)."""
    row = list(row)
    for i in _TIMES:
        if (t := row[i]) is not None and t.tzinfo is not UTC:
            row[i] = t.astimezone(UTC)
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


# -- the one translation of a Filter into SQL ------------------------------------------

_ONE_OF = (
    ("id", "ids", "BIGINT"), ("lineage_id", "lineages", "BIGINT"), ("project", "projects", "VARCHAR"),
    ("kind", "kinds", "VARCHAR"), ("tier", "tiers", "VARCHAR"), ("status", "statuses", "VARCHAR"),
)  # fmt: skip
_EQUALS = ("agent", "session", "source", "source_ref", "content_hash")

# How a read may order versions (ties broken by id where the order alone does not decide).
Order = Literal["id", "-id", "version", "valid_from", "session"]
_ORDER_SQL: dict[str, str] = {
    "id": "id", "-id": "id DESC", "version": "version", "valid_from": "valid_from, id",
    "session": "session, valid_from, id",
}  # fmt: skip


def filter_sql(f: Filter, alias: str = "") -> tuple[str, list[Any]]:
    """The WHERE condition selecting `f`'s versions, and its parameters: every value the caller
    gave is a bound parameter, never SQL text. `alias` names the memories table in a join."""
    col = f"{alias}.{{}}".format if alias else str
    conds: list[str] = []
    params: list[Any] = []
    for column, field, sql_type in _ONE_OF:
        values = getattr(f, field)
        if values is None:
            continue
        if len(values) == 1:
            conds.append(f"{col(column)} = ?")
            params.append(values[0])
        else:
            conds.append(f"{col(column)} IN (SELECT unnest(?::{sql_type}[]))")
            params.append(list(values))
    for column in _EQUALS:
        value = getattr(f, column)
        if value is not None:
            conds.append(f"{col(column)} = ?")
            params.append(value)
    if f.exclude_deleted:
        conds.append(f"{col('status')} <> 'deleted'")
    if f.latest_only:
        conds.append(col("is_latest"))
    if f.current_only:
        conds.append(f"{col('is_latest')} AND {col('status')} = 'active'")
    for cond, value in (("created_at >= ?", f.created_from), ("created_at < ?", f.created_to),
                        ("id < ?", f.before_id)):  # fmt: skip
        if value is not None:
            conds.append(col(cond))
            params.append(value)
    if f.valid_at is not None:
        conds.append(
            f"{col('valid_from')} <= ? AND ({col('valid_to')} IS NULL OR {col('valid_to')} > ?) "
            f"AND ({col('expires_at')} IS NULL OR {col('expires_at')} > ?)"
        )
        params += [f.valid_at] * 3
    return " AND ".join(conds) or "true", params


class StoreOfRecord(ABC):
    """What the engine and its services ask of the store of record: the writes of one unit
    (inside `transaction()`), and named read queries. The reads written here are SQL that DuckDB
    and PostgreSQL both run (`?` placeholders; a backend's `_rows` binds them); the abstract
    ones each backend does its own way. `Store` (DuckDB, the embedded default) and
    `agentmem.postgres.store.PgStore` implement it."""

    last_seq: int = 0
    schema_version: int = 0

    @abstractmethod
    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    # -- the write side (the engine's commit) --------------------------------

    def abort(self, session: Any) -> None:
        """A unit that will not be committed: roll its transaction back, if it has one."""
        return None

    @abstractmethod
    def transaction(self, session: Any = None) -> AbstractContextManager[Any]:
        """One transaction, committed on a clean exit and rolled back whole on any error; the
        connection it yields goes to the write methods below. `session`: the one a unit opened
        (`open_unit`), where the store decides inside a transaction (PostgreSQL)."""

    @abstractmethod
    def allocate_id(self) -> int: ...

    @abstractmethod
    def reserve_ids_through(self, max_id: int) -> None: ...

    @abstractmethod
    def put_embeddings(
        self, conn: Any, hashes: Sequence[str], model: str, vectors: np.ndarray, *, new: bool = False
    ) -> None: ...

    def put_unit_vectors(self, conn: Any, vectors: dict[str, np.ndarray], model: str) -> None:
        """The vector of every text a unit's new versions use, where a store keeps them with its
        versions (PostgreSQL, per project); this one keeps one per text (`put_embeddings`)."""
        return None

    @abstractmethod
    def insert_versions(self, conn: Any, versions: Sequence[MemoryVersion], analyses: Mapping[int, bytes]) -> None:
        """Write new versions, each current one with its text analysis (`analyses`, by id; see
        `agentmem.currentness.analysis.of_new`)."""

    @abstractmethod
    def apply_updates(
        self, conn: Any, updates: dict[int, dict[str, Any]], read: Mapping[int, tuple[str, str, bool]] = NO_READS
    ) -> None:
        """Set fields on stored versions; each must still be as the unit `read` it (project, status,
        is_latest) where other processes write the same store: else `RetryConflict`."""

    @abstractmethod
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
        """Blank the versions `ids`. `lineages` (project, lineage id) are theirs, and `known` every
        version of them the delete read: a shared store refuses the commit (`RetryConflict`) if
        another process added a version to one meanwhile."""

    @abstractmethod
    def add_links(self, conn: Any, links: Sequence[Link]) -> None: ...

    @abstractmethod
    def enqueue(self, conn: Any, ops: Sequence[tuple[OutboxOp, int]], at: datetime) -> int: ...

    @abstractmethod
    def add_accesses(self, conn: Any, counts: dict[int, int], at: datetime) -> None: ...

    @abstractmethod
    def write_audit(self, conn: Any, entries: Sequence[AuditEntry]) -> list[int]: ...

    @abstractmethod
    def prune_outbox(self, upto: int) -> None: ...

    @abstractmethod
    def checkpoint(self) -> bool: ...

    def loading(self, session: Any, current: int) -> None:
        """Before a bulk load writes its versions (`current` of them current) in `session`'s
        transaction: a store may set its indexes aside and build them at the end (a no-op here)."""
        return None

    def loaded(self) -> None:
        """After a bulk load: bring what the query planner knows of the tables up to date (a
        no-op where the store keeps its statistics as it writes)."""
        return None

    @abstractmethod
    def close(self) -> None: ...

    # -- reads each backend does its own way ----------------------------------

    @abstractmethod
    def versions_with_vectors(self, f: Filter, model: str) -> Iterator[tuple[MemoryVersion, list[float] | None]]:
        """`f`'s versions by id, each with its `model` embedding (None if it has none), streamed."""

    @abstractmethod
    def nearest(self, f: Filter, model: str, vector: np.ndarray, n: int) -> list[tuple[MemoryVersion, float]]:
        """At most `n` of `f`'s versions by cosine similarity of their `model` embedding to `vector`,
        best first (newest first among equals)."""

    @abstractmethod
    def word_matches(self, f: Filter, prefixes: Sequence[str], n: int) -> list[MemoryVersion]:
        """At most `n` of `f`'s versions whose accent-folded, lower-case content has a word starting
        with one of `prefixes`, those matching the most prefixes first (newest first among equals)."""

    @abstractmethod
    def vectors(self, hashes: Sequence[str], model: str, *, project: str | None = None) -> dict[str, np.ndarray]:
        """Stored embeddings by content hash (hashes with none for `model` are left out); `project`
        as in `embedded`."""

    @abstractmethod
    def cache_reply(self, prompt_hash: str, model: str, reply: str, at: datetime) -> None:
        """Keep a provider reply (the first one stays if two race)."""

    def claim_job(self, name: str, every_seconds: float, now: datetime) -> bool:
        """Whether this process should run the scheduled job `name` now. One process owns the
        store here, so always; a shared store lets one node of all run it each period."""
        return True

    def audit_page(self, **query: Any) -> tuple[list[AuditEntry], int | None]:
        """A page of the audit log (see `agentmem.audit.query`)."""
        return audit.query(self._rows, **query)

    # -- reads -------------------------------------------------------------

    def scoped(self, f: Filter) -> Filter:
        """`f` as a read runs it: a store whose tables are split by project names the projects
        of the ids and lineages it asks for (`PgStore.scoped`); this one needs nothing more."""
        return f

    def get_many(self, ids: Sequence[int]) -> dict[int, MemoryVersion]:
        if not ids:
            return {}
        rows = self._rows(f"{SELECT} WHERE id IN ({_placeholders(len(ids))})", list(ids))
        return {r[0]: to_version(r) for r in rows}

    def where(
        self, condition: str, params: Sequence[Any] = (), order: str = "id", limit: int | None = None
    ) -> list[MemoryVersion]:
        """Versions by a raw SQL condition: the engine's startup read and tests only. Everything
        else asks `versions(Filter(...))`, so SQL stays in this module."""
        sql = f"{SELECT} WHERE {condition} ORDER BY {order}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [to_version(r) for r in self._rows(sql, list(params))]

    def versions(self, f: Filter, *, order: Order = "id", limit: int | None = None) -> list[MemoryVersion]:
        """The versions `f` selects, in `order`, at most `limit` of them."""
        where, params = filter_sql(self.scoped(f))
        return self.where(where, params, order=_ORDER_SQL[order], limit=limit)

    def ids(self, f: Filter, *, order: Order = "id", limit: int | None = None) -> list[int]:
        """The ids of the versions `f` selects."""
        where, params = filter_sql(self.scoped(f))
        sql = f"SELECT id FROM memories WHERE {where} ORDER BY {_ORDER_SQL[order]}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [r[0] for r in self._rows(sql, params)]

    def lineage(self, lineage_id: int) -> list[MemoryVersion]:
        """Every version of one lineage, oldest first."""
        return self.versions(Filter(lineages=(lineage_id,)), order="version")

    def lineages(self, lineage_ids: Sequence[int]) -> dict[int, list[MemoryVersion]]:
        """Every version of each lineage, oldest first, by lineage id: many histories in one query."""
        out: dict[int, list[MemoryVersion]] = {}
        if lineage_ids:
            for v in self.versions(Filter(lineages=tuple(dict.fromkeys(lineage_ids))), order="version"):
                out.setdefault(v.lineage_id, []).append(v)
        return out

    def count(self, f: Filter) -> int:
        where, params = filter_sql(self.scoped(f))
        return int(self.scalar(f"SELECT count(*) FROM memories WHERE {where}", params))

    def counts_by(self, column: Literal["status", "tier", "kind", "project"], f: Filter = ALL) -> dict[str, int]:
        """How many of `f`'s versions have each value of `column`, by value."""
        where, params = filter_sql(self.scoped(f))
        sql = f"SELECT {column}, count(*) FROM memories WHERE {where} GROUP BY 1 ORDER BY 1"
        return {str(k): int(n) for k, n in self._rows(sql, params)}

    def broken_invariants(self, now: datetime, exempt: Sequence[str]) -> list[str]:
        """What breaks the store's own invariants, a sentence each (with up to 10 ids): each lineage
        has versions 1..n, each replacing the one before, exactly one latest (the last) and no older
        active one; every parent, successor, link end and source is a stored version of the same
        project; at most one current unexpired memory per key and per triple slot (kinds in `exempt`
        hold none); ids from 1 to 2**53."""
        m_of = "(SELECT id, lineage_id, project FROM memories)"
        checks: list[tuple[str, str, list[Any]]] = [
            ("lineages without exactly one latest version, the last",
             "SELECT lineage_id FROM memories GROUP BY lineage_id HAVING count(*) FILTER (WHERE is_latest) != 1 "
             "OR max(version) != max(version) FILTER (WHERE is_latest)", []),
            ("lineages whose versions are not 1..n",
             "SELECT lineage_id FROM memories GROUP BY lineage_id "
             "HAVING min(version) != 1 OR max(version) != count(*) OR count(DISTINCT version) != count(*)", []),
            ("active versions that are not the latest of their lineage",
             "SELECT id FROM memories WHERE status = 'active' AND NOT is_latest", []),
            ("versions whose parent is not the version before them in their lineage",
             "SELECT m.id FROM memories m LEFT JOIN memories p ON p.id = m.parent_id "
             "WHERE (m.version = 1) != (m.parent_id IS NULL) OR (m.parent_id IS NOT NULL AND (p.id IS NULL "
             "OR p.lineage_id != m.lineage_id OR p.version != m.version - 1))", []),
            ("versions whose superseded_by is not a later version of their lineage",
             f"SELECT m.id FROM memories m LEFT JOIN {m_of} s ON s.id = m.superseded_by "
             "WHERE m.superseded_by IS NOT NULL AND (s.id IS NULL OR s.lineage_id != m.lineage_id)", []),
            ("links whose ends are not two stored versions of one project",
             f"SELECT l.src_id FROM links l LEFT JOIN {m_of} a ON a.id = l.src_id LEFT JOIN {m_of} b "
             "ON b.id = l.dst_id WHERE a.id IS NULL OR b.id IS NULL OR a.project != b.project", []),
            ("versions whose source_ids are not stored versions of their project",
             f"SELECT DISTINCT m.id FROM (SELECT id, project, unnest(source_ids) AS src FROM memories) m "
             f"LEFT JOIN {m_of} s ON s.id = m.src WHERE s.id IS NULL OR s.project != m.project", []),
            ("ids out of range (1 to 2**53)", "SELECT id FROM memories WHERE id < 1 OR id > ?", [MAX_ID]),
        ]  # fmt: skip
        current = (
            "is_latest AND status = 'active' AND (expires_at IS NULL OR expires_at > ?) "
            "AND kind NOT IN (SELECT unnest(?::VARCHAR[]))"
        )
        for column in ("key", "slot"):
            checks.append((
                f"{'keys' if column == 'key' else 'triple slots'} held by more than one current memory",
                f"SELECT min(id) FROM memories WHERE {column} IS NOT NULL AND {current} "
                f"GROUP BY project, {column} HAVING count(*) > 1", [now, list(exempt)],
            ))  # fmt: skip
        problems = []
        for what, sql, params in checks:
            rows = self._rows(f"SELECT * FROM ({sql}) ORDER BY 1 LIMIT 11", params)
            if rows:
                shown = ", ".join(str(r[0]) for r in rows[:10]) + (", ..." if len(rows) > 10 else "")
                problems.append(f"{what}: {shown}")
        return problems

    def count_links(self, f: Filter) -> int:
        """How many links start at one of `f`'s versions."""
        where, params = filter_sql(self.scoped(f))
        sql = f"SELECT count(*) FROM links WHERE src_id IN (SELECT id FROM memories WHERE {where})"
        return int(self.scalar(sql, params))

    def links_from(self, f: Filter) -> list[Link]:
        """The links that start at one of `f`'s versions, oldest first."""
        where, params = filter_sql(self.scoped(f))
        rows = self._rows(
            "SELECT src_id, dst_id, kind, created_at FROM links WHERE src_id IN "
            f"(SELECT id FROM memories WHERE {where}) ORDER BY created_at, src_id, dst_id",
            params,
        )
        return [Link(*r) for r in rows]

    def sessions_not_derived_into(self, f: Filter, tier: str) -> list[str]:
        """The sessions of `f`'s versions that hold one no current version of `tier` was derived from."""
        where, params = filter_sql(self.scoped(f), "m")
        rows = self._rows(
            f"SELECT DISTINCT m.session FROM memories m WHERE {where} AND m.session IS NOT NULL AND NOT EXISTS "
            "(SELECT 1 FROM links l JOIN memories e ON e.id = l.src_id WHERE l.dst_id = m.id "
            "AND l.kind = 'derived_from' AND e.tier = ? AND e.is_latest AND e.status = 'active') "
            "ORDER BY m.session",
            [*params, tier],
        )
        return [r[0] for r in rows]

    def unembedded(self, model: str, *, current_only: bool = False, limit: int | None = None) -> list[tuple[str, str]]:
        """(content hash, content) of versions with no vector for `model` (a new model): every
        version but erased ones (past versions answer `as_of` and history searches), current
        ones first; only current ones with `current_only`."""
        where = INDEXABLE if current_only else "m.status <> 'deleted'"
        rows = self._rows(
            f"SELECT m.content_hash, min(m.content), bool_or({INDEXABLE}) AS cur FROM memories m WHERE {where} "
            "AND NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.content_hash = m.content_hash AND e.model = ?) "
            "GROUP BY m.content_hash ORDER BY cur DESC, m.content_hash LIMIT ?",
            [model, 2**62 if limit is None else limit],
        )
        return [(r[0], r[1]) for r in rows]

    def unembedded_count(self, model: str, *, current_only: bool = False) -> int:
        """How many distinct contents `unembedded` would return."""
        where = INDEXABLE if current_only else "m.status <> 'deleted'"
        rows = self._rows(
            f"SELECT count(DISTINCT m.content_hash) FROM memories m WHERE {where} AND NOT EXISTS "
            "(SELECT 1 FROM embeddings e WHERE e.content_hash = m.content_hash AND e.model = ?)",
            [model],
        )
        return int(rows[0][0])

    def held_hashes(self, hashes: Sequence[str]) -> set[str]:
        """Which of these content hashes a version that is not erased still holds."""
        rows = self._rows(
            "SELECT DISTINCT content_hash FROM memories WHERE status <> 'deleted' AND content_hash IN "
            "(SELECT unnest(?::VARCHAR[]))",
            [list(hashes)],
        )
        return {r[0] for r in rows}

    def embedding_models(self) -> dict[str, int]:
        """How many vectors the store holds for each model."""
        return {r[0]: int(r[1]) for r in self._rows("SELECT model, count(*) FROM embeddings GROUP BY model")}

    def embedded_hashes(self, model: str) -> list[str]:
        """Every content hash with a stored `model` embedding."""
        rows = self._rows("SELECT content_hash FROM embeddings WHERE model = ?", [model])
        return [r[0] for r in rows]

    def held_embedded(self, model: str) -> list[tuple[str, str]]:
        """(project, content hash) of each text a version that is not erased holds, with a stored
        `model` embedding."""
        rows = self._rows(
            "SELECT DISTINCT m.project, m.content_hash FROM memories m JOIN embeddings e "
            "ON e.content_hash = m.content_hash AND e.model = ? WHERE m.status <> 'deleted'",
            [model],
        )
        return [(r[0], r[1]) for r in rows]

    def embedded(self, hashes: Sequence[str], model: str, *, project: str | None = None) -> set[str]:
        """Which of these content hashes have a stored `model` embedding (in `project`, where a
        store keeps embeddings per project; the embedded store shares them)."""
        rows = self._rows(
            "SELECT content_hash FROM embeddings WHERE model = ? AND content_hash IN (SELECT unnest(?::VARCHAR[]))",
            [model, list(hashes)],
        )
        return {r[0] for r in rows}

    def outbox_after(self, seq: int, limit: int) -> list[OutboxEntry]:
        """The index outbox entries after `seq`, oldest first, at most `limit`."""
        rows = self._rows("SELECT seq, op, memory_id FROM outbox WHERE seq > ? ORDER BY seq LIMIT ?", [seq, limit])
        return [OutboxEntry(*r) for r in rows]

    # -- the provider's reply cache ------------------------------------------

    def cached_reply(self, prompt_hash: str) -> str | None:
        rows = self._rows("SELECT reply FROM provider_cache WHERE prompt_hash = ?", [prompt_hash])
        return str(rows[0][0]) if rows else None

    def cached_replies(self) -> list[tuple[str, str, str]]:
        """Every cached provider reply: (request hash, model, reply), by hash (a replay set's export)."""
        rows = self._rows("SELECT prompt_hash, model, reply FROM provider_cache ORDER BY prompt_hash", [])
        return [(str(h), str(m), str(r)) for h, m, r in rows]

    def vector(self, content_hash: str, model: str, *, project: str | None = None) -> np.ndarray | None:
        """One stored embedding, or None; `project` as in `embedded`."""
        rows = self._rows("SELECT vector FROM embeddings WHERE content_hash = ? AND model = ?", [content_hash, model])
        return np.asarray(rows[0][0], dtype=np.float32) if rows else None

    def claim_ids(self, session: Any, ids: Sequence[int]) -> int:
        """Before an import writes versions with ids of their own: how many of `ids` are in use.
        (A shared store also keeps other processes from taking them meanwhile.)"""
        return self.count(Filter(ids=tuple(ids)))

    def current_of_lineages(self, lineages: Sequence[int]) -> list[int]:
        """Ids of the current (latest, active) versions of these lineages."""
        rows = (
            self._rows(f"SELECT id FROM memories WHERE {INDEXABLE} AND lineage_id IN (SELECT unnest(?::BIGINT[]))",
                     [list(lineages)])
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

    def built_on_each(
        self, ids: Sequence[int], current: Callable[[list[int]], Mapping[int, MemoryVersion]] | None = None
    ) -> dict[int, list[MemoryVersion]]:
        """For each of `ids`, the versions derived from it (any status), oldest first: a turn's
        claims. Those `current(ids)` gives (the live set's) are not read from the store again."""
        if not ids:
            return {}
        rows = self._derived_rows(ids)
        wanted = sorted({src for _, src in rows})
        found = dict(current(wanted)) if current is not None else {}
        rest = [i for i in wanted if i not in found]
        found.update(self.get_many(rest) if rest else {})  # a wide-row read: only for past versions
        out: dict[int, list[MemoryVersion]] = {}
        for dst, src in rows:
            if src in found:
                out.setdefault(dst, []).append(found[src])
        return out

    def _derived_rows(self, ids: Sequence[int]) -> list[tuple[Any, ...]]:
        """(dst_id, src_id) of the derived_from links into `ids`, in that order."""
        return self._rows(
            "SELECT dst_id, src_id FROM links WHERE kind = 'derived_from' AND dst_id IN (SELECT unnest(?::BIGINT[])) "
            "ORDER BY dst_id, src_id",
            [list(ids)],
        )

    def links(self, memory_id: int) -> list[Link]:
        rows = self._rows(
            "SELECT src_id, dst_id, kind, created_at FROM links WHERE src_id = ? OR dst_id = ? ORDER BY created_at",
            [memory_id, memory_id],
        )
        return [Link(*r) for r in rows]

    def scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        rows = self._rows(sql, list(params))
        return rows[0][0] if rows else None


class Store(StoreOfRecord):
    """The DuckDB file under a data directory."""

    def __init__(self, path: Path, *, threads: int | None = None) -> None:
        """Open (and migrate) the file; `threads`: DuckDB's worker threads (None: its default, one per core)."""
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
        if threads is not None:
            self._conn.execute(f"SET threads = {int(threads)}")
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
    def transaction(self, session: Any = None) -> Iterator[duckdb.DuckDBPyConnection]:
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
        if nid > MAX_ID:  # never hand out an id the API would refuse as "not a memory id"
            raise StoreError(f"the id space is used up: ids go up to 2**53, and {nid - 1} is taken")
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
    def insert_version(conn: duckdb.DuckDBPyConnection, v: MemoryVersion, analysis: bytes | None) -> None:
        names = COLUMNS + ("norm_hash", "slot", "analysis")
        conn.execute(
            f"INSERT INTO memories ({', '.join(names)}) VALUES ({_placeholders(len(names))})",
            [*version_row(v, sha256(identity(v.content)), _slot(v)), analysis],
        )

    @staticmethod
    def update(conn: duckdb.DuckDBPyConnection, memory_id: int, **fields: Any) -> None:
        sets = ", ".join(f"{name} = ?" for name in fields)
        conn.execute(f"UPDATE memories SET {sets} WHERE id = ?", [*fields.values(), memory_id])

    @staticmethod
    def put_embeddings(
        conn: duckdb.DuckDBPyConnection, hashes: Sequence[str], model: str, vectors: np.ndarray, *, new: bool = False
    ) -> None:
        """Vectors by content hash; one already stored is kept. `new=True` says none of them is
        stored yet (a plain insert: the existence check costs more than the insert). Many go
        through Arrow (binding nested Python lists is ~15x slower); one or two as parameters
        (registering an Arrow table costs more than it saves)."""
        if not len(hashes):
            return
        verb = "INSERT" if new else "INSERT OR IGNORE"
        if len(hashes) <= 2:
            for h, v in zip(hashes, vectors, strict=True):
                conn.execute(f"{verb} INTO embeddings VALUES (?, ?, ?)", [h, model, np.asarray(v, np.float32).tolist()])
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
                f"{verb} INTO embeddings SELECT DISTINCT ON (h) h, ?, v::FLOAT[] FROM incoming_vectors", [model]
            )
        finally:
            conn.unregister("incoming_vectors")

    @staticmethod
    def insert_versions(
        conn: duckdb.DuckDBPyConnection, versions: Sequence[MemoryVersion], analyses: Mapping[int, bytes]
    ) -> None:
        """Many versions in one statement, through Arrow (a few as plain parameters)."""
        if len(versions) <= 2:
            for v in versions:
                Store.insert_version(conn, v, analyses.get(v.id))
            return
        names = COLUMNS + ("norm_hash", "slot", "analysis")
        rows = [[*version_row(v, sha256(identity(v.content)), _slot(v)), analyses.get(v.id)] for v in versions]
        columns = {name: [r[i] for r in rows] for i, name in enumerate(names)}
        types = {"source_ids": pa.list_(pa.int64()), "analysis": pa.binary()}
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
    def apply_updates(
        conn: duckdb.DuckDBPyConnection,
        updates: dict[int, dict[str, Any]],
        read: Mapping[int, tuple[str, str, bool]] = NO_READS,
    ) -> None:
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
        conn: duckdb.DuckDBPyConnection,
        ids: Sequence[int],
        hashes: Sequence[str],
        fields: dict[str, Any],
        *,
        lineages: Sequence[tuple[str, int]] = (),
        known: AbstractSet[int] = frozenset(),
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
    def write_audit(conn: duckdb.DuckDBPyConnection, entries: Sequence[AuditEntry]) -> list[int]:
        return audit.write(conn, entries)

    @staticmethod
    def add_accesses(conn: duckdb.DuckDBPyConnection, counts: dict[int, int], at: datetime) -> None:
        """Count recalls: `counts` maps ids to how often each was returned since the last time."""
        conn.execute(
            "UPDATE memories SET accesses = accesses + v.n, last_accessed_at = ? "
            "FROM (SELECT unnest(?::BIGINT[]) AS id, unnest(?::INTEGER[]) AS n) v WHERE memories.id = v.id",
            [at, list(counts), list(counts.values())],
        )

    @staticmethod
    def put_analyses(conn: duckdb.DuckDBPyConnection, analyses: Mapping[int, bytes]) -> None:
        """Store the text analyses of versions written before their analysis was (or by another
        version of it), by id."""
        if analyses:
            conn.execute(
                "UPDATE memories SET analysis = a.data FROM (SELECT unnest(?::BIGINT[]) AS id, "
                "unnest(?::BLOB[]) AS data) a WHERE memories.id = a.id",
                [list(analyses), list(analyses.values())],
            )

    # -- reads DuckDB does its own way -------------------------------------

    def current_analyses(self) -> list[tuple[int, bytes | None]]:
        """The stored text analysis of every current version, by id (None where there is none)."""
        return self._rows(f"SELECT id, analysis FROM memories WHERE {INDEXABLE}")

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.cursor().execute(sql, list(params)).fetchall()

    def versions_with_vectors(self, f: Filter, model: str) -> Iterator[tuple[MemoryVersion, list[float] | None]]:
        """`f`'s versions by id, each with its `model` embedding (None if it has none), streamed."""
        where, params = filter_sql(f, "m")
        cur = self.new_cursor()  # its own: the caller may read on this thread between batches
        try:
            cols = ", ".join(f"m.{c}" for c in COLUMNS)
            cur.execute(
                f"SELECT {cols}, e.vector FROM memories m LEFT JOIN embeddings e "
                f"ON e.content_hash = m.content_hash AND e.model = ? WHERE {where} ORDER BY m.id",
                [model, *params],
            )
            while rows := cur.fetchmany(1000):
                for r in rows:
                    yield to_version(r[:-1]), (list(r[-1]) if r[-1] is not None else None)
        finally:
            cur.close()

    def nearest(self, f: Filter, model: str, vector: np.ndarray, n: int) -> list[tuple[MemoryVersion, float]]:
        """At most `n` of `f`'s versions by cosine similarity of their `model` embedding to `vector`,
        best first (newest first among equals)."""
        where, params = filter_sql(f, "m")
        cols = ", ".join(f"m.{c}" for c in COLUMNS)
        rows = (
            self.cursor()
            .execute(
                f"SELECT {cols}, list_cosine_similarity(e.vector, ?::FLOAT[]) AS score FROM memories m "
                f"JOIN embeddings e ON e.content_hash = m.content_hash AND e.model = ? WHERE {where} "
                f"ORDER BY score DESC, m.id DESC LIMIT {int(n)}",
                [vector.tolist(), model, *params],
            )
            .fetchall()
        )
        return [(to_version(r[:-1]), float(r[-1])) for r in rows]

    def word_matches(self, f: Filter, prefixes: Sequence[str], n: int) -> list[MemoryVersion]:
        """At most `n` of `f`'s versions whose accent-folded, lower-case content has a word starting
        with one of `prefixes`, those matching the most prefixes first (newest first among equals)."""
        if not prefixes:
            return []
        where, params = filter_sql(f, "m")
        patterns = [rf"\b{re.escape(p)}" for p in prefixes]
        score = " + ".join(["regexp_matches(lower(strip_accents(m.content)), ?)::INTEGER"] * len(patterns))
        cols = ", ".join(f"m.{c}" for c in COLUMNS)
        rows = (
            self.cursor()
            .execute(
                f"SELECT {cols}, {score} AS score FROM memories m WHERE {where} AND ({score}) > 0 "
                f"ORDER BY score DESC, m.id DESC LIMIT {int(n)}",
                [*patterns, *params, *patterns],
            )
            .fetchall()
        )
        return [to_version(r[:-1]) for r in rows]

    def cache_reply(self, prompt_hash: str, model: str, reply: str, at: datetime) -> None:
        """Keep a reply (the first one stays if two race); the caller serialises it with the writer."""
        with self.transaction() as tx:
            tx.execute("INSERT OR IGNORE INTO provider_cache VALUES (?, ?, ?, ?)", [prompt_hash, model, reply, at])

    def vectors(self, hashes: Sequence[str], model: str, *, project: str | None = None) -> dict[str, np.ndarray]:
        """Stored embeddings by content hash (hashes with none for `model` are left out); `project`
        as in `embedded`."""
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
