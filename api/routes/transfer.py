"""/v1/export (streamed JSON Lines) and /v1/import."""

from __future__ import annotations

import anyio
from litestar import Request, get, post
from litestar.response import Stream

from agentmem import ValidationError
from agentmem.operations import ScopeRequest
from agentmem.transfer import import_lines, parse_lines
from api.deps import Mem, Who
from api.query import from_query
from api.schemas import ImportReply


@get("/v1/export", summary="Export versions, embeddings and links as JSON Lines")
@from_query(ScopeRequest)
async def export(who: Who, mem: Mem, request: ScopeRequest) -> Stream:
    """Streams a header line, then every version (with its embedding) of the token's projects, then their links."""
    projects = who.scope(request.projects)
    return Stream(mem.export_lines(projects), media_type="application/x-ndjson")


@post("/v1/import", summary="Import a JSON Lines export")  # its body limit: max_import_bytes (api.app)
async def import_(request: Request, who: Who, mem: Mem) -> ImportReply:  # type: ignore[type-arg]
    """Loads an export in one transaction; every version must belong to the token's projects
    and no id may be in use already."""
    who.require("write")
    body = await request.body()
    lines = body.splitlines()

    def run() -> int:
        _, versions, _ = parse_lines(lines, mem.config)
        denied = sorted({v.memory.project for v in versions if not who.allows(v.memory.project)})
        if denied:
            from litestar.exceptions import PermissionDeniedException

            raise PermissionDeniedException(f"this token has no access to project(s) {', '.join(denied)}")
        if not versions:
            raise ValidationError("the body holds no memory lines")
        root = who.can("admin") and who.all_projects  # a project admin's vectors could be planted
        return import_lines(mem.engine, lines, trusted=root, importer=who.name)

    return ImportReply(imported=await anyio.to_thread.run_sync(run))
