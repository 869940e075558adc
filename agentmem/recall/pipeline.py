"""One recall, from the request to the reply: parse, candidates, the rank stages, the reply.

Every step is a module of this package and runs once, in this order (see the package docstring);
the stopwatch charges each its time (`agentmem.recall.timing`).
"""

from __future__ import annotations

from datetime import datetime

from agentmem.config import Config
from agentmem.ports import Port
from agentmem.recall import candidates, rank
from agentmem.recall.candidates import VectorHealth
from agentmem.recall.current import current_first
from agentmem.recall.query import parse
from agentmem.recall.request import Request
from agentmem.recall.rollup import rolled_up
from agentmem.recall.timing import Stopwatch
from agentmem.records import Recalled


def search(port: Port, health: VectorHealth, config: Config, req: Request, now: datetime) -> Recalled:
    """The k memories that best answer the request (see `Memory.search`) under `config` (the facade's,
    which a caller may replace); `now`: the clock's time."""
    watch = Stopwatch()
    query = parse(req.query, req.time_range, req.when or now)
    watch.lap("parse")
    n = max(config.recall_candidates, 4 * req.k)
    if req.when is not None:
        pool, probe = candidates.as_of(port, health, query, req, n, req.when)
    else:
        port.refresh()  # read your writes: every acknowledged change is searchable
        pool, probe = candidates.live(port, health, query, req, n, now)
    pools = [pool]
    if req.include_superseded:  # never with as_of (`request.checked`)
        pools.append(candidates.superseded(port, query, req, n, probe))
    watch.lap("candidates")
    weights, kinds, top = config.weights, config.kinds, max(req.k, config.slot_window)
    ranked = []
    for pool in pools:
        scored = rank.fusion(pool, now=req.when or now, weights=weights, kinds=kinds)
        watch.lap("fusion")
        scored = rank.time_fit(scored, query.window, weights=weights, kinds=kinds)
        watch.lap("time fit")
        scored = rank.asked(scored, query.asked, weights=weights)
        watch.lap("asked")
        ranked.append(rank.best(scored, top))
        watch.lap("fusion")  # sorting by the fused scores is fusion's time, and so is the merge below
    hits = ranked[0] if len(ranked) == 1 else rank.under_successors(ranked[0] + ranked[1])
    watch.lap("fusion")
    # which claims were current then is not asked of an as_of recall: no claim is older news there
    hits = rolled_up(hits, query.words if req.when is None else frozenset(), port.live, port.store)
    watch.lap("roll-up")
    model = probe.model or port.serving.model
    hits = current_first(hits, query, k=req.k, window=config.slot_window, words_needed=config.slot_query_words,
                         model=model, cosine_of=probe.vector if req.when is None else None,
                         indexes=port.indexes, live=port.live, store=port.store, project=req.project)  # fmt: skip
    watch.lap("currentness")
    if req.when is None:
        port.note_access([h.memory.id for h in hits])
    watch.report(req.query)
    return Recalled(hits=hits, window=query.window, degraded=health.degraded)
