"""`agentmem mcp`: agentmem's tools and resources for any Model Context Protocol host, over stdio or HTTP.

Tools: remember, recall, context, history, forget, observe, end_session. Resources:
agentmem://memories/{id} and agentmem://memories/{id}/history. Project and agent come from the
configuration (see api.mcp_backend); every agentmem error comes back as an MCP error result.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from inspect import Parameter
from typing import Annotated, Any, TypeVar

import msgspec
from pydantic import Field

from agentmem.contract import MemoryAPI
from agentmem.errors import (
    AccessDeniedError,
    AgentMemError,
    ServiceUnavailableError,
    StoreLockedError,
    ValidationError,
)
from agentmem.operations import (
    ContextRequest,
    DeleteRequest,
    EndSessionRequest,
    Observation,
    RecallRequest,
    arguments,
    observed,
)
from agentmem.records import NewMemory
from api.mcp_backend import McpSettings, Scoped, memory_view
from api.mcp_tools import add_tool

T = TypeVar("T")
R = TypeVar("R", bound=msgspec.Struct)

INSTRUCTIONS = """\
agentmem is your long-term memory for this project. It keeps one current version of each fact and the
history of what it replaced.
- At the start of a task, call `context` with what the task is about to load what is already known.
- When you learn something durable (a decision, a preference, a config value, a lesson), call `remember`.
  Give a stable `key` (e.g. "db.engine") to anything that may change later: remembering the same key
  again replaces the old value, and the old one stays in `history`.
- Use `recall` to search; `as_of` asks what was true at a past time.
- `observe` logs raw events of this session; `end_session` turns them into one episodic memory.
- `forget` erases content for good (governance delete, needs a reason); prefer superseding with `remember`.
"""

ProjectArg = Annotated[
    str | None,
    Field(description="Leave empty: the configured project is used. Only projects this server allows are accepted."),
]


REMEMBER = """Store a durable memory. agentmem decides whether it is new (created), says the same as a current
memory (reinforced), or replaces one (superseded: same key, same subject and predicate, or the same
statement with a new value). The reply says which, and lists near duplicates worth checking."""
RECALL = """Search memories, best first: current ones only (superseded versions never come back unless
`include_superseded`), or with `as_of` the versions that were valid at that time. `has_history` marks
memories that replaced older versions; read them with `history` (or ask for them with `include_history`).
A hit with `older_than` states the same thing as the newer hit it names, with an older value
(`older_reason` says what judged so): prefer the newer one. A claim (one sentence of an observed turn)
carries `stated_in`, the turn it was said in. `time_range` ('last week', 'in March', or an ISO 8601
interval) ranks memories from then higher and never hides others; `window` says which time window was
understood, if any."""
CONTEXT = """A bounded, prompt-ready working set: the current memories most relevant to `query`, one line each
with kind and since when it holds, within `token_budget` (about 4 characters a token). Call it at the
start of a task."""
FORGET = """Erase memories' content for good (governance delete: secrets, personal data, things the user asked
to forget): `ids` erases those versions, `lineages` every version of each memory named. A tombstone and an
audit record remain. To correct or update a memory, use `remember` with the same key instead: that keeps
history."""
OBSERVE = """Log a raw observation of this session (not a durable fact: use `remember` for those). Observations
never replace memories; `end_session` turns a session's observations into one episodic memory."""
END_SESSION = """The session is over: its observations become one episodic memory (created, or updated if the
session already had one). Fails with 'not found' if the session logged no observations."""


def _fail(exc: AgentMemError, settings: McpSettings) -> Exception:
    from mcp.server.mcpserver.exceptions import ToolError

    if isinstance(exc, ServiceUnavailableError):
        return ToolError(f"{exc}. Is `agentmem serve` running there? (AGENTMEM_URL={settings.url})")
    if isinstance(exc, StoreLockedError):
        return ToolError(f"{exc}. Another process owns the data directory: set AGENTMEM_URL to use its service.")
    return ToolError(f"{exc.label}: {exc}")


def build_server(settings: McpSettings, opener: Callable[[], MemoryAPI] | None = None) -> tuple[Any, Scoped]:
    """The MCPServer with agentmem's tools and resources, and the memory it uses (not opened yet).

    `opener` is for tests (an in-process Memory, or a Client over a test transport)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ResourceError
    from mcp.types import ToolAnnotations

    scoped = Scoped(settings, opener)
    actor = settings.actor
    server: Any = MCPServer("agentmem", instructions=INSTRUCTIONS, log_level="WARNING")

    def own_project(request: R) -> R:
        """The request in the configured project, or the one it names if this server allows it."""
        return msgspec.structs.replace(request, project=scoped.project(getattr(request, "project", None)))

    def call(fn: Callable[[], T]) -> T:
        try:
            return fn()
        except AgentMemError as exc:
            raise _fail(exc, settings) from exc

    def remember(new: NewMemory) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            item = msgspec.structs.replace(own_project(new), agent=settings.agent, session=settings.session,
                                           source="mcp")  # fmt: skip
            r = scoped.open().remember(item, actor=actor)
            reply: dict[str, Any] = {"outcome": r.outcome, "memory": memory_view(r.memory)}
            if r.superseded_id is not None:
                reply |= {"superseded_id": r.superseded_id, "reason": r.reason}
            if r.also_superseded:
                reply["also_superseded"] = r.also_superseded
            if r.near_duplicates:
                reply["near_duplicates"] = [{"id": d.id, "content": d.content} for d in r.near_duplicates]
            return reply

        return call(run)

    add_tool(server, NewMemory, remember, name="remember", description=REMEMBER,
             annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=True))  # fmt: skip

    def recall(request: RecallRequest) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            found = scoped.open().search(**arguments(own_project(request)))
            out = []
            for h in found.hits:
                item = {"score": round(h.score, 4), "has_history": h.has_history, **memory_view(h.memory)}
                if h.older_than is not None:
                    item["older_than"], item["older_reason"] = h.older_than, h.older_reason
                if h.stated_in is not None:  # a claim: the turn it was said in
                    item["stated_in"] = memory_view(h.stated_in)
                out.append(item)
            reply: dict[str, Any] = {"hits": out}
            if found.window is not None:
                reply["window"] = msgspec.to_builtins(found.window)
            if found.history:
                reply["history"] = {k: [memory_view(v) for v in vs] for k, vs in found.history.items()}
            return reply

        return call(run)

    add_tool(server, RecallRequest, recall, name="recall", annotations=ToolAnnotations(read_only_hint=True),
             description=RECALL)  # fmt: skip

    def context(request: ContextRequest) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            c = scoped.open().context(**arguments(own_project(request)))
            return {"text": c.text or "(no relevant memories)", "memory_ids": c.memory_ids, "tokens": c.tokens}

        return call(run)

    add_tool(server, ContextRequest, context, name="context", annotations=ToolAnnotations(read_only_hint=True),
             description=CONTEXT)  # fmt: skip

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def history(
        memory_id: Annotated[int, Field(ge=1, description="Any version's id in the lineage.")],
    ) -> dict[str, Any]:
        """Every version of a memory, oldest first: what it said, when each version held (valid_from ..
        valid_to), and what replaced it and why."""

        def run() -> dict[str, Any]:
            scoped.visible(memory_id)
            return {"versions": [memory_view(v) for v in scoped.open().history(memory_id)]}

        return call(run)

    def forget(request: DeleteRequest) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            for memory_id in [*request.ids, *request.lineages]:
                scoped.visible(memory_id)
            try:
                within = msgspec.structs.replace(request, scope=list(settings.projects))
                r = scoped.open().delete(**arguments(within), actor=actor)
            except AccessDeniedError as exc:
                raise AccessDeniedError(
                    f"{exc} (forget is a governance delete: over HTTP it needs an admin token)"
                ) from None
            return {"deleted_versions": r.versions, "ids": r.ids, "dry_run": r.dry_run}

        return call(run)

    add_tool(server, DeleteRequest, forget, name="forget", description=FORGET,
             annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=True))  # fmt: skip

    def observe(o: Observation) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            item = msgspec.structs.replace(observed(own_project(o)), agent=settings.agent, source="mcp",
                                           session=o.session or settings.session)  # fmt: skip
            return {"id": scoped.open().observe([item])[0].id, "session": item.session}

        return call(run)

    add_tool(server, Observation, observe, name="observe", description=OBSERVE,
             annotations=ToolAnnotations(destructive_hint=False))  # fmt: skip

    def end_session(request: EndSessionRequest, session: str | None) -> dict[str, Any]:
        def run() -> dict[str, Any]:
            e = scoped.open().end_session(session or settings.session, **arguments(own_project(request)), actor=actor)
            return {"outcome": e.outcome, **({"memory": memory_view(e.memory)} if e.memory else {})}

        return call(run)

    session = Annotated[str | None, Field(description="Leave empty for this server's session.")]
    add_tool(server, EndSessionRequest, end_session, name="end_session", description=END_SESSION,
             annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=True),
             own=[Parameter("session", Parameter.KEYWORD_ONLY, default=None, annotation=session)])  # fmt: skip

    def resource_call(fn: Callable[[], T]) -> T:
        try:
            return fn()
        except AgentMemError as exc:
            raise ResourceError(str(_fail(exc, settings))) from exc

    def parse_id(memory_id: str) -> int:
        if not memory_id.isdigit() or int(memory_id) < 1:
            message = f"memory id must be a positive whole number, not {memory_id!r}"
            raise ResourceError(f"{ValidationError.label}: {message}")
        return int(memory_id)

    @server.resource("agentmem://memories/{memory_id}", mime_type="application/json")
    def memory_resource(memory_id: str) -> str:
        """One version of a memory, as JSON."""
        return json.dumps(resource_call(lambda: memory_view(scoped.visible(parse_id(memory_id)))))

    @server.resource("agentmem://memories/{memory_id}/history", mime_type="application/json")
    def history_resource(memory_id: str) -> str:
        """Every version of a memory's lineage, oldest first, as JSON."""

        def run() -> list[dict[str, Any]]:
            scoped.visible(parse_id(memory_id))
            return [memory_view(v) for v in scoped.open().history(int(memory_id))]

        return json.dumps(resource_call(run))

    return server, scoped
