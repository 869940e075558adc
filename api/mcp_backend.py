"""What the MCP server talks to -- a running agentmem service or a local data directory, both a MemoryAPI --
and who it acts as.

Identity (project, agent, session) comes from configuration -- flags or environment -- never from a
model's tool arguments alone: a tool may name a project only if the configuration allows it.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from agentmem.contract import MemoryAPI
from agentmem.errors import AccessDeniedError, NotFoundError, ValidationError
from agentmem.records import MemoryVersion


class McpSettings(msgspec.Struct, frozen=True, kw_only=True):
    """Who the MCP server acts as and where memories live."""

    project: str  # every tool call uses it unless the call names another allowed project
    projects: tuple[str, ...]  # the projects a tool call may name (always includes `project`)
    agent: str | None = None  # recorded on every memory and observation written through MCP
    session: str  # observations go to this session unless a call names one; end_session ends it
    url: str | None = None  # a running service; None opens `data_dir` in this process
    token: str | None = None
    data_dir: str = ""
    timeout: float = 30.0  # seconds for one call to the service (connecting: at most 3)

    @property
    def actor(self) -> str:
        return f"mcp:{self.agent or 'agent'}"


def load_settings(
    *,
    project: str | None = None,
    allow: Sequence[str] = (),
    agent: str | None = None,
    session: str | None = None,
    url: str | None = None,
    token: str | None = None,
    data_dir: str | None = None,
) -> McpSettings:
    """Flags first, then AGENTMEM_PROJECT, AGENTMEM_MCP_PROJECTS (comma-separated), AGENTMEM_AGENT,
    AGENTMEM_SESSION, AGENTMEM_URL, AGENTMEM_TOKEN, AGENTMEM_DATA_DIR, AGENTMEM_TIMEOUT."""
    from agentmem.cli import default_data_dir

    env = os.environ
    main = project or env.get("AGENTMEM_PROJECT") or "default"
    extra = list(allow) or [p.strip() for p in env.get("AGENTMEM_MCP_PROJECTS", "").split(",")]
    try:
        timeout = float(env.get("AGENTMEM_TIMEOUT", "30"))
    except ValueError:
        raise ValidationError(f"AGENTMEM_TIMEOUT: expected seconds, not {env['AGENTMEM_TIMEOUT']!r}") from None
    return McpSettings(
        project=main,
        projects=tuple(dict.fromkeys([main, *(p for p in extra if p)])),
        agent=agent or env.get("AGENTMEM_AGENT") or None,
        session=session or env.get("AGENTMEM_SESSION") or f"mcp-{uuid.uuid4().hex[:12]}",
        url=url or env.get("AGENTMEM_URL") or None,
        token=token or env.get("AGENTMEM_TOKEN") or None,
        data_dir=str(data_dir or default_data_dir()),
        timeout=timeout if timeout > 0 else 30.0,
    )


def open_memory(settings: McpSettings) -> MemoryAPI:
    """A running service through agentmem.client.Client (its token decides what is allowed), or the
    data directory opened in this process (its one owner while the MCP server runs)."""
    if settings.url:
        import httpx

        from agentmem.client import Client

        return Client(settings.url, token=settings.token, timeout=httpx.Timeout(settings.timeout, connect=3.0))
    from agentmem.memory import Memory
    from indexes.onnx_embed import default_embedder

    return Memory(Path(settings.data_dir), embedder=default_embedder())


class Scoped:
    """The MCP tools' one adapter over a MemoryAPI (a Client or a Memory): opened once, on first use (a
    local model takes seconds to load), limited to the allowed projects.

    `opener` is for tests; by default `open_memory(settings)`.
    """

    def __init__(self, settings: McpSettings, opener: Callable[[], MemoryAPI] | None = None) -> None:
        self.settings = settings
        self._opener = opener or (lambda: open_memory(settings))
        self._mem: MemoryAPI | None = None
        self._lock = threading.Lock()

    def open(self) -> MemoryAPI:
        with self._lock:
            if self._mem is None:
                self._mem = self._opener()
            return self._mem

    def preload(self) -> None:
        """Open in the background so the first tool call does not wait for the whole model load."""

        def run() -> None:
            try:
                self.open()
            except Exception:  # the first tool call opens again and reports the error
                pass

        threading.Thread(target=run, name="agentmem-mcp-open", daemon=True).start()

    def project(self, requested: str | None) -> str:
        """The configured project, or a requested one the configuration allows; never another."""
        if requested is None or requested == "":
            return self.settings.project
        if requested not in self.settings.projects:
            raise AccessDeniedError(
                f"project {requested!r} is not allowed for this MCP server "
                f"(allowed: {', '.join(self.settings.projects)}); omit `project` to use the configured one"
            )
        return requested

    def visible(self, memory_id: int) -> MemoryVersion:
        """One version, only if it belongs to an allowed project (else: not found, as the HTTP API does)."""
        m = self.open().get(memory_id)
        if m.project not in self.settings.projects:
            raise NotFoundError(f"no memory with id {memory_id}")
        return m

    def close(self) -> None:
        with self._lock:
            if self._mem is not None:
                self._mem.close()
                self._mem = None


def when(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def memory_view(m: MemoryVersion) -> dict[str, Any]:
    """The fields of a version a model needs, without the bookkeeping."""
    view: dict[str, Any] = {
        "id": m.id, "lineage_id": m.lineage_id, "version": m.version, "current": m.is_latest and m.status == "active",
        "status": m.status, "content": m.content, "kind": m.kind, "tier": m.tier, "project": m.project,
        "key": m.key, "title": m.title, "agent": m.agent, "session": m.session, "confidence": m.confidence,
        "valid_from": when(m.valid_from), "valid_to": when(m.valid_to), "expires_at": when(m.expires_at),
        "superseded_by": m.superseded_by, "supersede_reason": m.supersede_reason,
    }  # fmt: skip
    return {k: v for k, v in view.items() if v is not None}
