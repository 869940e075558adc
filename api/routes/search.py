"""/v1/recall and /v1/context: search current memories, or build a bounded prompt context."""

from __future__ import annotations

from litestar import post
from litestar.params import JSONBody

from agentmem.context import Context
from api.deps import Mem, Who
from api.schemas import ContextRequest, RecallReply, RecallRequest


@post("/v1/recall", sync_to_thread=True, status_code=200, summary="Recall current memories")
def recall(data: JSONBody[RecallRequest], who: Who, mem: Mem) -> RecallReply:
    """Hybrid BM25 + vector recall within one project, ranked by relevance and currentness.
    With `as_of`, answers over every version valid at that time. `include_history` adds each
    hit's older versions. `include_superseded` ranks superseded versions in too (each under the
    current version of its lineage, with its death record). A hit with `older_than` states the
    same slot as a newer hit of the reply, with another value. Time named in the query ("last
    Saturday", "in March") or an explicit `time_range` boosts memories whose valid_from falls in
    that window (never filters); `window` in the reply says which window was understood."""
    project = who.project(data.project)
    found = mem.search(data.query, project=project, k=data.k, agent=data.agent, tiers=data.tiers, kinds=data.kinds,
                       as_of=data.as_of, time_range=data.time_range,
                       include_superseded=data.include_superseded)  # fmt: skip
    history = {}
    if data.include_history:
        with_past = [h.memory.lineage_id for h in found.hits if h.has_history]
        lineages = mem.histories(with_past)  # one read for every hit, in the hits' order below
        history = {str(lineage): lineages[lineage] for lineage in with_past}
    return RecallReply(hits=found.hits, history=history, degraded=found.degraded, window=found.window)


@post("/v1/context", sync_to_thread=True, status_code=200, summary="A prompt-ready working set")
def context(data: JSONBody[ContextRequest], who: Who, mem: Mem) -> Context:
    """At most `max_memories` (1 to 100) current memories that fit in `token_budget` (16 to 32000,
    about 4 characters a token), best first, one line each with kind and since when it holds."""
    return mem.context(
        data.query,
        project=who.project(data.project),
        max_memories=data.max_memories,
        token_budget=data.token_budget,
        agent=data.agent,
        tiers=data.tiers,
        kinds=data.kinds,
    )
