"""Retention, the archive sweep, restore, pin, the governance delete and the audit log."""

from __future__ import annotations

import msgspec
from anyio.to_thread import run_sync as run
from litestar import get, post
from litestar.params import FromPath, JSONBody

from agentmem.errors import NotFoundError
from agentmem.lifecycle import DeleteReport, SweepReport
from agentmem.operations import AuditRequest, DeleteRequest, PinRequest, RestoreRequest, SweepRequest, arguments
from agentmem.records import MemoryVersion
from agentmem.retention import Retention
from api.deps import Mem, Who, digits_only, visible
from api.query import from_query
from api.schemas import AuditPage


@get("/v1/memories/{memory_id:int}/retention", sync_to_thread=True, summary="Retention score and tier, now")
def retention(memory_id: FromPath[int], who: Who, mem: Mem) -> Retention:
    """hot / warm / cold / evictable, from decay by kind, salience and bounded recent access."""
    visible(mem, who, memory_id)
    return mem.retention(memory_id)


@post("/v1/sweep", status_code=200, summary="Archive faded and expired memories (admin)")
async def sweep(data: JSONBody[SweepRequest], who: Who, mem: Mem) -> SweepReport:
    """Archives (never deletes) current memories below the retention threshold and those whose TTL
    has passed, lowest retention first, at most `limit`; pinned memories are skipped. Each archived
    memory gets an audit entry. `dry_run` reports without changing anything."""
    who.require("admin")
    request = msgspec.structs.replace(data, projects=who.scope(data.projects))
    return await run(lambda: mem.sweep(**arguments(request), actor=who.name))


@post("/v1/memories/{memory_id:int}/restore", status_code=200, summary="Restore an archived or expired memory")
async def restore(memory_id: FromPath[int], data: JSONBody[RestoreRequest], who: Who, mem: Mem) -> MemoryVersion:
    """Puts it back into recall and both indexes; its decay clock restarts. 409 if it is not
    archived, or if a newer current memory now holds its key or triple slot."""
    who.require("write")
    await run(visible, mem, who, memory_id)
    return await run(lambda: mem.restore(memory_id, **arguments(data), actor=who.name))


@post("/v1/memories/{memory_id:int}/pin", status_code=200, summary="Pin or unpin a memory")
async def pin(memory_id: FromPath[int], data: JSONBody[PinRequest], who: Who, mem: Mem) -> MemoryVersion:
    """A pinned memory is never archived by the sweep."""
    who.require("write")
    await run(visible, mem, who, memory_id)
    return await run(lambda: mem.pin(memory_id, **arguments(data), actor=who.name))


@post("/v1/delete", status_code=200, summary="Governance delete: the one hard delete (admin)")
async def delete(data: JSONBody[DeleteRequest], who: Who, mem: Mem) -> DeleteReport:
    """Erases content, title, key, triple and vector of the chosen versions from DuckDB and both
    indexes, leaving tombstones and one audit record (who, when, why, how many). Choose by `ids`,
    by `lineages` (any id of each), or by a filter of `project`, `kinds` and a created date range;
    `reason` is required; `dry_run` reports what would go."""
    who.require("admin")
    scope = who.scope()
    if data.scope is not None:  # the caller's own limit, within the token's projects
        scope = [p for p in data.scope if scope is None or p in scope]
    if data.project is not None and not who.allows(data.project):
        raise NotFoundError(f"no project {data.project!r} among those this token may change")
    request = msgspec.structs.replace(data, scope=scope)
    return await run(lambda: mem.delete(**arguments(request), actor=who.name))


@get(
    "/v1/audit",
    sync_to_thread=True,
    guards=[digits_only("memory_id", "cursor", "limit")],
    summary="The audit log, newest first",
)
@from_query(AuditRequest)
def audit_log(who: Who, mem: Mem, request: AuditRequest) -> AuditPage:
    """Supersessions, archives, expiries, restores, pins, deletes and rebuilds. Entries that span
    projects (rebuilds, deletes over several projects) are shown to all-projects tokens only."""
    asked = msgspec.structs.replace(request, projects=who.scope(request.projects))
    items, nxt = mem.audit(**arguments(asked))
    return AuditPage(items=items, next_cursor=nxt)
