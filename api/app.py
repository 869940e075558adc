"""The Litestar application: routes, auth, error mapping, OpenAPI at /docs, lifecycle of the Memory."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from litestar import Litestar, MediaType, Request, Response, Router
from litestar.datastructures import State
from litestar.di import Provide
from litestar.exceptions import HTTPException, ValidationException

from agentmem import Memory
from agentmem.errors import (
    AccessDeniedError,
    AgentMemError,
    ConflictError,
    NotFoundError,
    ServiceUnavailableError,
    ValidationError,
)
from api import docs, metrics, viewer
from api.auth import Authenticator, principal
from api.body import StrictRequest
from api.deps import memory
from api.guard import Guard
from api.routes import admin, consolidation, ingest, lifecycle, memories, search, transfer
from api.schemas import ErrorDetail, ErrorReply, RebuildStatus
from api.settings import Settings
from api.startup import Startup
from api.viewer.session import Sessions

log = logging.getLogger("agentmem")

# Litestar's own refusals carry the code of the agentmem error they stand for, or a name of their own.
STANDS_FOR = (ValidationError, AccessDeniedError, NotFoundError, ConflictError, ServiceUnavailableError)
HTTP_CODES = {401: "unauthorized", 405: "method_not_allowed", 413: "too_large", 429: "too_many_requests"} | {
    e.status: e.code for e in STANDS_FOR
}


def _error(status: int, code: str, message: str, details: list[dict[str, str]] | None = None) -> Response[ErrorReply]:
    return Response(ErrorReply(ErrorDetail(code, message, details)), status_code=status, media_type=MediaType.JSON)


def _agentmem_error(_: Request, exc: AgentMemError) -> Response[ErrorReply]:  # type: ignore[type-arg]
    return _error(exc.status, exc.code, str(exc))


def _validation_error(_: Request, exc: ValidationException) -> Response[ErrorReply]:  # type: ignore[type-arg]
    extra = exc.extra if isinstance(exc.extra, list) else None
    details = [{k: str(v) for k, v in e.items()} for e in extra if isinstance(e, dict)] if extra else None
    message = exc.detail
    if details:
        message = f"{exc.detail}: " + "; ".join(f"{d.get('key', '')}: {d.get('message', '')}" for d in details)
    return _error(ValidationError.status, ValidationError.code, message, details)


def _http_error(request: Request, exc: HTTPException) -> Response[Any]:  # type: ignore[type-arg]
    if viewer.owns(request.url.path):  # no viewer route matched (404, 405): answer with an HTML page
        return viewer.http_error(request, exc)
    message = exc.detail
    if exc.status_code == 413:
        limit = request.route_handler.resolve_request_max_body_size()
        setting = "max_import_bytes" if request.url.path == "/v1/import" else "max_body_bytes"
        message = f"the request body is larger than this route's limit of {limit} bytes (setting {setting})"
    return _error(exc.status_code, HTTP_CODES.get(exc.status_code, "http_error"), message)


def _internal_error(request: Request, exc: Exception) -> Response[ErrorReply]:  # type: ignore[type-arg]
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return _error(500, "internal", "internal error: the request was not completed; see the server log")


class Every:
    """Runs `job` every `seconds` in a thread of its own, until stopped; failures are logged."""

    def __init__(self, name: str, seconds: float, job: Callable[[], object]) -> None:
        self.name = name
        self.seconds = seconds
        self.job = job
        self.runs = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"agentmem-{name}", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.seconds):
            try:
                self.job()
                self.runs += 1
            except Exception:  # logged; the next run tries again
                log.exception("scheduled %s failed", self.name)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)


def _claimed(mem: Memory, name: str, seconds: float, job: Callable[[], object]) -> Callable[[], object]:
    """`job`, run only when this node claims it (on a shared database one node of all runs it
    each period; on a data directory this process always does)."""

    def run() -> object:
        return job() if mem.engine.claim_job(name, seconds) else None

    return run


def create_app(settings: Settings, *, mem: Memory, owns: bool = False) -> Litestar:
    """The service over an open Memory. With `owns` (what `serve` does) the app loads the embedding
    model in the background once it listens (see api.startup) and closes `mem` on shutdown; without
    it (tests) the engine is ready at once and the caller closes it."""
    guard = Guard.of(tokens=bool(settings.tokens), hosts=settings.allowed_hosts, origins=settings.allowed_origins)
    state = State(
        {
            "settings": settings,
            "auth": Authenticator(settings.tokens),
            "metrics": metrics.Metrics(),
            "rebuild": RebuildStatus(state="idle"),
            "rebuild_lock": threading.Lock(),
            "memory": mem,
            "startup": Startup(),
            "sessions": Sessions(idle_minutes=settings.viewer.idle_minutes),
            "guard": guard,
        }
    )

    def startup(app: Litestar) -> None:
        log.info("agentmem serving %s", settings.data_dir)
        # load the model now, not on the first request; if it fails, serve degraded
        app.state.startup.begin(mem.warm_up if owns else None)
        jobs: list[tuple[str, float, Callable[[], object]]] = [
            ("sweep", settings.sweep_every_minutes, lambda: mem.sweep(actor="scheduler")),
            ("consolidation", settings.consolidate_every_minutes, lambda: mem.consolidate(actor="scheduler")),
        ]
        app.state.schedules = [
            Every(name, minutes * 60, _claimed(mem, name, minutes * 60, job))
            for name, minutes, job in jobs
            if minutes > 0
        ]

    def shutdown(app: Litestar) -> None:
        for job in app.state.get("schedules", []):
            job.stop()
        if owns:
            mem.close()  # flushes indexes and records the applied outbox seq

    return Litestar(
        route_handlers=[
            admin.health,
            admin.ready,
            admin.stats,
            admin.check,
            admin.start_rebuild,
            admin.rebuild_status,
            admin.metrics,
            memories.remember,
            memories.observe,
            memories.get_memory,
            memories.history,
            memories.revise,
            memories.list_memories,
            lifecycle.retention,
            lifecycle.sweep,
            lifecycle.restore,
            lifecycle.pin,
            lifecycle.delete,
            lifecycle.audit_log,
            consolidation.end_session,
            consolidation.consolidate,
            consolidation.provenance,
            search.recall,
            search.context,
            transfer.export,
            Router("/", route_handlers=[transfer.import_], request_max_body_size=settings.max_import_bytes),
            ingest.conversation,
            ingest.notes,
            ingest.code,
            viewer.router,
            docs.assets(),
        ],
        dependencies={"who": Provide(principal), "mem": Provide(memory)},
        exception_handlers={
            AgentMemError: _agentmem_error,
            ValidationException: _validation_error,
            HTTPException: _http_error,
            Exception: _internal_error,
        },
        middleware=[guard.wrap, metrics.middleware],
        on_startup=[startup],
        on_shutdown=[shutdown],
        state=state,
        request_max_body_size=settings.max_body_bytes,
        request_class=StrictRequest,
        openapi_config=docs.openapi_config(),
        logging_config=None,
    )
