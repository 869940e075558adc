"""The audit log in DuckDB: who did what to which memories, when and why.

Entries are written in the same transaction as the change they describe, so the log and the
store never disagree. Content is never copied into the log: a governance delete leaves only
ids, counts and the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import duckdb
import msgspec
import pyarrow as pa

from agentmem.records import MemoryVersion

ACTIONS = (
    "supersede",
    "archive",
    "expire",
    "restore",
    "pin",
    "unpin",
    "delete",
    "rebuild",
    "consolidate",
    "ingest",
)


class AuditEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One audited action; `affected` counts the versions it touched."""

    id: int = 0
    created_at: datetime
    action: str
    actor: str
    project: str | None = None
    memory_id: int | None = None
    lineage_id: int | None = None
    affected: int = 1
    reason: str | None = None
    details: dict[str, Any] = {}

    @classmethod
    def of(
        cls, m: MemoryVersion, action: str, actor: str, at: datetime, reason: str | None = None, **details: Any
    ) -> AuditEntry:
        """An entry about one version."""
        return cls(
            created_at=at,
            action=action,
            actor=actor,
            project=m.project,
            memory_id=m.id,
            lineage_id=m.lineage_id,
            reason=reason,
            details=details,
        )


_COLUMNS = (
    "id", "created_at", "action", "actor", "project", "memory_id", "lineage_id", "affected", "reason", "details",
)  # fmt: skip
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(dict[str, Any]).decode


def write(conn: duckdb.DuckDBPyConnection, entries: Sequence[AuditEntry]) -> list[int]:
    """Append entries inside the caller's transaction (one statement however many there are);
    returns their ids."""
    if not entries:
        return []
    row = conn.execute(
        "UPDATE counters SET value = value + ? WHERE name = 'audit_seq' RETURNING value", [len(entries)]
    ).fetchone()
    assert row is not None
    first = int(row[0]) - len(entries) + 1
    table = pa.table(
        {
            "id": pa.array(range(first, first + len(entries)), type=pa.int64()),
            "created_at": pa.array([e.created_at for e in entries], type=pa.timestamp("us", tz="UTC")),
            "action": [e.action for e in entries],
            "actor": [e.actor for e in entries],
            "project": pa.array([e.project for e in entries], type=pa.string()),
            "memory_id": pa.array([e.memory_id for e in entries], type=pa.int64()),
            "lineage_id": pa.array([e.lineage_id for e in entries], type=pa.int64()),
            "affected": pa.array([e.affected for e in entries], type=pa.int32()),
            "reason": pa.array([e.reason for e in entries], type=pa.string()),
            "details": pa.array([_encode(e.details).decode() if e.details else None for e in entries], pa.string()),
        }
    )
    conn.register("incoming_audit", table)
    try:
        cols = ", ".join(_COLUMNS)
        conn.execute(f"INSERT INTO audit ({cols}) SELECT {cols} FROM incoming_audit")
    finally:
        conn.unregister("incoming_audit")
    return list(range(first, first + len(entries)))


Rows = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]  # runs one query (`?` placeholders)


def query(
    rows_of: Rows,
    *,
    projects: Sequence[str] | None = None,
    actions: Sequence[str] = (),
    since: datetime | None = None,
    until: datetime | None = None,
    memory_id: int | None = None,
    before_id: int | None = None,
    limit: int = 50,
) -> tuple[list[AuditEntry], int | None]:
    """A page of entries, newest first, and the cursor of the next page (None at the end).

    With `projects`, only entries of those projects: entries that span projects (a rebuild, a
    delete by a filter over every project) are for all-projects callers only.
    """
    conds: list[str] = []
    params: list[Any] = []
    if projects is not None:
        if not projects:
            return [], None
        conds.append(f"project IN ({', '.join('?' * len(projects))})")
        params.extend(projects)
    if actions:
        conds.append(f"action IN ({', '.join('?' * len(actions))})")
        params.extend(actions)
    for cond, value in (("created_at >= ?", since), ("created_at < ?", until), ("id < ?", before_id)):
        if value is not None:
            conds.append(cond)
            params.append(value)
    if memory_id is not None:
        conds.append("(memory_id = ? OR lineage_id = (SELECT lineage_id FROM memories WHERE id = ?))")
        params += [memory_id, memory_id]
    where = " AND ".join(conds) or "true"
    rows = rows_of(
        f"SELECT {', '.join(_COLUMNS)} FROM audit WHERE {where} ORDER BY id DESC LIMIT {int(limit) + 1}", params
    )
    entries = [
        AuditEntry(**{**dict(zip(_COLUMNS, r, strict=True)), "details": _decode(r[-1]) if r[-1] else {}})
        for r in rows[:limit]
    ]
    return entries, (entries[-1].id if len(rows) > limit else None)
