"""Health, readiness, stats, consistency check, online rebuild and metrics."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import msgspec
from anyio.to_thread import run_sync as run
from litestar import Request, Response, get, post
from litestar.datastructures import State
from litestar.exceptions import NotAuthorizedException
from litestar.params import JSONBody

from agentmem import Memory, Stats
from agentmem.operations import RebuildRequest, ScopeRequest, arguments
from agentmem.records import Reembedding
from api.auth import require_whole_service
from api.deps import Mem, Who
from api.query import from_query
from api.schemas import RebuildStatus
from api.startup import Startup
from indexes.sync import Consistency


class Health(msgspec.Struct, frozen=True):
    status: str


class Readiness(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Readiness; the rest (whole-service figures) only for an admin token of every project, or with no tokens."""

    ready: bool
    state: str  # "ready", or "starting" while the engine loads the embedding model (see api.startup)
    outbox_lag: int | None = None
    index_stale: bool | None = None
    rebuild: str | None = None
    degraded: list[str] | None = None  # serving, but without something (e.g. vector search while the model is down)
    reembedding: Reembedding | None = None  # a change of model under way (the old model serves meanwhile)


@get("/health", summary="Liveness (no token needed)", security=[], sync_to_thread=False)
def health() -> Health:
    return Health(status="ok")


@get("/ready", summary="Readiness: engine loaded, indexes caught up with the store (no token needed)")
async def ready(request: Request, state: State) -> Response[Readiness]:  # type: ignore[type-arg]
    """503 with state `starting` while the model loads, and while the indexes lag behind the store.
    The figures behind it (outbox lag, staleness, rebuild, degraded parts, a re-embedding) count
    every project's writes: they come only with an admin token of every project (or no tokens)."""
    mem: Memory = state.memory
    startup: Startup = state.startup
    lag = await run(mem.indexes.lag)
    stale = mem.index_stale
    ok = startup.is_ready and lag == 0 and not stale
    try:
        who = state.auth(request.headers.get("authorization"))
    except NotAuthorizedException:  # no or unknown token: readiness alone
        who = None
    body = Readiness(ready=ok, state=startup.state)
    if who is not None and who.can("admin") and who.all_projects:
        body = msgspec.structs.replace(
            body, outbox_lag=lag, index_stale=stale, rebuild=state.rebuild.state, degraded=mem.degraded,
            reembedding=mem.engine.serving.reembedding,
        )  # fmt: skip
    return Response(body, status_code=200 if ok else 503)


@get("/v1/stats", sync_to_thread=True, summary="Counts over the caller's projects and the indexes")
@from_query(ScopeRequest)
def stats(who: Who, mem: Mem, request: ScopeRequest) -> Stats:
    """Over the token's projects, or the named ones among them (repeat `project`)."""
    return mem.stats(who.scope(request.projects))


@post("/v1/check", sync_to_thread=True, status_code=200, summary="Consistency check (admin)")
def check(who: Who, mem: Mem) -> Consistency:
    """Ids in each index against the latest active ids in DuckDB, and the store's own invariants
    (`store_problems`: lineages, references, one current memory per key and slot), over every
    project (hence for an admin token of all projects)."""
    require_whole_service(who)
    return mem.check()


@post("/v1/rebuild", status_code=202, sync_to_thread=False, summary="Start an online index rebuild (admin)")
def start_rebuild(who: Who, mem: Mem, state: State, data: JSONBody[RebuildRequest | None] = None) -> RebuildStatus:
    """Rebuilds the indexes in `which` (default: both) from DuckDB in the background while recall
    keeps serving; poll GET /v1/rebuild for its state. The body may be left out. It rebuilds every
    project's index, and its state counts them all: an admin token of all projects only."""
    require_whole_service(who)
    request = data or RebuildRequest()
    with state.rebuild_lock:
        if state.rebuild.state == "running":
            return state.rebuild  # type: ignore[no-any-return]
        state.rebuild = RebuildStatus(state="running", started_at=datetime.now(UTC))

    def run() -> None:
        try:
            report = mem.rebuild(**arguments(request), actor=who.name)
            final = "done" if report.ok else "failed"
            message = f"{report.expected} memories indexed" if report.ok else "inconsistent after rebuild"
        except Exception as exc:  # reported through GET /v1/rebuild, and logged
            final, message = "failed", str(exc)
        state.rebuild = RebuildStatus(
            state=final, started_at=state.rebuild.started_at, finished_at=datetime.now(UTC), message=message
        )

    threading.Thread(target=run, name="agentmem-rebuild", daemon=True).start()
    return state.rebuild  # type: ignore[no-any-return]


@get("/v1/rebuild", sync_to_thread=False, summary="State of the last online rebuild")
def rebuild_status(who: Who, state: State) -> RebuildStatus:
    require_whole_service(who)
    return state.rebuild  # type: ignore[no-any-return]


@get("/metrics", sync_to_thread=True, media_type="text/plain; version=0.0.4", summary="Prometheus metrics")
def metrics(who: Who, mem: Mem, state: State) -> str:
    """Request counters and whole-service gauges for an admin token of every project; for any other
    token, only gauges counted over its own projects (no other project's figures, no request counts)."""
    whole = who.can("admin") and who.all_projects
    figures = mem.stats(None if whole else who.scope())
    gauges = {
        "bm25_documents": figures.bm25_docs,
        "vector_documents": figures.vector_docs,
        "outbox_lag": figures.outbox_pending,
        "current_memories": figures.latest_active,
    } | ({"index_stale": int(mem.index_stale)} if whole else {})
    return state.metrics.render(gauges, requests=whole)  # type: ignore[no-any-return]
