"""A small typed client for the agentmem HTTP service: a `MemoryAPI`, like `agentmem.Memory`.

>>> with Client("http://127.0.0.1:8420", token="...") as c:      # doctest: +SKIP
...     c.remember(NewMemory(content="We use Postgres", project="shop")).outcome
'created'
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
import msgspec

from agentmem.admission.conversation import load as load_conversation
from agentmem.admission.scan import ScanReport
from agentmem.audit import AuditEntry
from agentmem.consolidate import ConsolidationReport, EpisodeResult, Provenance
from agentmem.context import Context
from agentmem.contract import MemoryAPI
from agentmem.errors import ServiceUnavailableError, ValidationError, for_reply
from agentmem.lifecycle import DeleteReport, SweepReport
from agentmem.operations import (
    AuditRequest,
    ConsolidateRequest,
    ContextRequest,
    DeleteRequest,
    EndSessionRequest,
    IngestConversationRequest,
    IngestPathRequest,
    ListRequest,
    ObserveRequest,
    PinRequest,
    RebuildRequest,
    RecallRequest,
    Request,
    RestoreRequest,
    ReviseRequest,
    ScopeRequest,
    SweepRequest,
    observation,
    query,
)
from agentmem.records import MemoryVersion, NewMemory, Recalled, RememberResult, Stats
from agentmem.retention import Retention
from indexes.sync import Consistency

T = TypeVar("T")


_JSON = {"content-type": "application/json"}


def serving(ready: httpx.Response) -> bool:
    """Whether a reply of GET /ready says the engine is loaded (`state` is not "starting"), though the
    indexes may still lag; a server from before the start-up states serves once it answers."""
    try:
        return ready.json().get("state", "ready") != "starting"  # type: ignore[no-any-return]
    except ValueError:
        return False


class _Observed(msgspec.Struct):
    memories: list[MemoryVersion]


class _Page(msgspec.Struct):
    items: list[MemoryVersion]
    next_cursor: int | None


class _AuditPage(msgspec.Struct):
    items: list[AuditEntry]
    next_cursor: int | None


class _Rebuild(msgspec.Struct):
    state: str
    message: str | None = None


class Client(MemoryAPI):
    """Talks to a running agentmem service; raises the same AgentMemError tree as the core.

    It is a `MemoryAPI` (see agentmem.contract): the same methods and arguments as `Memory`.
    `actor` is accepted and not sent (the service records the token's name); so is the
    admission option `progress`. `transport` is for tests (e.g. Litestar's TestClientTransport);
    `event_hooks` are httpx's (`agentmem bench` reads the recall stage times from the replies).
    """

    poll_seconds = 0.5  # how often rebuild() asks whether the service has finished

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        timeout: float | httpx.Timeout = 60.0,
        transport: httpx.BaseTransport | None = None,
        event_hooks: dict[str, list[Callable[..., Any]]] | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=timeout, transport=transport,
                                  event_hooks=event_hooks)  # fmt: skip

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, path: str, reply: type[T] | None = None, **kw: Any) -> Any:
        try:
            r = self._http.request(method, path, **kw)
        except httpx.HTTPError as exc:
            raise ServiceUnavailableError(f"agentmem service at {self._http.base_url} is unreachable: {exc}") from exc
        if r.status_code >= 400:
            try:
                error = r.json()["error"]
                message, code = error["message"], error.get("code")
            except (ValueError, KeyError, TypeError, AttributeError):
                message, code = r.text[:500] or r.reason_phrase, None
            raise for_reply(r.status_code, code)(f"{r.status_code}: {message}")
        if reply is None:
            return r.json()
        return msgspec.json.decode(r.content, type=reply)

    @staticmethod
    def _json(obj: Any) -> dict[str, Any]:
        return msgspec.to_builtins(obj)  # type: ignore[no-any-return]

    # -- writing ------------------------------------------------------------

    def _remember(self, new: NewMemory, *, actor: str) -> RememberResult:
        body = {k: v for k, v in self._json(new).items() if v is not None and v != []}
        return self._call("POST", "/v1/memories", RememberResult, json=body)  # type: ignore[no-any-return]

    def _revise(self, memory_id: int, request: ReviseRequest, *, actor: str) -> RememberResult:
        path = f"/v1/memories/{int(memory_id)}/versions"
        return self._call("POST", path, RememberResult, content=_body(request), headers=_JSON)  # type: ignore[no-any-return]

    def _observe(self, items: list[NewMemory], *, actor: str) -> list[MemoryVersion]:
        body = _body(ObserveRequest(observations=[observation(n, m) for n, m in enumerate(items)]))
        return self._call("POST", "/v1/observations", _Observed, content=body, headers=_JSON).memories  # type: ignore[no-any-return]

    # -- reading ------------------------------------------------------------

    def _search(self, request: RecallRequest) -> Recalled:
        return self._call("POST", "/v1/recall", Recalled, content=msgspec.json.encode(request), headers=_JSON)  # type: ignore[no-any-return]

    def _context(self, request: ContextRequest) -> Context:
        return self._call("POST", "/v1/context", Context, content=msgspec.json.encode(request), headers=_JSON)  # type: ignore[no-any-return]

    def get(self, memory_id: int) -> MemoryVersion:
        return self._call("GET", f"/v1/memories/{int(memory_id)}", MemoryVersion)  # type: ignore[no-any-return]

    def history(self, memory_id: int) -> list[MemoryVersion]:
        return self._call("GET", f"/v1/memories/{int(memory_id)}/history", list[MemoryVersion])  # type: ignore[no-any-return]

    def _list_versions(self, request: ListRequest) -> tuple[list[MemoryVersion], int | None]:
        if request.projects is not None and not request.projects:
            return [], None  # as in process: no projects, no versions (the service would read "all of mine")
        asked = msgspec.structs.replace(request, status=list(request.statuses() or ["all"]))
        page = self._call("GET", "/v1/memories", _Page, params=query(asked))
        return page.items, page.next_cursor

    def provenance(self, memory_id: int) -> Provenance:
        return self._call("GET", f"/v1/memories/{int(memory_id)}/provenance", Provenance)  # type: ignore[no-any-return]

    # -- upkeep -------------------------------------------------------------

    def _stats(self, request: ScopeRequest) -> Stats:
        return self._call("GET", "/v1/stats", Stats, params=query(request))  # type: ignore[no-any-return]

    def check(self) -> Consistency:
        return self._call("POST", "/v1/check", Consistency)  # type: ignore[no-any-return]

    def _rebuild(self, request: RebuildRequest, *, actor: str) -> Consistency:
        """Start an online rebuild and wait for it."""
        self._call("POST", "/v1/rebuild", content=_body(request), headers=_JSON)
        while (status := self._call("GET", "/v1/rebuild", _Rebuild)).state == "running":
            time.sleep(self.poll_seconds)
        if status.state != "done":
            raise ServiceUnavailableError(f"rebuild {status.state}: {status.message}")
        return self.check()

    def _export_lines(self, request: ScopeRequest) -> Iterator[bytes]:
        params = query(request)
        with self._http.stream("GET", "/v1/export", params=params) as r:
            if r.status_code >= 400:
                r.read()
                self._call("GET", "/v1/export", params=params)  # raises the mapped error
            yield from ndjson_lines(r.iter_bytes())

    def import_lines(self, lines: Iterable[bytes | str]) -> int:
        body = b"".join((x.encode() if isinstance(x, str) else x).rstrip(b"\n") + b"\n" for x in lines)
        return self._call("POST", "/v1/import", content=body, headers={"content-type": "application/x-ndjson"})[
            "imported"
        ]  # type: ignore[no-any-return]

    # -- lifecycle ------------------------------------------------------------

    def retention(self, memory_id: int) -> Retention:
        return self._call("GET", f"/v1/memories/{int(memory_id)}/retention", Retention)  # type: ignore[no-any-return]

    def _sweep(self, request: SweepRequest, *, actor: str) -> SweepReport:
        return self._call("POST", "/v1/sweep", SweepReport, content=msgspec.json.encode(request), headers=_JSON)  # type: ignore[no-any-return]

    def _restore(self, memory_id: int, request: RestoreRequest, *, actor: str) -> MemoryVersion:
        path, body = f"/v1/memories/{int(memory_id)}/restore", msgspec.json.encode(request)
        return self._call("POST", path, MemoryVersion, content=body, headers=_JSON)  # type: ignore[no-any-return]

    def _pin(self, memory_id: int, request: PinRequest, *, actor: str) -> MemoryVersion:
        path, body = f"/v1/memories/{int(memory_id)}/pin", msgspec.json.encode(request)
        return self._call("POST", path, MemoryVersion, content=body, headers=_JSON)  # type: ignore[no-any-return]

    def _delete(self, request: DeleteRequest, *, actor: str) -> DeleteReport:
        """`scope` narrows the token's projects."""
        return self._call("POST", "/v1/delete", DeleteReport, content=_body(request), headers=_JSON)  # type: ignore[no-any-return]

    def _audit(self, request: AuditRequest) -> tuple[list[AuditEntry], int | None]:
        if request.projects is not None and not request.projects:
            return [], None  # as in process: no projects, no entries
        page = self._call("GET", "/v1/audit", _AuditPage, params=query(request))
        return page.items, page.next_cursor

    # -- consolidation --------------------------------------------------------

    def _consolidate(self, request: ConsolidateRequest, *, actor: str) -> list[ConsolidationReport]:
        body = _body(request)
        return self._call("POST", "/v1/consolidate", list[ConsolidationReport], content=body, headers=_JSON)  # type: ignore[no-any-return]

    def _end_session(self, session: str, request: EndSessionRequest, *, actor: str) -> EpisodeResult:
        path = f"/v1/sessions/{quote(session, safe='')}/end"
        return self._call("POST", path, EpisodeResult, content=_body(request), headers=_JSON)  # type: ignore[no-any-return]

    # -- admission ------------------------------------------------------------

    def _ingest_conversation(self, request: IngestConversationRequest, *, actor: str, progress: bool) -> ScanReport:
        """A conversation file (read and parsed here) or its messages, sent to the service's admission policy."""
        skipped: dict[str, int] = {}
        if isinstance(request.messages, str):
            parsed = load_conversation(request.messages)
            session = request.session if request.session is not None else parsed.session
            request = msgspec.structs.replace(request, messages=parsed.messages, session=session)
            skipped = parsed.skipped
        body = _body(request)
        report = self._call("POST", "/v1/ingest/conversation", ScanReport, content=body, headers=_JSON)
        if skipped:  # messages this side could not read never reached the service: count them too
            keys: set[str] = set(report.skipped) | set(skipped)
            merged = {k: report.skipped.get(k, 0) + skipped.get(k, 0) for k in keys}
            report = msgspec.structs.replace(report, skipped=dict(sorted(merged.items())))
        return report  # type: ignore[no-any-return]

    def _ingest_path(self, what: str, request: IngestPathRequest, actor: str, progress: bool) -> ScanReport:
        """Notes or a source tree under `path` on the service's machine (admin token)."""
        path = f"/v1/ingest/{what}"
        return self._call("POST", path, ScanReport, content=_body(request), headers=_JSON)  # type: ignore[no-any-return]

    def health(self) -> bool:
        try:
            return self._http.get("/health").status_code == 200
        except httpx.HTTPError:
            return False


def ndjson_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """JSON Lines from a byte stream, each ending in b"\\n", split on b"\\n" alone: U+2028, U+2029 and
    U+0085 inside a text are not line ends (httpx's `iter_lines` splits on them)."""
    rest = b""
    for chunk in chunks:
        *lines, rest = (rest + chunk).split(b"\n")
        yield from (line + b"\n" for line in lines)
    if rest:
        yield rest + b"\n"


def _body(request: Request) -> bytes:
    """A request as its JSON body; a value of a wrong type (in process, the keyword methods do not
    check types) is a ValidationError, as the service would answer."""
    try:
        return msgspec.json.encode(request)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{type(request).__name__}: {exc}") from None
