"""The operations' requests, declared once: each is a msgspec Struct, like `NewMemory`.

The HTTP route takes it as its body, `MemoryAPI`'s keyword method builds it (so `Memory` and
the `Client` share one signature), the CLI's flags (agentmem.flags) and the MCP tool's arguments
(api.mcp_tools) are made from its fields, and the reference page docs/reference/operations.md is
written from it. A field added here without the keyword method or the docs fails
tests/test_operations.py and tests/test_docs.py.

A field's `_about` may also say how a surface shows it: `flag="--from"` names its CLI flag,
`metavar="FILE"` a positional's, `query="name"` its name in a GET route's query string (else the
flag's), `mcp=False` leaves it out of the MCP tool, `own=True` marks the
caller's own project (the CLI's default is $AGENTMEM_PROJECT, the service's the token's, the MCP
server's the configured one).
"""

from __future__ import annotations

import functools
import operator
from datetime import datetime
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import msgspec

from agentmem.errors import ValidationError
from agentmem.records import Message, NewMemory, TimeRange, Triple


def _about(text: str, **shown: Any) -> msgspec.Meta:
    """A field's description (the OpenAPI schema, the CLI's help, the MCP tool, the docs) and how surfaces show it."""
    return msgspec.Meta(description=text, extra=shown or None)


Positive = Annotated[int, msgspec.Meta(ge=1, le=2**53)]  # an id or a cursor, as JSON numbers keep them


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

    pinned: Annotated[bool, _about("false: unpin (--off on the command line)", flag="--off")] = True


class SweepRequest(Request, frozen=True):
    """Archive what fell below the retention threshold and what expired; `dry_run` only reports."""

    dry_run: Annotated[bool, _about("only report what would be archived")] = False
    limit: Annotated[int | None, _about("archive at most this many (lowest retention first)")] = None
    projects: Annotated[list[str] | None, _about("only these projects (repeat for several)")] = None
    threshold: Annotated[float | None, _about("archive below this retention (default from config)")] = None


class RestoreRequest(Request, frozen=True):
    """Put an archived or expired memory (named in the path, or `memory_id`) back into recall."""

    ttl_days: Annotated[float | None, _about("expire again after this many days (default: never)")] = None


_SET_BY_HOST = {"mcp": False}  # the MCP server fills it in


class Observation(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A raw event from an agent host: what it saw or did, in which session. It is a `NewMemory`
    (the observe operation's items in process) under other names: `tool` is its title, `at` its
    valid_from (`as=`); `observed` and `observation` turn one into the other."""

    content: Annotated[str, _about("what happened or what was noticed")]
    project: Annotated[str | None, _about("the project it belongs to")] = None
    agent: Annotated[str | None, _about("the agent that saw it", **_SET_BY_HOST)] = None
    session: Annotated[str | None, _about("the session it happened in (the MCP server's, if left out)")] = None
    kind: Annotated[str, _about("observation or event")] = "observation"
    tool: Annotated[str | None, _about("the tool or command involved, if any", **{"as": "title"})] = None
    source: Annotated[str, _about("which host recorded it, e.g. mcp", **_SET_BY_HOST)] = "api"
    source_ref: Annotated[str | None, _about("where in the source", **_SET_BY_HOST)] = None
    at: Annotated[datetime | None, _about("when (ISO 8601; default now)", **{"as": "valid_from"}, **_SET_BY_HOST)] = (
        None
    )
    salience: Annotated[float, _about("how much it matters, 0 to 1", **_SET_BY_HOST)] = 0.3
    tier: Annotated[str, _about("the tier it is kept in", **_SET_BY_HOST)] = "working"


class ObserveRequest(Request, frozen=True):
    """Log a batch of raw observations or events in one transaction: all or nothing."""

    observations: Annotated[list[Observation], _about("the observations, in order")]


def _carried() -> dict[str, str]:
    """Each Observation field by the NewMemory field it carries."""
    return {shown(f.type).get("as", f.name): f.name for f in msgspec.structs.fields(Observation)}


def observed(o: Observation) -> NewMemory:
    """The NewMemory an observation is."""
    return NewMemory(**{new: getattr(o, name) for new, name in _carried().items()})


def observation(n: int, item: NewMemory) -> Observation:
    """The Observation a NewMemory is (item `n` of a batch); a field it cannot carry is an error, never dropped."""
    carried, blank = _carried(), NewMemory(content="")
    unsent = sorted(
        f for f in NewMemory.__struct_fields__ if f not in carried and getattr(item, f) != getattr(blank, f)
    )
    if unsent:
        raise ValidationError(f"observation {n}: {', '.join(unsent)} cannot be sent to /v1/observations")
    given = {name: getattr(item, new) for new, name in carried.items() if getattr(item, new) is not None}
    return Observation(**given)


class ReviseRequest(Request, frozen=True):
    """Write a new version of a current memory (named in the path, or `memory_id`); fields left out carry over."""

    content: Annotated[str, _about("the new version's text")]
    reason: Annotated[str, _about("why it changed (kept with the old version)")] = "explicit"
    kind: Annotated[str | None, _about("a new kind")] = None
    tier: Annotated[str | None, _about("a new tier")] = None
    title: Annotated[str | None, _about("a new title")] = None
    key: Annotated[str | None, _about("a new slot, e.g. project.database")] = None
    triple: Annotated[Triple | None, _about("a new (subject, predicate, object) claim")] = None
    salience: Annotated[float | None, _about("a new salience, 0 to 1")] = None
    pinned: Annotated[bool | None, _about("pin or unpin the new version")] = None
    expires_at: Annotated[datetime | None, _about("a new expiry time (ISO 8601)")] = None


class DeleteRequest(Request, frozen=True):
    """The governance delete: erase content by `ids`, by whole `lineages` or by a filter (not both)."""

    reason: Annotated[str, _about("why it must go (kept in the audit log)", flag="--reason")]
    ids: Annotated[list[int], _about("these versions")] = []
    lineages: Annotated[list[int], _about("every version of these lineages (any id of each)")] = []
    project: Annotated[str | None, _about("filter: this project", mcp=False)] = None
    kinds: Annotated[list[str], _about("filter: these kinds", mcp=False)] = []
    created_from: Annotated[
        datetime | None, _about("filter: created at or after (ISO 8601)", flag="--from", mcp=False)
    ] = None
    created_to: Annotated[datetime | None, _about("filter: created before (ISO 8601)", flag="--to", mcp=False)] = None
    scope: Annotated[
        list[str] | None, _about("touch only these projects (the caller's own narrower limit)", mcp=False)
    ] = None
    dry_run: Annotated[bool, _about("only report what would be deleted")] = False


class ConsolidateRequest(Request, frozen=True):
    """Run episodic, semantic and procedural consolidation over each project."""

    projects: Annotated[
        list[str] | None, _about("only these projects (default: all; over HTTP, the token's)", flag="--project")
    ] = None
    passes: Annotated[list[str], _about("only these passes: episodic, semantic, procedural", flag="--pass")] = (
        msgspec.field(default_factory=lambda: ["episodic", "semantic", "procedural"])
    )


class EndSessionRequest(Request, frozen=True):
    """A session (named in the path, or `session`) is over: its observations become one episodic memory."""

    project: Annotated[str | None, _about("the session's project", own=True)] = None


class ScopeRequest(Request, frozen=True):
    """Stats and export: over these projects' memories only (every figure, every line)."""

    projects: Annotated[
        list[str] | None, _about("only these projects (default: all; over HTTP, the token's)", flag="--project")
    ] = None


class ListRequest(Request, frozen=True):
    """A page of versions, newest first; `before_id` is the previous page's `next_cursor`."""

    projects: Annotated[
        list[str] | None, _about("only these projects (default: all; over HTTP, the token's)", flag="--project")
    ] = None
    kinds: Annotated[list[str], _about("only these kinds (empty: all)", flag="--kind")] = []
    tiers: Annotated[list[str], _about("only these tiers (empty: all)", flag="--tier")] = []
    agent: Annotated[str | None, _about("only memories of this agent")] = None
    status: Annotated[
        list[str],
        _about("only these statuses: active, superseded, archived, expired, deleted, or all", flag="--status"),
    ] = msgspec.field(default_factory=lambda: ["active"])
    latest_only: Annotated[
        bool, _about("only each lineage's latest version (false: every version)", flag="--all-versions",
                     query="latest_only"),
    ] = True  # fmt: skip
    before_id: Annotated[Positive | None, _about("the next_cursor of the previous page", flag="--cursor")] = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000), _about("at most this many, 1 to 1000")] = 50

    def statuses(self) -> tuple[str, ...] | None:
        """The statuses asked for; None for every one ("all", or None given in process)."""
        given: Any = self.status
        wanted = [given] if isinstance(given, str) else list(given or ["all"])
        return None if "all" in wanted else tuple(wanted)


class AuditRequest(Request, frozen=True):
    """A page of the audit log, newest first; `before_id` is the previous page's `next_cursor`."""

    projects: Annotated[
        list[str] | None, _about("only these projects (default: all; over HTTP, the token's)", flag="--project")
    ] = None
    actions: Annotated[list[str], _about("only these actions (empty: all)", flag="--action")] = []
    since: Annotated[datetime | None, _about("entries at or after this time (ISO 8601)")] = None
    until: Annotated[datetime | None, _about("entries before this time (ISO 8601)")] = None
    memory_id: Annotated[Positive | None, _about("only entries of this memory's lineage")] = None
    before_id: Annotated[Positive | None, _about("the next_cursor of the previous page", flag="--cursor")] = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000), _about("at most this many, 1 to 1000")] = 50


class RebuildRequest(Request, frozen=True):
    """Rebuild indexes from the store of record (no re-embedding) while recall keeps serving."""

    which: Annotated[
        list[Literal["bm25", "vectors"]], msgspec.Meta(min_length=1), _about("which indexes", flag="--only")
    ] = msgspec.field(default_factory=lambda: ["bm25", "vectors"])


class IngestConversationRequest(Request, frozen=True):
    """A session's messages through the admission policy; tool and system messages are skipped, counted."""

    messages: Annotated[
        list[Message],
        _about("the messages (in process and on the command line: or a JSON / JSON Lines file)", metavar="FILE"),
    ]
    project: Annotated[str | None, _about("the project its memories go to", own=True)] = None
    session: Annotated[str | None, _about("the session id (default: the file's, else its name)")] = None
    include_assistant: Annotated[bool, _about("also propose claims from assistant turns", flag="--assistant")] = False
    dry_run: Annotated[bool, _about("admit nothing; list what would be admitted and why not")] = False
    agent: Annotated[str | None, _about("the agent recorded on its memories")] = None
    use_provider: Annotated[bool, _about("the configured text provider proposes claims too (the policy judges)")] = (
        False
    )


class IngestPathRequest(Request, frozen=True):
    """Notes or a source tree under `path` through the admission policy (over HTTP, a directory on the
    server's machine under one of its ingest_roots, for an admin token)."""

    path: Annotated[str, _about("the directory to read", metavar="DIR")]
    project: Annotated[str | None, _about("the project its memories go to", own=True)] = None
    dry_run: Annotated[bool, _about("admit nothing; list what would be admitted and why not")] = False
    agent: Annotated[str | None, _about("the agent recorded on its memories")] = None


REQUESTS: dict[str, type[Request]] = {
    "observe": ObserveRequest,
    "recall": RecallRequest,
    "search": RecallRequest,
    "context": ContextRequest,
    "pin": PinRequest,
    "sweep": SweepRequest,
    "restore": RestoreRequest,
    "revise": ReviseRequest,
    "delete": DeleteRequest,
    "consolidate": ConsolidateRequest,
    "end_session": EndSessionRequest,
    "rebuild": RebuildRequest,
    "stats": ScopeRequest,
    "export_lines": ScopeRequest,
    "list_versions": ListRequest,
    "audit": AuditRequest,
    "ingest_conversation": IngestConversationRequest,
    "ingest_notes": IngestPathRequest,
    "ingest_code": IngestPathRequest,
}
"""Each converted operation's request; tests/test_operations.py checks every surface against it."""


def arguments(request: Request) -> dict[str, Any]:
    """The request's fields as keyword arguments (for a route that calls the operation)."""
    return msgspec.structs.asdict(request)


def description(annotation: Any) -> str:
    """The description given to a field's type with `_about`, or ""."""
    return next((m.description for m in get_args(annotation) if isinstance(m, msgspec.Meta) and m.description), "")


def shown(annotation: Any) -> dict[str, Any]:
    """How `_about` said surfaces show a field: `flag`, `mcp`, `own` (empty: the usual way)."""
    return next((m.extra for m in get_args(annotation) if isinstance(m, msgspec.Meta) and m.extra), {})


def query(request: Request) -> list[tuple[str, Any]]:
    """The request as the query string of a GET route: each value under its CLI flag's name (`projects`
    is `project`, repeated), the fields left unset left out."""
    out: list[tuple[str, Any]] = []
    for f, name in zip(msgspec.structs.fields(request), query_names(type(request)), strict=True):
        value = getattr(request, f.name)
        value = value.isoformat() if isinstance(value, datetime) else value
        out += [(name, v) for v in value] if isinstance(value, list) else [(name, value)] if value is not None else []
    return out


def query_names(request: type[Request]) -> list[str]:
    """Each field's name in a GET route's query string: the `query` its `_about` gives, else its CLI
    flag's without the dashes."""
    fields = msgspec.structs.fields(request)
    names = [shown(f.type).get("query") or shown(f.type).get("flag") or f.name for f in fields]
    return [n.lstrip("-").replace("-", "_") for n in names]


def plain(annotation: Any) -> tuple[Any, list[Any]]:
    """A field's type without its Annotated layers (inside a union too), and the metadata they held:
    `Annotated[Positive | None, _about(...)]` -> (int | None, [Meta(ge=1, ...), Meta(description=...)])."""
    if get_origin(annotation) is Annotated:
        base, metas = plain(get_args(annotation)[0])
        return base, [*get_args(annotation)[1:], *metas]
    if get_origin(annotation) in (Union, UnionType):  # `Positive | None` is a typing.Union
        parts = [plain(a) for a in get_args(annotation)]
        return functools.reduce(operator.or_, [b for b, _ in parts]), [m for _, ms in parts for m in ms]
    return annotation, []


def default(field: msgspec.structs.FieldInfo) -> Any:
    """A field's default value (a fresh one for a list), or msgspec.NODEFAULT when it is required."""
    return field.default_factory() if field.default_factory is not msgspec.NODEFAULT else field.default
