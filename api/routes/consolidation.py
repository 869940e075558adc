"""Consolidation: end a session, run the passes, and trace provenance."""

from __future__ import annotations

import msgspec
from anyio.to_thread import run_sync as run
from litestar import get, post
from litestar.params import FromPath, JSONBody

from agentmem.consolidate import ConsolidationReport, EpisodeResult, Provenance
from agentmem.operations import ConsolidateRequest, EndSessionRequest, arguments
from api.deps import Mem, Who, visible


@post("/v1/sessions/{session:str}/end", status_code=200, summary="End a session: its observations become an episode")
async def end_session(session: FromPath[str], data: JSONBody[EndSessionRequest], who: Who, mem: Mem) -> EpisodeResult:
    """Creates the session's episodic memory (or a new version of it when more was observed);
    404 when the project has no observations for that session."""
    who.require("write")
    request = msgspec.structs.replace(data, project=who.project(data.project))
    return await run(lambda: mem.end_session(session, **arguments(request), actor=who.name))


@post("/v1/consolidate", status_code=200, summary="Run episodic, semantic and procedural consolidation")
async def consolidate(data: JSONBody[ConsolidateRequest], who: Who, mem: Mem) -> list[ConsolidationReport]:
    """One report per project: created, reinforced, unchanged, skipped and failed counts per pass
    (also written to the audit log)."""
    who.require("write")
    request = msgspec.structs.replace(data, projects=who.scope(data.projects))
    return await run(lambda: mem.consolidate(**arguments(request), actor=who.name))


@get("/v1/memories/{memory_id:int}/provenance", sync_to_thread=True, summary="Evidence of a memory, and what it built")
def provenance(memory_id: FromPath[int], who: Who, mem: Mem) -> Provenance:
    visible(mem, who, memory_id)
    p = mem.provenance(memory_id)
    return Provenance(
        memory_id=p.memory_id,
        evidence=[m for m in p.evidence if who.allows(m.project)],
        sessions=p.sessions,
        derived=[m for m in p.derived if who.allows(m.project)],
    )
