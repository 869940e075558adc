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
from typing import Any, Literal

import msgspec

from agentmem import claims, validate
from agentmem.audit import AuditEntry
from agentmem.errors import ConflictError, NotFoundError, ValidationError
from agentmem.filters import Filter, one_of
from agentmem.operations import DeleteRequest, PinRequest, RestoreRequest, SweepRequest
from agentmem.ports import Port
from agentmem.records import MemoryVersion
from agentmem.retention import score_of
from agentmem.serving import gated
from agentmem.store import RetryConflict
from agentmem.unit import Write

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


def sweep(port: Port, request: SweepRequest, *, actor: str = "local") -> SweepReport:
    """Archive current memories whose retention is below `threshold`, and those whose TTL has passed.

    Pinned memories are skipped. At most `limit` are archived, lowest retention first (expired
    ones before all others); the rest wait for the next run.
    """
    dry_run, limit, projects, threshold = request.dry_run, request.limit, request.projects, request.threshold
    cfg = port.config
    limit = validate.whole(cfg.sweep_max if limit is None else limit, "limit", 1, 10_000_000)
    threshold = cfg.retention.archive_below if threshold is None else validate.unit(threshold, "threshold")
    scope = set(projects) if projects is not None else None
    started = time.perf_counter()
    with port.write() as w:  # pending access counts were committed first: they count towards retention
        now = w.now
        examined = 0
        picks: list[Pick] = []
        for m in port.live.values(None if scope is None else sorted(scope)):
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
            _archive(w, chosen, threshold, actor)
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


def _archive(w: Write, chosen: list[Pick], threshold: float, actor: str) -> None:
    w.retire([(m, "expired", "ttl") if score is None else (m, "archived", "retention") for _, _, m, score in chosen])
    w.audit(
        [
            AuditEntry.of(m, "expire", actor, w.now, f"expired at {m.expires_at}")
            if score is None
            else AuditEntry.of(m, "archive", actor, w.now, f"retention {score:.4f} below {threshold}")
            for _, _, m, score in chosen
        ]
    )


@gated
def restore(port: Port, memory_id: int, request: RestoreRequest, *, actor: str = "local") -> MemoryVersion:
    """Bring an archived or expired memory back into recall (and both indexes).

    Restoring counts as a reinforcement: its decay clock restarts, so the next sweep does not
    archive it again at once. An expired memory comes back without a TTL unless `ttl_days` is given.
    A memory whose key or slot a newer current memory holds is refused (ConflictError).
    """
    ttl_days = request.ttl_days
    if ttl_days is not None and (
        isinstance(ttl_days, bool) or not isinstance(ttl_days, int | float) or not 0 < ttl_days <= 36_500
    ):
        raise ValidationError(f"ttl_days: expected more than 0 and at most 36500, got {ttl_days!r}")
    m = port.get(memory_id)
    vector, stored = port.serving.vector_for(m.project, m.content, m.content_hash)

    def job(w: Write) -> MemoryVersion:  # run again if another node changed the memory meanwhile
        v = port.get(memory_id)
        if v.status not in ("archived", "expired"):
            raise ConflictError(f"memory {v.id} is {v.status}, not archived or expired: nothing to restore")
        expires_at = v.expires_at
        if ttl_days is not None:
            expires_at = w.now + timedelta(days=ttl_days)
        elif expires_at is not None and expires_at <= w.now:
            expires_at = None
        w.embedding(v.content_hash, vector, stored=stored)
        restored = w.update(
            v, reindex=True, status="active", archived_at=None, status_reason=None, expires_at=expires_at,
            last_reinforced_at=w.now,
        )  # fmt: skip
        w.audit([AuditEntry.of(v, "restore", actor, w.now, f"was {v.status}")])
        return restored

    return port.run_alone(job)


def pin(port: Port, memory_id: int, request: PinRequest, *, actor: str = "local") -> MemoryVersion:
    """Pin (or unpin) the latest version of a memory: the sweep never archives a pinned memory."""
    pinned = request.pinned
    if not isinstance(pinned, bool):
        raise ValidationError("pinned: expected true or false")
    with port.write() as w:
        m = w.get(memory_id) or port.get(memory_id)
        if not m.is_latest or m.status == "deleted":
            raise ConflictError(f"memory {m.id} is {'deleted' if m.status == 'deleted' else 'not the latest version'}")
        if m.pinned == pinned:
            return m
        changed = w.update(m, pinned=pinned)
        w.audit([AuditEntry.of(m, "pin" if pinned else "unpin", actor, w.now)])
    return changed


def delete(port: Port, request: DeleteRequest, *, actor: str = "local") -> DeleteReport:
    """The one hard delete: content, title, key, triple and vector of the chosen versions are erased.

    Choose versions by `ids`, by whole `lineages` (any id of the lineage), or by a filter of
    `project`, `kinds` and a `created_from`/`created_to` range; not both ways at once. Each
    version leaves a tombstone (id, lineage, project, kind, times, the reason) and the delete
    leaves one audit record. `scope` limits which projects may be touched (None: all).
    """
    r, dry_run, scope = request, request.dry_run, request.scope
    ids, lineages = r.ids, r.lineages
    reason = validate.content(r.reason if isinstance(r.reason, str) else "", port.config, "reason")
    targets = [validate.memory_id(i, "ids") for i in ids] + [validate.memory_id(i, "lineages") for i in lineages]
    project = validate.name(r.project, "project", port.config)
    kinds = validate.choices(r.kinds, port.config.kinds, "kind")
    start, end = validate.utc(r.created_from, "created_from"), validate.utc(r.created_to, "created_to")
    filtered = project is not None or bool(kinds) or start is not None or end is not None
    if targets and filtered:
        raise ValidationError("delete either by ids/lineages or by a filter (project, kinds, dates), not both")
    if not targets and not filtered:
        raise ValidationError("name what to delete: ids, lineages, or a filter of project, kinds and dates")
    if start is not None and end is not None and start >= end:
        raise ValidationError("created_from must be before created_to")
    if project is not None and scope is not None and project not in scope:
        raise NotFoundError(f"no project {project!r} among those this caller may change")

    def job(w: Write) -> tuple[DeleteReport, Write | None]:  # the store holds every acknowledged write
        victims, whole = _victims(port, targets, ids, lineages, project, kinds, start, end, scope)
        victim_ids = [v.id for v in victims]
        report = DeleteReport(
            dry_run=dry_run,
            versions=len(victims),
            lineages=len({v.lineage_id for v in victims}),
            ids=victim_ids[:MAX_LISTED],
            ids_truncated=len(victims) > MAX_LISTED,
        )
        if dry_run or not victims:
            return report, None
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
        w.audit(
            [
                AuditEntry(
                    created_at=w.now,
                    action="delete",
                    actor=actor,
                    project=next(iter(projects)) if len(projects) == 1 else None,
                    memory_id=victim_ids[0] if len(victims) == 1 else None,
                    lineage_id=next(iter(lineage_ids)) if len(lineage_ids) == 1 else None,
                    affected=len(victims),
                    reason=reason,
                    details=details,
                )
            ]
        )
        # a surviving current version indexes words of the versions it replaced: index it again
        gone = set(victim_ids)
        # every version of those lineages, read before the survivors (a shared store checks at the
        # commit that no other was added since); one added since the victims were read is a race
        known = port.store.versions(Filter(lineages=tuple(sorted(lineage_ids))))
        late = [v.id for v in known if v.lineage_id in whole and v.status != "deleted" and v.id not in gone]
        if late:
            raise RetryConflict(f"memories {late[:5]} were added to the deleted lineages meanwhile")
        survivors = [i for i in port.store.current_of_lineages(sorted(lineage_ids)) if i not in gone]
        w.erase(victims, reason, survivors, [v.id for v in known])
        return report, w

    report, w = port.run_alone(job)  # run again if another node changed a lineage meanwhile
    if w is None:
        return report
    if port.config.purge_index_files:
        port.purge()  # beside the writer, not under it: other writes go on
    return msgspec.structs.replace(report, audit_id=w.audit_ids[0])


def _victims(
    port: Port,
    targets: list[int],
    ids: Sequence[int],
    lineages: Sequence[int],
    project: str | None,
    kinds: list[str],
    start: datetime | None,
    end: datetime | None,
    scope: Sequence[str] | None,
) -> tuple[list[MemoryVersion], set[int]]:
    """The versions a delete names, oldest id first (already deleted ones left out), and the
    lineages it deletes whole."""
    store = port.store
    if targets:
        found = store.get_many(targets)
        for i in targets:
            if i not in found or (scope is not None and found[i].project not in scope):
                raise NotFoundError(f"no memory with id {i}")
        chosen = {found[i].id: found[i] for i in ids}
        whole = sorted({found[i].lineage_id for i in lineages})
        if whole:
            chosen.update((v.id, v) for v in store.versions(Filter(lineages=tuple(whole))))
        victims = [v for v in chosen.values() if v.status != "deleted"]
    else:
        if scope is not None and not scope:
            return [], set()
        projects = one_of(scope)
        if project is not None:  # within the caller's scope, if it has one
            projects = (project,) if projects is None or project in projects else ()
        victims = store.versions(
            Filter(projects=projects, kinds=one_of(kinds), created_from=start, created_to=end, exclude_deleted=True)
        )
        whole = []
    # a turn's claims repeat its words: they go with the turn they were stated in
    turns = {v.id for v in victims if v.kind == claims.TURN}
    if turns:
        named = {v.id for v in victims}
        said = [c for cs in store.built_on_each(sorted(turns)).values() for c in cs]
        victims = [*victims, *{c.id: c for c in said if claims.turn_of(c) in turns and c.status != "deleted"
                               and c.id not in named}.values()]  # fmt: skip
    return sorted(victims, key=lambda v: v.id), set(whole)
