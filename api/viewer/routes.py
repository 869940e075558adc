"""The viewer's routes under /ui/: HTML pages, forms with CSRF tokens, and HTML error pages."""

from __future__ import annotations

import logging
from typing import Annotated, Any
from urllib.parse import urlsplit

from anyio.to_thread import run_sync as run
from litestar import MediaType, Request, Response, Router, get, post
from litestar.datastructures import Cookie
from litestar.exceptions import (
    HTTPException,
    NotAuthorizedException,
    PermissionDeniedException,
    ValidationException,
)
from litestar.params import FromPath, FromQuery, Parameter
from litestar.response import Redirect

from agentmem import Memory, NewMemory
from agentmem.errors import AgentMemError, NotFoundError, ValidationError, for_reply
from agentmem.kinds import STATUSES, TIERS
from agentmem.records import MemoryVersion
from agentmem.retention import Retention, retention
from api.auth import Authenticator, Principal, require_whole_service
from api.body import strict_form
from api.deps import digits_only, memory_now, visible
from api.deps import memory as wait_for_memory
from api.viewer import pages
from api.viewer.html import Safe, page
from api.viewer.session import COOKIE, Sessions, Viewer, check_form, same_origin, sign_in, viewer

log = logging.getLogger("agentmem")

HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
Text = FromQuery[str | None]


def html(doc: Safe, status: int = 200, cookies: list[Cookie] | None = None) -> Response[str]:
    return Response(str(doc), status_code=status, media_type=MediaType.HTML, headers=HEADERS, cookies=cookies or [])


def _mem(request: Request) -> Memory:  # type: ignore[type-arg]
    return memory_now(request.app.state)


def _project(who: Principal, project: str) -> str:
    """Another project reads like an unknown one (404), as ids do in the API."""
    if not who.allows(project):
        raise NotFoundError(f"no project {project!r}")
    return project


def _blank(value: str | None) -> str | None:
    value = (value or "").strip()
    return value or None


def _doc(v: Viewer, title: str, body: Safe, project: str | None = None) -> Safe:
    return page(title, body, project=project, user=v.who.name, csrf=v.csrf, logout=v.cookie)


def _retention(mem: Memory, m: MemoryVersion) -> Retention:
    return retention(m, mem.clock(), mem.config.retention, mem.config.kinds)


def _next(path: str | None) -> str:
    """Only a path inside the viewer: never an open redirect."""
    path = path or "/ui/"
    parts = urlsplit(path)
    return path if not parts.scheme and not parts.netloc and path.startswith("/ui/") else "/ui/"


# -- sign in / out --------------------------------------------------------------


@get("/login", sync_to_thread=False)
def login_page(request: Request, next: Text = None) -> Response[Any]:  # type: ignore[type-arg]
    auth: Authenticator = request.app.state.auth
    if auth.open:
        return Redirect("/ui/")
    return html(page("Sign in", pages.login(next_path=_next(next))))


@post("/login", status_code=303)
async def login(request: Request) -> Response[Any]:  # type: ignore[type-arg]
    same_origin(request)
    form = await request.form()
    target = _next(form.get("next"))
    auth: Authenticator = request.app.state.auth
    if auth.open:
        return Redirect(target, status_code=303)
    token = str(form.get("token") or "")
    who = sign_in(auth, token)  # 401 (the sign-in page again) when unknown
    sessions: Sessions = request.app.state.sessions
    return Redirect(target, status_code=303, cookies=[_cookie(request, sessions.open(who))])


@post("/logout", status_code=303)
async def logout(request: Request) -> Response[Any]:  # type: ignore[type-arg]
    v = viewer(request)
    check_form(request, v, (await request.form()).get("csrf"))
    sid = request.cookies.get(COOKIE)
    if v.cookie and sid:
        sessions: Sessions = request.app.state.sessions
        sessions.close(sid)  # the cookie is worthless from now on, even if a copy of it survives
    return Redirect("/ui/login", status_code=303, cookies=[_cookie(request, "", max_age=0)])


def _cookie(request: Request, value: str, max_age: int | None = None) -> Cookie:  # type: ignore[type-arg]
    secure = request.app.state.settings.viewer.secure_cookie or request.url.scheme == "https"
    return Cookie(key=COOKIE, value=value, path="/ui", httponly=True, samesite="strict", secure=secure, max_age=max_age)


# -- reading --------------------------------------------------------------------


@get("/", sync_to_thread=True)
def index(request: Request) -> Response[Any]:  # type: ignore[type-arg]
    v = viewer(request)
    if len(v.who.projects) == 1 and not v.who.all_projects:
        return Redirect(f"{pages.base(v.who.projects[0])}/")
    counts = _mem(request).store.counts_by("project")
    if not v.who.all_projects:
        counts = {p: counts.get(p, 0) for p in v.who.projects}
    return html(_doc(v, "Projects", pages.projects(counts)))


@get("/p/{project:str}/", sync_to_thread=True, guards=[digits_only("cursor")])
def memories(
    request: Request,  # type: ignore[type-arg]
    project: FromPath[str],
    q: Text = None,
    tier: Text = None,
    kind: Text = None,
    agent: Text = None,
    status: Text = None,
    cursor: Annotated[int | None, Parameter(ge=1, le=2**53)] = None,
) -> Response[str]:
    v = viewer(request)
    mem = _mem(request)
    project = _project(v.who, project)
    tier, kind, agent, query = _blank(tier), _blank(kind), _blank(agent), (q or "").strip()
    if tier is not None and tier not in TIERS:
        raise ValidationError(f"unknown tier {tier!r}: choose one of {', '.join(TIERS)}")
    if kind is not None and kind not in mem.config.kinds:
        raise ValidationError(f"unknown kind {kind!r}")
    status = _blank(status) or "active"
    if status not in (*STATUSES, "all"):
        raise ValidationError(f"unknown status {status!r}: choose one of {', '.join(STATUSES)} or all")
    items: list[tuple[MemoryVersion, Retention, float | None]]
    older: dict[int, tuple[int, str | None]] = {}
    said_in: dict[int, int] = {}
    nxt = None
    if query:
        hits = mem.recall(
            query,
            project=project,
            k=min(50, mem.config.max_k),
            agent=agent,
            tiers=[tier] if tier else (),
            kinds=[kind] if kind else (),
        )
        items = [(h.memory, _retention(mem, h.memory), h.score) for h in hits]
        older = {h.memory.id: (h.older_than, h.older_reason) for h in hits if h.older_than is not None}
        said_in = {h.memory.id: h.stated_in.id for h in hits if h.stated_in is not None}
    else:
        found, nxt = mem.list_versions(
            projects=[project],
            tiers=[tier] if tier else (),
            kinds=[kind] if kind else (),
            agent=agent,
            status=None if status == "all" else status,
            latest_only=status in ("active", "archived", "expired"),
            before_id=cursor,
            limit=50,
        )
        items = [(m, _retention(mem, m), None) for m in found]
    kinds = sorted(mem.config.kinds)
    box = pages.remember_box(project, v.csrf, kinds, can=v.who.can("write"))
    body = pages.memories(
        project, items, q=query, tier=tier, kind=kind, agent=agent, status=status, kinds=kinds, next_cursor=nxt,
        box=box, older=older, said_in=said_in,
    )  # fmt: skip
    return html(_doc(v, f"Memories in {project}", body, project))


def _memory_page(mem: Memory, v: Viewer, memory_id: int, top: Safe | None = None) -> Safe:
    m = visible(mem, v.who, memory_id)
    chain = mem.history(memory_id)
    latest = chain[-1]
    ret = _retention(mem, latest) if latest.status == "active" else None
    key = latest.key if latest.status == "active" else None
    body = Safe(
        (top or Safe(""))
        + pages.timeline(chain, memory_id, ret, csrf=v.csrf, can_write=v.who.can("write"))
        + pages.remember_box(m.project, v.csrf, sorted(mem.config.kinds), key=key, can=v.who.can("write"))
    )
    return _doc(v, f"Memory #{memory_id}", body, m.project)


@get("/memories/{memory_id:int}", sync_to_thread=True)
def memory(request: Request, memory_id: FromPath[int]) -> Response[str]:  # type: ignore[type-arg]
    v = viewer(request)
    return html(_memory_page(_mem(request), v, memory_id))


@get("/p/{project:str}/archive", sync_to_thread=True)
def archive(request: Request, project: FromPath[str]) -> Response[str]:  # type: ignore[type-arg]
    v = viewer(request)
    mem = _mem(request)
    project = _project(v.who, project)
    found: list[MemoryVersion] = []
    for status in ("archived", "expired"):
        found += mem.list_versions(projects=[project], status=status, limit=200)[0]
    body = pages.archive(found, csrf=v.csrf, can_write=v.who.can("write"))
    return html(_doc(v, f"Archive of {project}", body, project))


@get("/p/{project:str}/audit", sync_to_thread=True, guards=[digits_only("memory_id", "cursor")])
def audit(
    request: Request,  # type: ignore[type-arg]
    project: FromPath[str],
    action: Text = None,
    memory_id: Annotated[int | None, Parameter(ge=1, le=2**53)] = None,
    cursor: Annotated[int | None, Parameter(ge=1, le=2**53)] = None,
) -> Response[str]:
    v = viewer(request)
    mem = _mem(request)
    project = _project(v.who, project)
    action = _blank(action)
    if memory_id is not None:
        visible(mem, v.who, memory_id)
    items, nxt = mem.audit(
        projects=[project], actions=[action] if action else (), memory_id=memory_id, before_id=cursor, limit=100
    )
    body = pages.audit(project, items, action=action, memory_id=memory_id, next_cursor=nxt)
    return html(_doc(v, f"Audit log of {project}", body, project))


@get("/p/{project:str}/stats", sync_to_thread=True)
def stats(request: Request, project: FromPath[str], check: FromQuery[bool] = False) -> Response[str]:  # type: ignore[type-arg]
    v = viewer(request)
    mem = _mem(request)
    project = _project(v.who, project)
    if check:
        require_whole_service(v.who)
    report = mem.check() if check else None
    body = pages.stats(project, mem.stats([project]), report, admin=v.who.can("admin") and v.who.all_projects)
    return html(_doc(v, f"Stats of {project}", body, project))


# -- writing --------------------------------------------------------------------


@post("/p/{project:str}/remember")
async def remember(request: Request, project: FromPath[str]) -> Response[str]:  # type: ignore[type-arg]
    v = viewer(request)
    await strict_form(request)
    form = await request.form()
    check_form(request, v, form.get("csrf"))
    v.who.require("write")
    mem = await wait_for_memory(request.app.state)
    project = _project(v.who, project)
    fields: dict[str, Any] = {k: _blank(form.get(k)) for k in ("key", "kind", "tier", "agent")}
    item = NewMemory(
        content=str(form.get("content") or ""),
        project=project,
        source="note",
        **{k: val for k, val in fields.items() if val is not None},
    )
    result = await run(lambda: mem.remember(item, actor=v.who.name))
    old = await run(mem.get, result.superseded_id) if result.superseded_id is not None else None
    doc = await run(_memory_page, mem, v, result.memory.id, pages.outcome(result, old))
    return html(doc, 200 if result.outcome == "reinforced" else 201)


@post("/memories/{memory_id:int}/restore", status_code=303)
async def restore(request: Request, memory_id: FromPath[int]) -> Response[Any]:  # type: ignore[type-arg]
    v = viewer(request)
    check_form(request, v, (await request.form()).get("csrf"))
    v.who.require("write")
    mem = await wait_for_memory(request.app.state)
    await run(visible, mem, v.who, memory_id)
    await run(lambda: mem.restore(memory_id, actor=v.who.name))
    return Redirect(f"/ui/memories/{memory_id}", status_code=303)


# -- errors: an HTML page with the right status, never a stack trace --------------------


def _error_page(request: Request, status: int, message: str, label: str) -> Response[str]:  # type: ignore[type-arg]
    if status == 401:
        path = request.url.path if request.method == "GET" else "/ui/"
        gone = [_cookie(request, "", max_age=0)] if request.cookies.get(COOKIE) else []
        return html(page("Sign in", pages.login(message, next_path=_next(path))), 401, cookies=gone)
    return html(page(label.capitalize(), pages.error(status, message, signed_in=True)), status)


def _on_agentmem(request: Request, exc: AgentMemError) -> Response[str]:  # type: ignore[type-arg]
    """The status and title the error carries: the same status the API answers with."""
    return _error_page(request, exc.status, str(exc), exc.label)


def http_error(request: Request, exc: HTTPException) -> Response[str]:  # type: ignore[type-arg]
    """An HTTP error as a viewer page (the app's handler sends /ui paths no route matched here too)."""
    if isinstance(exc, ValidationException):
        message = f"{exc.detail}: check the query parameters"
        return _error_page(request, ValidationError.status, message, ValidationError.label)
    message = {404: "no such page", 405: "this page does not take that method"}.get(exc.status_code, exc.detail)
    return _error_page(
        request,
        exc.status_code,
        exc.detail if exc.detail not in ("Not Found", "Method Not Allowed") else message,
        _label(exc.status_code),
    )


def _label(status: int) -> str:
    """The title of one of Litestar's own refusals: the label of the agentmem error it stands for."""
    if status == 405:
        return "method not allowed"
    return for_reply(status).label if status < 500 else AgentMemError.label


def owns(path: str) -> bool:
    """Whether a path is the viewer's."""
    return path == "/ui" or path.startswith("/ui/")


def _on_other(request: Request, exc: Exception) -> Response[str]:  # type: ignore[type-arg]
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return _error_page(request, 500, "internal error: the request was not completed; see the server log", "error")


router = Router(
    "/ui",
    route_handlers=[
        login_page,
        login,
        logout,
        index,
        memories,
        memory,
        archive,
        audit,
        stats,
        remember,
        restore,
    ],
    tags=["viewer (HTML pages)"],
    exception_handlers={
        AgentMemError: _on_agentmem,
        HTTPException: http_error,
        ValidationException: http_error,
        NotAuthorizedException: http_error,
        PermissionDeniedException: http_error,
        Exception: _on_other,
    },
)
