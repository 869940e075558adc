"""The roll-up stage: claims read with the turns they were said in (see `agentmem.claims.roll_up`).

A store that keeps no claims never gets past the first line. With claims, the turns come from the
live set (DuckDB only for a turn no longer current), and a turn hit reads which of its claims
were superseded from DuckDB: the one read of the present that is about the past.
"""

from __future__ import annotations

from agentmem import claims
from agentmem.backend import Live
from agentmem.records import Hit
from agentmem.store import StoreOfRecord


def rolled_up(hits: list[Hit], asked: frozenset[str], live: Live, store: StoreOfRecord) -> list[Hit]:
    """`hits` one per turn; `asked`: the query's words (none: no claim is read as older news)."""
    if not any(h.memory.kind in (claims.CLAIM, claims.TURN) for h in hits):
        return hits
    wanted = list(dict.fromkeys(t for h in hits if (t := claims.turn_of(h.memory)) is not None))
    turns = live.many(wanted)
    missing = [t for t in wanted if t not in turns]
    turns = {**turns, **store.get_many(missing)} if missing else turns
    return claims.roll_up(hits, asked, turns, lambda ids: store.built_on_each(ids, live.many))
