"""/v1/recall and /v1/context: search current memories, or build a bounded prompt context."""

from __future__ import annotations

from litestar import post
from litestar.params import JSONBody

from agentmem import ValidationError
from agentmem.context import Context, build
from api.deps import Mem, Who
from api.schemas import ContextRequest, RecallReply, RecallRequest


@post("/v1/recall", sync_to_thread=True, status_code=200, summary="Recall current memories")
def recall(data: JSONBody[RecallRequest], who: Who, mem: Mem) -> RecallReply:
    """Hybrid BM25 + vector recall within one project, ranked by relevance and currentness.
    With `as_of`, answers over every version valid at that time. `include_history` adds each
    hit's older versions."""
    project = who.project(data.project)
    hits = mem.recall(
        data.query, project=project, k=data.k, agent=data.agent, tiers=data.tiers, kinds=data.kinds, as_of=data.as_of
    )
    history = {}
    if data.include_history:
        history = {str(h.memory.lineage_id): mem.history(h.memory.id) for h in hits if h.has_history}
    return RecallReply(hits=hits, history=history, degraded=mem.degraded)


@post("/v1/context", sync_to_thread=True, status_code=200, summary="A prompt-ready working set")
def context(data: JSONBody[ContextRequest], who: Who, mem: Mem) -> Context:
    """At most `max_memories` current memories that fit in `token_budget` (about 4 characters a
    token), best first, one line each with kind and since when it holds."""
    if not 1 <= data.max_memories <= 100:
        raise ValidationError("max_memories: expected 1 to 100")
    if not 16 <= data.token_budget <= 32_000:
        raise ValidationError("token_budget: expected 16 to 32000")
    hits = mem.recall(
        data.query,
        project=who.project(data.project),
        k=min(mem.config.max_k, 2 * data.max_memories),
        agent=data.agent,
        tiers=data.tiers,
        kinds=data.kinds,
    )
    return build(hits, max_memories=data.max_memories, token_budget=data.token_budget)
