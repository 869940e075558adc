"""/v1/memories and /v1/observations: write, read, list, history, new versions."""

from __future__ import annotations

import msgspec
from anyio.to_thread import run_sync as run
from litestar import Response, get, post
from litestar.datastructures import State
from litestar.params import FromPath, JSONBody

from agentmem import NewMemory, RememberResult, ValidationError
from agentmem.operations import ListRequest, ObserveRequest, ReviseRequest, arguments, observed
from agentmem.records import MemoryVersion
from api.deps import Mem, Who, digits_only, visible
from api.query import from_query
from api.schemas import ObserveReply, Page


@post("/v1/memories", summary="Remember: create, reinforce or supersede")
async def remember(data: JSONBody[NewMemory], who: Who, mem: Mem) -> Response[RememberResult]:
    """Store a memory. The reply says whether it was created, reinforced (same content, key or
    triple) or superseded an older version (with the old id, the reason and the similarity),
    and lists near duplicates that were left alone."""
    who.require("write")
    item = msgspec.structs.replace(data, project=who.project(data.project))
    result = await run(lambda: mem.remember(item, actor=who.name))
    return Response(result, status_code=201 if result.outcome != "reinforced" else 200)


@post("/v1/observations", summary="Log a batch of raw observations")
async def observe(data: JSONBody[ObserveRequest], who: Who, mem: Mem, state: State) -> Response[ObserveReply]:
    """Record raw events from an agent host in one transaction (all or nothing)."""
    who.require("write")
    limit = state.settings.max_batch
    if not data.observations:
        raise ValidationError("observations may not be empty")
    if len(data.observations) > limit:
        raise ValidationError(f"at most {limit} observations a request")
    items = [msgspec.structs.replace(observed(o), project=who.project(o.project)) for o in data.observations]
    created = await run(mem.observe, items)
    return Response(ObserveReply(ids=[v.id for v in created], memories=created), status_code=201)


@get("/v1/memories/{memory_id:int}", sync_to_thread=True, summary="One version")
def get_memory(memory_id: FromPath[int], who: Who, mem: Mem) -> MemoryVersion:
    return visible(mem, who, memory_id)


@get("/v1/memories/{memory_id:int}/history", sync_to_thread=True, summary="Every version of a lineage")
def history(memory_id: FromPath[int], who: Who, mem: Mem) -> list[MemoryVersion]:
    """Oldest first, each superseded version with its death record (by whom, when, why)."""
    visible(mem, who, memory_id)
    return mem.history(memory_id)


@post("/v1/memories/{memory_id:int}/versions", status_code=201, sync_to_thread=True, summary="Write a new version")
def revise(memory_id: FromPath[int], data: JSONBody[ReviseRequest], who: Who, mem: Mem) -> RememberResult:
    who.require("write")
    visible(mem, who, memory_id)
    return mem.revise(memory_id, **arguments(data), actor=who.name)


@get(
    "/v1/memories",
    sync_to_thread=True,
    guards=[digits_only("cursor", "limit")],
    summary="List versions with filters and a cursor",
)
@from_query(ListRequest)
def list_memories(who: Who, mem: Mem, request: ListRequest) -> Page:
    """A page of versions, newest first, within the token's projects; `cursor` is the previous
    page's `next_cursor`."""
    asked = msgspec.structs.replace(request, projects=who.scope(request.projects))
    items, nxt = mem.list_versions(**arguments(asked))
    return Page(items=items, next_cursor=nxt)
