"""What happens to memories as they age: the archive sweep, restore, pinning and the governance delete.

Nothing here loses a memory silently. The sweep archives (never deletes) what has stopped
mattering and what has expired; restore brings it back; the governance delete is the one hard
delete, and it leaves a tombstone and an audit record. Every change removes from (or returns
to) both indexes through the outbox, in the same transaction as the change itself.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from agentmem import audit, validate
from agentmem.audit import AuditEntry
from agentmem.errors import ConflictError, NotFoundError, ValidationError
from agentmem.records import MemoryVersion
from agentmem.retention import score_of
from agentmem.supersede import slot_of

if TYPE_CHECKING:
    from agentmem.memory import Memory

MAX_LISTED = 1000  # ids or items a report lists in full; counts are always exact


class SweepItem(msgspec.Struct, frozen=True, kw_only=True):
    id: int
    project: str
    kind: str
    action: Literal["archive", "expire"]
    retention: float | None = None  # None for an expired memory


class SweepReport(msgspec.Struct, frozen=True, kw_only=True):
    """What a sweep archived (or, on a dry run, would archive): lowest retention first."""

    dry_run: bool
    threshold: float
    examined: int
    archived: int
    expired: int
    left_for_next_run: int
    took_ms: float
    items: list[SweepItem]
    items_truncated: bool


class DeleteReport(msgspec.Struct, frozen=True, kw_only=True):
    """What a governance delete removed (or, on a dry run, would remove)."""

    dry_run: bool
    versions: int
    lineages: int
    ids: list[int]
    ids_truncated: bool
    audit_id: int | None = None


Pick = tuple[int, float, MemoryVersion, float | None]  # (expired first, retention, version, retention or None)


def sweep(
    mem: Memory,
    *,
    dry_run: bool = False,
    limit: int | None = None,
    projects: Sequence[str] | None = None,
    threshold: float | None = None,
    actor: str = "local",
) -> SweepReport:
    """Archive current memories whose retention is below `threshold`, and those whose TTL has passed.

    Pinned memories are skipped. At most `limit` are archived, lowest retention first (expired
    ones before all others); the rest wait for the next run.
    """
    cfg = mem.config
    limit = cfg.sweep_max if limit is None else limit
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 10_000_000:
        raise ValidationError("limit: expected a whole number from 1 to 10000000")
    threshold = cfg.retention.archive_below if threshold is None else validate.unit(threshold, "threshold")
    scope = set(projects) if projects is not None else None
    started = time.perf_counter()
    with mem._write:
        mem._flush_access()  # fresh access counts count towards retention
        now = mem.clock()
        examined = 0
        picks: list[Pick] = []
        for m in mem.live.values():
            if scope is not None and m.project not in scope:
                continue
            examined += 1
            if m.pinned:
                continue
            if m.expires_at is not None and m.expires_at <= now:
                picks.append((0, 0.0, m, None))
                continue
            score = score_of(m, now, cfg.retention, cfg.kinds)
            if score < threshold:
                picks.append((1, score, m, score))
        picks.sort(key=lambda p: (p[0], p[1], p[2].id))
        chosen = picks[:limit]
        items = [
            SweepItem(id=m.id, project=m.project, kind=m.kind, action="expire" if score is None else "archive",
                      retention=None if score is None else round(score, 6))
            for _, _, m, score in chosen[:MAX_LISTED]
        ]  # fmt: skip
        if not dry_run and chosen:
            _archive(mem, chosen, threshold, now, actor)
    return SweepReport(
        dry_run=dry_run,
        threshold=threshold,
        examined=examined,
        archived=sum(1 for p in chosen if p[3] is not None),
        expired=sum(1 for p in chosen if p[3] is None),
        left_for_next_run=len(picks) - len(chosen),
        took_ms=round((time.perf_counter() - started) * 1000, 3),
        items=items,
        items_truncated=len(chosen) > MAX_LISTED,
    )


def _archive(mem: Memory, chosen: list[Pick], threshold: float, now: datetime, actor: str) -> None:
    retire(
        mem,
        [(m, "expired", "ttl") if score is None else (m, "archived", "retention") for _, _, m, score in chosen],
        [
            AuditEntry.of(m, "expire", actor, now, f"expired at {m.expires_at}")
            if score is None
            else AuditEntry.of(m, "archive", actor, now, f"retention {score:.4f} below {threshold}")
            for _, _, m, score in chosen
        ],
        now,
    )


def retire(
    mem: Memory, victims: Sequence[tuple[MemoryVersion, str, str]], entries: Sequence[AuditEntry], now: datetime
) -> None:
    """Move current versions to (status, status_reason), e.g. ("archived", "retention"), in one
    transaction with their audit entries; both indexes drop them. The caller holds the write lock."""
    groups: dict[tuple[str, str], list[int]] = {}
    for m, status, reason in victims:
        groups.setdefault((status, reason), []).append(m.id)
    with mem.store.transaction() as tx:
        for (status, reason), ids in groups.items():
            mem.store.update_many(tx, ids, status=status, archived_at=now, status_reason=reason)
        mem.store.enqueue(tx, [("delete", m.id) for m, _, _ in victims], now)
        audit.write(tx, list(entries))
    for m, _, _ in victims:
        mem.live.drop(m.id)
    mem._sync()


def restore(mem: Memory, memory_id: int, *, actor: str = "local", ttl_days: float | None = None) -> MemoryVersion:
    """Bring an archived or expired memory back into recall (and both indexes).

    Restoring counts as a reinforcement: its decay clock restarts, so the next sweep does not
    archive it again at once. An expired memory comes back without a TTL unless `ttl_days` is given.
    """
    with mem._write:
        m = mem.get(memory_id)
        if m.status not in ("archived", "expired"):
            raise ConflictError(f"memory {m.id} is {m.status}, not archived or expired: nothing to restore")
        now = mem.clock()
        expires_at = m.expires_at
        if ttl_days is not None:
            if isinstance(ttl_days, bool) or not isinstance(ttl_days, int | float) or not 0 < ttl_days <= 36_500:
                raise ValidationError(f"ttl_days: expected more than 0 and at most 36500, got {ttl_days!r}")
            expires_at = now + timedelta(days=ttl_days)
        elif expires_at is not None and expires_at <= now:
            expires_at = None
        _check_slot_free(mem, m)
        vector_missing = not mem.store.has_embedding(m.content_hash, mem.embedder.name)
        vector = mem._vector_for(m.content, m.content_hash) if vector_missing else None
        with mem.store.transaction() as tx:
            if vector is not None:
                mem.store.put_embedding(tx, m.content_hash, mem.embedder.name, vector)
            mem.store.update(
                tx,
                m.id,
                status="active",
                archived_at=None,
                status_reason=None,
                expires_at=expires_at,
                last_reinforced_at=now,
            )
            mem.store.enqueue(tx, [("upsert", m.id)], now)
            audit.write(tx, [AuditEntry.of(m, "restore", actor, now, f"was {m.status}")])
        restored = mem.get(m.id)
        mem.live.put(restored)
        mem._sync()
        return restored


def _check_slot_free(mem: Memory, m: MemoryVersion) -> None:
    """A restored memory may not sit beside a newer current memory that holds its key or slot."""
    held = []
    if m.key is not None:
        held.append(("key", m.key, mem.live.by_key(m.project, m.key)))
    if m.triple is not None:
        slot = slot_of(m.triple.subject, m.triple.predicate)
        held.append(("triple slot", m.triple.subject, mem.live.by_slot(m.project, slot)))
    for what, value, other in held:
        if other is not None and other.id != m.id:
            raise ConflictError(
                f"memory {other.id} now holds the {what} {value!r} in project {m.project!r}: "
                f"revise or delete it before restoring memory {m.id}"
            )


def pin(mem: Memory, memory_id: int, pinned: bool = True, *, actor: str = "local") -> MemoryVersion:
    """Pin (or unpin) the latest version of a memory: the sweep never archives a pinned memory."""
    if not isinstance(pinned, bool):
        raise ValidationError("pinned: expected true or false")
    with mem._write:
        m = mem.get(memory_id)
        if not m.is_latest or m.status == "deleted":
            raise ConflictError(f"memory {m.id} is {'deleted' if m.status == 'deleted' else 'not the latest version'}")
        if m.pinned == pinned:
            return m
        now = mem.clock()
        with mem.store.transaction() as tx:
            mem.store.update(tx, m.id, pinned=pinned)
            audit.write(tx, [AuditEntry.of(m, "pin" if pinned else "unpin", actor, now)])
        changed = mem.get(m.id)
        mem.live.put(changed)
        return changed


def delete(
    mem: Memory,
    *,
    reason: str,
    ids: Sequence[int] = (),
    lineages: Sequence[int] = (),
    project: str | None = None,
    kinds: Sequence[str] = (),
    created_from: datetime | str | None = None,
    created_to: datetime | str | None = None,
    scope: Sequence[str] | None = None,
    dry_run: bool = False,
    actor: str = "local",
) -> DeleteReport:
    """The one hard delete: content, title, key, triple and vector of the chosen versions are erased.

    Choose versions by `ids`, by whole `lineages` (any id of the lineage), or by a filter of
    `project`, `kinds` and a `created_from`/`created_to` range; not both ways at once. Each
    version leaves a tombstone (id, lineage, project, kind, times, the reason) and the delete
    leaves one audit record. `scope` limits which projects may be touched (None: all).
    """
    reason = validate.content(reason if isinstance(reason, str) else "", mem.config, "reason")
    targets = [validate.memory_id(i, "ids") for i in ids] + [validate.memory_id(i, "lineages") for i in lineages]
    project = validate.name(project, "project", mem.config)
    kinds = [validate.choice(k, mem.config.kinds, "kind") for k in kinds]
    start, end = validate.utc(created_from, "created_from"), validate.utc(created_to, "created_to")
    filtered = project is not None or bool(kinds) or start is not None or end is not None
    if targets and filtered:
        raise ValidationError("delete either by ids/lineages or by a filter (project, kinds, dates), not both")
    if not targets and not filtered:
        raise ValidationError("name what to delete: ids, lineages, or a filter of project, kinds and dates")
    if start is not None and end is not None and start >= end:
        raise ValidationError("created_from must be before created_to")
    if project is not None and scope is not None and project not in scope:
        raise NotFoundError(f"no project {project!r} among those this caller may change")
    with mem._write:
        if targets:
            found = mem.store.get_many(targets)
            for i in targets:
                if i not in found or (scope is not None and found[i].project not in scope):
                    raise NotFoundError(f"no memory with id {i}")
            chosen = {found[i].id: found[i] for i in ids}
            whole = sorted({found[i].lineage_id for i in lineages})
            if whole:
                marks = ", ".join("?" * len(whole))
                chosen.update((v.id, v) for v in mem.store.where(f"lineage_id IN ({marks})", whole))
            victims = [v for v in chosen.values() if v.status != "deleted"]
        else:
            conds, params = ["status <> 'deleted'"], []
            for cond, value in (("project = ?", project), ("created_at >= ?", start), ("created_at < ?", end)):
                if value is not None:
                    conds.append(cond)
                    params.append(value)
            if kinds:
                conds.append(f"kind IN ({', '.join('?' * len(kinds))})")
                params.extend(kinds)
            if scope is not None:
                if not scope:
                    return DeleteReport(dry_run=dry_run, versions=0, lineages=0, ids=[], ids_truncated=False)
                conds.append(f"project IN ({', '.join('?' * len(scope))})")
                params.extend(scope)
            victims = mem.store.where(" AND ".join(conds), params)
        victims.sort(key=lambda v: v.id)
        victim_ids = [v.id for v in victims]
        report = DeleteReport(
            dry_run=dry_run,
            versions=len(victims),
            lineages=len({v.lineage_id for v in victims}),
            ids=victim_ids[:MAX_LISTED],
            ids_truncated=len(victims) > MAX_LISTED,
        )
        if dry_run or not victims:
            return report
        details: dict[str, Any] = {"ids": victim_ids[:10_000], "lineages": report.lineages}
        if filtered:
            details["filter"] = {
                "project": project,
                "kinds": kinds,
                "created_from": start.isoformat() if start else None,
                "created_to": end.isoformat() if end else None,
            }
        projects = {v.project for v in victims}
        lineage_ids = {v.lineage_id for v in victims}
        entry = AuditEntry(
            created_at=mem.clock(),
            action="delete",
            actor=actor,
            project=next(iter(projects)) if len(projects) == 1 else None,
            memory_id=victim_ids[0] if len(victims) == 1 else None,
            lineage_id=next(iter(lineage_ids)) if len(lineage_ids) == 1 else None,
            affected=len(victims),
            reason=reason,
            details=details,
        )
        audit_id = _erase(mem, victims, entry)
        return msgspec.structs.replace(report, audit_id=audit_id)


def _erase(mem: Memory, victims: list[MemoryVersion], entry: AuditEntry) -> int:
    now = entry.created_at
    ids = [v.id for v in victims]
    hashes = sorted({v.content_hash for v in victims})
    with mem.store.transaction() as tx:
        mem.store.update_many(
            tx,
            ids,
            status="deleted",
            content="",
            title=None,
            subject=None,
            predicate=None,
            object=None,
            key=None,
            slot=None,
            source_ref=None,
            content_hash="",
            norm_hash="",
            archived_at=None,
            deleted_at=now,
            status_reason=entry.reason,
        )
        # A vector is content too: drop it unless a surviving version has the very same text.
        tx.execute(
            "DELETE FROM embeddings WHERE content_hash IN (SELECT unnest(?::VARCHAR[])) AND content_hash NOT IN "
            "(SELECT content_hash FROM memories WHERE status <> 'deleted')",
            [hashes],
        )
        mem.store.enqueue(tx, [("purge", i) for i in ids], now)
        # a surviving current version indexes words of the versions it replaced: index it again
        survivors = tx.execute(
            "SELECT id FROM memories WHERE is_latest AND status = 'active' AND lineage_id IN "
            "(SELECT unnest(?::BIGINT[]))",
            [sorted({v.lineage_id for v in victims})],
        ).fetchall()
        mem.store.enqueue(tx, [("upsert", r[0]) for r in survivors], now)
        audit.write(tx, [entry])
        row = tx.execute("SELECT value FROM counters WHERE name = 'audit_seq'").fetchone()
    for i in ids:
        mem.live.drop(i)
    mem._sync()
    if mem.config.purge_index_files:
        # Deleted documents stay in Tantivy's segment files until a merge; a rebuild from DuckDB
        # writes only what is current, so the text leaves the disk too. hnswlib vectors were
        # overwritten by the purge; saving now replaces the file that still held them.
        mem.indexes.rebuild(["bm25"])
        mem.indexes.vectors.flush(force=True)
    mem.store.checkpoint()
    assert row is not None
    return int(row[0])
