"""The operations' requests, declared once: each is a msgspec Struct, like `NewMemory`.

The HTTP route takes it as its body, `MemoryAPI`'s keyword method builds it (so `Memory` and
the `Client` share one signature), the CLI and the MCP tool are checked against its fields
(tests/test_operations.py), and the reference page docs/reference/operations.md is written from
it. A field added here without the keyword method, the CLI or the docs fails those tests.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, get_args

import msgspec

from agentmem.records import TimeRange


def _about(text: str) -> msgspec.Meta:
    """A field's description: in the OpenAPI schema, the CLI's help and docs/reference/operations.md."""
    return msgspec.Meta(description=text)


class Request(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """An operation's arguments; encoded without the ones left at their defaults."""


class RecallRequest(Request, frozen=True):
    """Recall (and search): the memories that best answer `query`, ranked by currentness."""

    query: Annotated[str, _about("what to find, in plain words")]
    k: Annotated[int, _about("how many hits, 1 to max_k")] = 10
    project: Annotated[str | None, _about("only this project")] = None
    agent: Annotated[str | None, _about("only memories of this agent")] = None
    tiers: Annotated[list[str], _about("only these tiers (empty: all)")] = []
    kinds: Annotated[list[str], _about("only these kinds (empty: all)")] = []
    as_of: Annotated[datetime | None, _about("answer over every version valid at that time (ISO 8601)")] = None
    include_history: Annotated[bool, _about("each hit's older versions, in `history` (search only)")] = False
    include_superseded: Annotated[bool, _about("rank superseded versions in too, each under its successor")] = False
    time_range: Annotated[
        TimeRange | str | None,
        _about("boost memories from then: {start, end}, 'START/END' in ISO 8601, or 'last week', 'in March'"),
    ] = None


class ContextRequest(Request, frozen=True):
    """A prompt-ready working set: the best current memories that fit a token budget."""

    query: Annotated[str, _about("the task or question the context is for")]
    project: Annotated[str | None, _about("only this project")] = None
    agent: Annotated[str | None, _about("only memories of this agent")] = None
    tiers: Annotated[list[str], _about("only these tiers (empty: all)")] = []
    kinds: Annotated[list[str], _about("only these kinds (empty: all)")] = []
    max_memories: Annotated[int, _about("at most this many memories, 1 to 100")] = 10
    token_budget: Annotated[int, _about("16 to 32000 tokens, about 4 characters a token")] = 1000


class PinRequest(Request, frozen=True):
    """Exempt a memory (named in the path, or `memory_id` in process) from the sweep, or no longer."""

    pinned: Annotated[bool, _about("false: no longer pinned")] = True


class SweepRequest(Request, frozen=True):
    """Archive what fell below the retention threshold and what expired; `dry_run` only reports."""

    dry_run: Annotated[bool, _about("only report what would be archived")] = False
    limit: Annotated[int | None, _about("archive at most this many (lowest retention first)")] = None
    projects: Annotated[list[str] | None, _about("only these projects (repeat for several)")] = None
    threshold: Annotated[float | None, _about("archive below this retention (default from config)")] = None


class RestoreRequest(Request, frozen=True):
    """Put an archived or expired memory (named in the path, or `memory_id`) back into recall."""

    ttl_days: Annotated[float | None, _about("expire again after this many days (default: never)")] = None


REQUESTS: dict[str, type[Request]] = {
    "recall": RecallRequest,
    "search": RecallRequest,
    "context": ContextRequest,
    "pin": PinRequest,
    "sweep": SweepRequest,
    "restore": RestoreRequest,
}
"""Each converted operation's request; tests/test_operations.py checks every surface against it."""


def arguments(request: Request) -> dict[str, Any]:
    """The request's fields as keyword arguments (for a route that calls the operation)."""
    return msgspec.structs.asdict(request)


def description(annotation: Any) -> str:
    """The description given to a field's type with `_about`, or ""."""
    return next((m.description or "" for m in get_args(annotation) if isinstance(m, msgspec.Meta)), "")
