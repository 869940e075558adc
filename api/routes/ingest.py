"""/v1/ingest: conversations, notes and source trees through the admission policy."""

from __future__ import annotations

from anyio.to_thread import run_sync as run
from litestar import post
from litestar.params import JSONBody

from agentmem.admission import ScanReport
from api.deps import Mem, Who
from api.schemas import IngestConversationRequest, IngestPathRequest


@post("/v1/ingest/conversation", status_code=200, summary="Admit memories from a conversation")
async def conversation(data: JSONBody[IngestConversationRequest], who: Who, mem: Mem) -> ScanReport:
    """Proposes candidate claims from the user (and, with `include_assistant`, assistant) turns;
    the admission policy admits or rejects each with a reason. Admitted ones go through remember
    (repeats reinforce, changes supersede) with the session and message as provenance. `dry_run`
    admits nothing and lists what would be admitted and what was rejected. Every scan is audited."""
    who.require("write")
    project = who.project(data.project)
    return await run(
        lambda: mem.ingest_conversation(
            data.messages,
            project=project,
            session=data.session,
            include_assistant=data.include_assistant,
            dry_run=data.dry_run,
            agent=data.agent,
            actor=who.name,
            use_provider=data.use_provider,
        )
    )


@post("/v1/ingest/notes", status_code=200, summary="Admit memories from a directory of notes (admin)")
async def notes(data: JSONBody[IngestPathRequest], who: Who, mem: Mem) -> ScanReport:
    """Reads Markdown notes under `path` *on the server* (hence admin only): headings and the
    statements under them, through the admission policy, with `file:line` provenance."""
    who.require("admin")
    project = who.project(data.project)
    return await run(
        lambda: mem.ingest_notes(data.path, project=project, dry_run=data.dry_run, agent=data.agent, actor=who.name)
    )


@post("/v1/ingest/code", status_code=200, summary="Admit memories from a source tree (admin)")
async def code(data: JSONBody[IngestPathRequest], who: Who, mem: Mem) -> ScanReport:
    """Reads the source tree under `path` *on the server* (hence admin only): declarations and their
    documentation, never function bodies; dependency trees, build output, caches, lock files, VCS
    folders and binary files are skipped and counted."""
    who.require("admin")
    project = who.project(data.project)
    return await run(
        lambda: mem.ingest_code(data.path, project=project, dry_run=data.dry_run, agent=data.agent, actor=who.name)
    )
