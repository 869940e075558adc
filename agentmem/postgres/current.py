"""The current versions, read from PostgreSQL: what a unit decides against, and what services list.

`Current` is a unit's view (`agentmem.unit.Write` reads it as it reads the embedded live set).
Its reads take the locks that make a decision hold on every node until the unit commits:

- a lookup by key, triple slot or normalised content first takes a transaction-level advisory
  lock on (project, what, value), so two nodes deciding the same key take turns even when no
  row holds it yet (a first insert), and the second one then reads what the first committed;
- every current version it returns is locked `FOR UPDATE`: nobody retires, reinforces or
  replaces it meanwhile, and a node waiting on the lock reads the row again once the first
  commits (then no longer current, so it is not returned).

The same reads without locks, for the services that read the current versions outside a unit
(sweep, consolidation, stats), are `agentmem.postgres.live.LiveView`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from agentmem.postgres.schema import CURRENT, PROJECTS_OF
from agentmem.records import MemoryVersion
from agentmem.store import SELECT, to_version
from agentmem.supersede import NEVER_SUPERSEDED
from agentmem.text import identity, sha256


class Transaction(Protocol):
    """What `Current` needs of a unit's transaction (`agentmem.postgres.store.Tx`)."""

    projects: dict[int, str]

    def run(self, text: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    def seen(self, versions: Sequence[MemoryVersion]) -> None: ...


def slot_key(slot: str) -> str:
    """What the `slot` column holds: the slot's hash, so that a subject of any length fits the
    btree index (PostgreSQL refuses an index row of more than about 2,700 bytes)."""
    return sha256(slot)


_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended(?, 0))"


class Current:
    """A unit's current versions (see the module's docstring); one per transaction."""

    def __init__(self, tx: Transaction) -> None:
        self._tx = tx
        self._locked: set[str] = set()

    def _lock(self, project: str, what: str, value: str) -> None:
        name = f"{len(project)}:{project}/{what}/{value}"  # the length keeps two projects apart
        if name not in self._locked:
            self._tx.run(_LOCK, [name])
            self._locked.add(name)

    def _one(self, condition: str, params: list[Any]) -> MemoryVersion | None:
        rows = self._tx.run(f"{SELECT} WHERE {CURRENT} AND {condition} ORDER BY id DESC FOR UPDATE", params)
        found = [to_version(r) for r in rows if r[13] not in NEVER_SUPERSEDED]  # 13: kind
        self._tx.seen(found)
        return found[0] if found else None

    def get(self, memory_id: int) -> MemoryVersion | None:
        project = self._tx.projects.get(memory_id)
        if project is None:  # its project first, from where every id's project is kept
            found_in = self._tx.run(PROJECTS_OF, [[memory_id]])
            if not found_in:
                return None
            project = str(found_in[0][1])
        rows = self._tx.run(f"{SELECT} WHERE project = ? AND id = ? AND {CURRENT} FOR UPDATE", [project, memory_id])
        found = [to_version(r) for r in rows]
        self._tx.seen(found)
        return found[0] if found else None

    def by_key(self, project: str, key: str) -> MemoryVersion | None:
        self._lock(project, "key", key)
        return self._one("project = ? AND key = ?", [project, key])

    def by_slot(self, project: str, slot: str) -> MemoryVersion | None:
        self._lock(project, "slot", slot_key(slot))
        return self._one("project = ? AND slot = ?", [project, slot_key(slot)])

    def by_content(self, project: str, content: str) -> MemoryVersion | None:
        norm = sha256(identity(content))
        self._lock(project, "content", norm)
        return self._one("project = ? AND norm_hash = ?", [project, norm])
