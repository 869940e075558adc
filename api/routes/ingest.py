"""/v1/ingest: conversations, notes and source trees through the admission policy.

Notes and source trees are read from the server's disk, so only from under a configured
`ingest_roots` entry whose projects include the one written to: the path is resolved (`..` and
links followed) before it is compared, and links inside the tree that leave it are skipped by the
walk (agentmem.admission.files). With no roots configured these two routes are off.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
from anyio.to_thread import run_sync as run
from litestar import post
from litestar.datastructures import State
from litestar.params import JSONBody

from agentmem import validate
from agentmem.admission import ScanReport
from agentmem.errors import AccessDeniedError, ValidationError
from agentmem.operations import IngestConversationRequest, IngestPathRequest, arguments
from api.auth import Principal
from api.deps import Mem, Who
from api.settings import Settings


def _readable(settings: Settings, who: Principal, request: IngestPathRequest) -> IngestPathRequest:
    """The request with its directory resolved and its project, when `path` lies under a root that may
    feed that project."""
    who.require("admin")
    path, project = request.path, who.project(request.project)
    if not settings.ingest_roots:
        raise AccessDeniedError("reading the server's disk is off: configure ingest_roots to allow some directories")
    validate.path(path)
    if not Path(path).is_absolute():
        raise ValidationError(f"path must be absolute (under one of the configured ingest_roots): {path!r}")
    try:
        resolved = Path(path).resolve()  # a missing directory is the walk's to report (and audit)
    except (OSError, RuntimeError):  # a link loop
        raise ValidationError(f"cannot resolve {path}") from None
    for root in settings.ingest_roots:
        if resolved.is_relative_to(Path(root.path).resolve()) and root.feeds(project):
            return msgspec.structs.replace(request, path=str(resolved), project=project)
    raise AccessDeniedError(f"{path} is not under an ingest root of project {project!r}")


@post("/v1/ingest/conversation", status_code=200, summary="Admit memories from a conversation")
async def conversation(data: JSONBody[IngestConversationRequest], who: Who, mem: Mem, state: State) -> ScanReport:
    """Proposes candidate claims from the user (and, with `include_assistant`, assistant) turns;
    the admission policy admits or rejects each with a reason. Admitted ones go through remember
    (repeats reinforce, changes supersede) with the session and message as provenance. `dry_run`
    admits nothing and lists what would be admitted and what was rejected. Every scan is audited.
    At most `max_ingest_messages` messages a request (over it: 400, and nothing is written)."""
    who.require("write")
    project = who.project(data.project)
    cap = state.settings.max_ingest_messages
    if len(data.messages) > cap:
        raise ValidationError(
            f"messages: {len(data.messages)} is more than the {cap} one request may hold (setting "
            "max_ingest_messages): send the conversation in parts"
        )
    request = msgspec.structs.replace(data, project=project)
    return await run(lambda: mem.ingest_conversation(**arguments(request), actor=who.name))


@post("/v1/ingest/notes", status_code=200, summary="Admit memories from a directory of notes (admin)")
async def notes(data: JSONBody[IngestPathRequest], who: Who, mem: Mem, state: State) -> ScanReport:
    """Reads Markdown notes under `path` *on the server* (hence admin only, and only under one of
    the configured `ingest_roots`): headings and the statements under them, through the admission
    policy, with `file:line` provenance."""
    request = _readable(state.settings, who, data)
    return await run(lambda: mem.ingest_notes(**arguments(request), actor=who.name))


@post("/v1/ingest/code", status_code=200, summary="Admit memories from a source tree (admin)")
async def code(data: JSONBody[IngestPathRequest], who: Who, mem: Mem, state: State) -> ScanReport:
    """Reads the source tree under `path` *on the server* (hence admin only, and only under one of
    the configured `ingest_roots`): declarations and their documentation, never function bodies;
    dependency trees, build output, caches, lock files, VCS folders and binary files are skipped
    and counted."""
    request = _readable(state.settings, who, data)
    return await run(lambda: mem.ingest_code(**arguments(request), actor=who.name))
