"""/v1/recall and /v1/context: search current memories, or build a bounded prompt context."""

from __future__ import annotations

import msgspec
from litestar import Response, post
from litestar.params import JSONBody

from agentmem.context import Context
from agentmem.operations import ContextRequest, RecallRequest, arguments
from agentmem.recall.timing import captured, server_timing
from agentmem.records import Recalled
from api.deps import Mem, Who


@post("/v1/recall", sync_to_thread=True, status_code=200, summary="Recall current memories")
def recall(data: JSONBody[RecallRequest], who: Who, mem: Mem) -> Response[Recalled]:  # type: ignore[type-arg]
    """Hybrid BM25 + vector recall within one project, ranked by relevance and currentness.
    With `as_of`, answers over every version valid at that time. `include_history` adds each
    hit's older versions. `include_superseded` ranks superseded versions in too (each under the
    current version of its lineage, with its death record). A hit with `older_than` states the
    same slot as a newer hit of the reply, with another value. Time named in the query ("last
    Saturday", "in March") or an explicit `time_range` boosts memories whose valid_from falls in
    that window (never filters); `window` in the reply says which window was understood.
    The `Server-Timing` header gives the milliseconds of each recall stage."""
    with captured() as ms:
        found = mem.search(**arguments(msgspec.structs.replace(data, project=who.project(data.project))))
    return Response(found, headers={"Server-Timing": server_timing(ms)} if ms else None)


@post("/v1/context", sync_to_thread=True, status_code=200, summary="A prompt-ready working set")
def context(data: JSONBody[ContextRequest], who: Who, mem: Mem) -> Context:
    """At most `max_memories` (1 to 100) current memories that fit in `token_budget` (16 to 32000,
    about 4 characters a token), best first, one line each with kind and since when it holds."""
    return mem.context(**arguments(msgspec.structs.replace(data, project=who.project(data.project))))
