"""A small typed client for the agentmem HTTP service; it mirrors the Memory methods.

>>> with Client("http://127.0.0.1:8420", token="...") as c:      # doctest: +SKIP
...     c.remember(NewMemory(content="We use Postgres", project="shop")).outcome
'created'
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
import msgspec

from agentmem.admission.conversation import load as load_conversation
from agentmem.admission.scan import ScanReport
from agentmem.audit import AuditEntry
from agentmem.consolidate import ConsolidationReport, EpisodeResult, Provenance
from agentmem.errors import ServiceUnavailableError, for_reply
from agentmem.lifecycle import DeleteReport, SweepReport
from agentmem.records import Hit, MemoryVersion, NewMemory, RememberResult, Stats
from agentmem.retention import Retention
from indexes.sync import Consistency

T = TypeVar("T")


class _Hits(msgspec.Struct):
    hits: list[Hit]


class _Page(msgspec.Struct):
    items: list[MemoryVersion]
    next_cursor: int | None


class _AuditPage(msgspec.Struct):
    items: list[AuditEntry]
    next_cursor: int | None


class _Rebuild(msgspec.Struct):
    state: str
    message: str | None = None


class Client:
    """Talks to a running agentmem service; raises the same AgentMemError tree as the core."""

    def __init__(self, url: str, *, token: str | None = None, timeout: float | httpx.Timeout = 60.0) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=timeout)

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

    # -- the Memory surface ------------------------------------------------

    def remember(self, item: NewMemory | str | None = None, /, **fields: Any) -> RememberResult:
        if not isinstance(item, NewMemory):
            if item is not None:
                fields["content"] = item
            item = NewMemory(**fields)
        body = {k: v for k, v in self._json(item).items() if v is not None and v != []}
        return self._call("POST", "/v1/memories", RememberResult, json=body)  # type: ignore[no-any-return]

    def observe(self, observations: Sequence[dict[str, Any]]) -> list[int]:
        return self._call("POST", "/v1/observations", json={"observations": list(observations)})["ids"]  # type: ignore[no-any-return]

    def get(self, memory_id: int) -> MemoryVersion:
        return self._call("GET", f"/v1/memories/{int(memory_id)}", MemoryVersion)  # type: ignore[no-any-return]

    def history(self, memory_id: int) -> list[MemoryVersion]:
        return self._call("GET", f"/v1/memories/{int(memory_id)}/history", list[MemoryVersion])  # type: ignore[no-any-return]

    def revise(self, memory_id: int, content: str, *, reason: str = "explicit", **changes: Any) -> RememberResult:
        body = {"content": content, "reason": reason, **self._json(changes)}
        return self._call("POST", f"/v1/memories/{int(memory_id)}/versions", RememberResult, json=body)  # type: ignore[no-any-return]

    def list_versions(
        self, *, before_id: int | None = None, limit: int = 50, **filters: Any
    ) -> tuple[list[MemoryVersion], int | None]:
        params = {k: v for k, v in {**filters, "cursor": before_id, "limit": limit}.items() if v is not None}
        page = self._call("GET", "/v1/memories", _Page, params=params)
        return page.items, page.next_cursor

    def recall(
        self,
        query: str,
        *,
        project: str | None = None,
        k: int = 10,
        agent: str | None = None,
        tiers: Sequence[str] = (),
        kinds: Sequence[str] = (),
        as_of: datetime | str | None = None,
    ) -> list[Hit]:
        body = {"query": query, "k": k, "project": project, "agent": agent, "tiers": list(tiers), "kinds": list(kinds)}
        if as_of is not None:
            body["as_of"] = as_of.isoformat() if isinstance(as_of, datetime) else as_of
        body = {key: v for key, v in body.items() if v is not None}
        return self._call("POST", "/v1/recall", _Hits, json=body).hits  # type: ignore[no-any-return]

    def context(self, query: str, **fields: Any) -> dict[str, Any]:
        return self._call("POST", "/v1/context", json={"query": query, **fields})  # type: ignore[no-any-return]

    def stats(self) -> Stats:
        return self._call("GET", "/v1/stats", Stats)  # type: ignore[no-any-return]

    def check(self) -> Consistency:
        return self._call("POST", "/v1/check", Consistency)  # type: ignore[no-any-return]

    def rebuild(self, which: Sequence[str] = ("bm25", "vectors"), *, poll: float = 0.5) -> Consistency:
        """Start an online rebuild and wait for it (the service rebuilds both indexes)."""
        self._call("POST", "/v1/rebuild")
        while (status := self._call("GET", "/v1/rebuild", _Rebuild)).state == "running":
            time.sleep(poll)
        if status.state != "done":
            raise ServiceUnavailableError(f"rebuild {status.state}: {status.message}")
        return self.check()

    # -- lifecycle ------------------------------------------------------------

    def retention(self, memory_id: int) -> Retention:
        return self._call("GET", f"/v1/memories/{int(memory_id)}/retention", Retention)  # type: ignore[no-any-return]

    def sweep(self, **options: Any) -> SweepReport:
        body = {k: v for k, v in options.items() if v is not None}
        return self._call("POST", "/v1/sweep", SweepReport, json=body)  # type: ignore[no-any-return]

    def restore(self, memory_id: int, *, ttl_days: float | None = None) -> MemoryVersion:
        body = {"ttl_days": ttl_days} if ttl_days is not None else {}
        return self._call("POST", f"/v1/memories/{int(memory_id)}/restore", MemoryVersion, json=body)  # type: ignore[no-any-return]

    def pin(self, memory_id: int, pinned: bool = True) -> MemoryVersion:
        return self._call("POST", f"/v1/memories/{int(memory_id)}/pin", MemoryVersion, json={"pinned": pinned})  # type: ignore[no-any-return]

    def delete(self, *, reason: str, **how: Any) -> DeleteReport:
        body = {"reason": reason, **{k: v for k, v in how.items() if v not in (None, [], ())}}
        return self._call("POST", "/v1/delete", DeleteReport, json=body)  # type: ignore[no-any-return]

    def audit(
        self,
        *,
        projects: Sequence[str] | None = None,
        actions: Sequence[str] = (),
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        memory_id: int | None = None,
        before_id: int | None = None,
        limit: int = 50,
    ) -> tuple[list[AuditEntry], int | None]:
        params: list[tuple[str, str | int | float | bool | None]] = [("project", p) for p in projects or ()]
        params += [("action", a) for a in actions]
        for name, value in (("since", since), ("until", until), ("memory_id", memory_id), ("cursor", before_id)):
            if value is not None:
                params.append((name, value.isoformat() if isinstance(value, datetime) else value))
        params.append(("limit", limit))
        page = self._call("GET", "/v1/audit", _AuditPage, params=params)
        return page.items, page.next_cursor

    # -- consolidation --------------------------------------------------------

    def end_session(self, session: str, *, project: str | None = None) -> EpisodeResult:
        path = f"/v1/sessions/{quote(session, safe='')}/end"
        return self._call("POST", path, EpisodeResult, json={"project": project})  # type: ignore[no-any-return]

    def consolidate(
        self, projects: Sequence[str] | None = None, *, passes: Sequence[str] = ("episodic", "semantic", "procedural")
    ) -> list[ConsolidationReport]:
        body = {"projects": list(projects) if projects else None, "passes": list(passes)}
        return self._call("POST", "/v1/consolidate", list[ConsolidationReport], json=body)  # type: ignore[no-any-return]

    def provenance(self, memory_id: int) -> Provenance:
        return self._call("GET", f"/v1/memories/{int(memory_id)}/provenance", Provenance)  # type: ignore[no-any-return]

    def export_lines(self, projects: Sequence[str] | None = None) -> Iterator[bytes]:
        params: list[tuple[str, str | int | float | bool | None]] = [("project", p) for p in projects or ()]
        with self._http.stream("GET", "/v1/export", params=params) as r:
            if r.status_code >= 400:
                r.read()
                self._call("GET", "/v1/export", params=params)  # raises the mapped error
            for line in r.iter_lines():
                yield line.encode() + b"\n"

    def import_lines(self, lines: Iterable[bytes | str]) -> int:
        body = b"".join((x.encode() if isinstance(x, str) else x).rstrip(b"\n") + b"\n" for x in lines)
        return self._call("POST", "/v1/import", content=body, headers={"content-type": "application/x-ndjson"})[
            "imported"
        ]  # type: ignore[no-any-return]

    # -- admission ------------------------------------------------------------

    def ingest_conversation(
        self,
        conversation: str | Path | Sequence[Any],
        *,
        project: str | None = None,
        session: str | None = None,
        include_assistant: bool = False,
        dry_run: bool = False,
        agent: str | None = None,
        use_provider: bool = False,
        **_local: Any,
    ) -> ScanReport:
        """A conversation file (read and parsed here) or its messages, sent to the service's admission policy."""
        skipped: dict[str, int] = {}
        if isinstance(conversation, str | Path):
            parsed = load_conversation(conversation)
            messages: list[Any] = [msgspec.to_builtins(m) for m in parsed.messages]
            session, skipped = session or parsed.session, parsed.skipped
        else:
            messages = [msgspec.to_builtins(m) for m in conversation]
        body = {"messages": messages, "project": project, "session": session,
                "include_assistant": include_assistant, "dry_run": dry_run, "agent": agent,
                "use_provider": use_provider}  # fmt: skip
        report = self._call("POST", "/v1/ingest/conversation", ScanReport, json=body)
        if skipped:  # messages this side could not read never reached the service: count them too
            keys: set[str] = set(report.skipped) | set(skipped)
            merged = {k: report.skipped.get(k, 0) + skipped.get(k, 0) for k in keys}
            report = msgspec.structs.replace(report, skipped=dict(sorted(merged.items())))
        return report  # type: ignore[no-any-return]

    def ingest_notes(self, path: str | Path, **options: Any) -> ScanReport:
        """Notes under `path` on the service's machine (admin token)."""
        return self._ingest_path("notes", path, options)

    def ingest_code(self, path: str | Path, **options: Any) -> ScanReport:
        """A source tree under `path` on the service's machine (admin token)."""
        return self._ingest_path("code", path, options)

    def _ingest_path(self, what: str, path: str | Path, options: dict[str, Any]) -> ScanReport:
        body: dict[str, Any] = {k: options[k] for k in ("project", "dry_run", "agent") if k in options}
        body["path"] = str(path)
        return self._call("POST", f"/v1/ingest/{what}", ScanReport, json=body)  # type: ignore[no-any-return]

    def health(self) -> bool:
        try:
            return self._http.get("/health").status_code == 200
        except httpx.HTTPError:
            return False
