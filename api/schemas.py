"""Request and reply Structs of the HTTP API that the core does not already define."""

from __future__ import annotations

from datetime import datetime

import msgspec

from agentmem.audit import AuditEntry
from agentmem.records import MemoryVersion


class ObserveReply(msgspec.Struct, frozen=True, kw_only=True):
    ids: list[int]  # kept for older clients: the ids of `memories`
    memories: list[MemoryVersion] = []  # the versions created, in request order


class Page(msgspec.Struct, frozen=True):
    items: list[MemoryVersion]
    next_cursor: int | None


class ErrorDetail(msgspec.Struct, frozen=True):
    code: str
    message: str
    details: list[dict[str, str]] | None = None


class ErrorReply(msgspec.Struct, frozen=True):
    """Every error: a machine-readable code and a sentence for people."""

    error: ErrorDetail


class ImportReply(msgspec.Struct, frozen=True):
    imported: int


class RebuildStatus(msgspec.Struct, frozen=True, kw_only=True):
    state: str  # idle | running | done | failed
    started_at: datetime | None = None
    finished_at: datetime | None = None
    message: str | None = None


class AuditPage(msgspec.Struct, frozen=True):
    items: list[AuditEntry]
    next_cursor: int | None
