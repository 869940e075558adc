"""Recall as one pipeline, read top to bottom: a query goes one way through these modules.

1. `request`: the call's arguments checked once (`Request`).
2. `query`: the query text parsed once (`Query`): words, stems, time window, question asked.
3. `candidates`: what may answer it: the live indexes, or DuckDB for the past (`as_of`,
   superseded versions); each source a `Pool` of versions and the rankings that found them.
4. `rank`: the score stages of a pool, in a fixed order: fusion, time fit, asked; then the best.
5. `rollup`: claims read with the turns they were said in (`agentmem.claims`).
6. `current`: the newer statement of a topic first (`agentmem.currentness`), and each hit's cosine.
7. `pipeline`: the order above, each stage timed (`timing`), and the reply.

`Memory.search` checks the request and hands it to `pipeline.search`.
"""

from agentmem.recall.rank import under_successors

__all__ = ["under_successors"]
