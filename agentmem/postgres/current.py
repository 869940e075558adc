"""The current versions, read from PostgreSQL: what a unit decides against, and what services list.

`Current` is a unit's view (`agentmem.unit.Write` reads it as it reads the embedded live set).
Its reads take the locks that make a decision hold on every node until the unit commits:

- a lookup by key, triple slot or normalised content first takes a transaction-level advisory
  lock on (project, what, value), so two nodes deciding the same key take turns even when no
  row holds it yet (a first insert), and the second one then reads what the first committed;
- every current version it returns is locked `FOR UPDATE`: nobody retires, reinforces or
  replaces it meanwhile, and a node waiting on the lock reads the row again once the first
  commits (then no longer current, so it is not returned).

`LiveView` is the same reads without locks, for the services that read the current versions
outside a unit (sweep, consolidation, stats): each sees every committed write.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from agentmem.filters import Filter
from agentmem.postgres.schema import CURRENT
from agentmem.records import MemoryVersion
from agentmem.store import SELECT, to_version
from agentmem.supersede import NEVER_SUPERSEDED
from agentmem.text import identity, sha256

if TYPE_CHECKING:
    from agentmem.postgres.store import PgStore, Tx


def slot_key(slot: str) -> str:
    """What the `slot` column holds: the slot's hash, so that a subject of any length fits the
    btree index (PostgreSQL refuses an index row of more than about 2,700 bytes)."""
    return sha256(slot)


_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended(?, 0))"


class Current:
    """A unit's current versions (see the module's docstring); one per transaction."""

    def __init__(self, tx: Tx) -> None:
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
        rows = self._tx.run(f"{SELECT} WHERE id = ? AND {CURRENT} FOR UPDATE", [memory_id])
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


class LiveView:
    """Every current version as the database holds it now (no locks; see the module's docstring)."""

    def __init__(self, store: PgStore) -> None:
        self._store = store

    def __len__(self) -> int:
        return int(self._store.scalar(f"SELECT count(*) FROM memories WHERE {CURRENT}"))

    def __contains__(self, memory_id: object) -> bool:
        return isinstance(memory_id, int) and self.get(memory_id) is not None

    def get(self, memory_id: int) -> MemoryVersion | None:
        return self.many([memory_id]).get(memory_id)

    def many(self, ids: Iterable[int]) -> dict[int, MemoryVersion]:
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        found = self._store.where(f"{CURRENT} AND id = ANY(?::bigint[])", [wanted])
        return {v.id: v for v in found}

    def values(self) -> list[MemoryVersion]:
        return self._store.where(CURRENT)

    def ids(self) -> set[int]:
        return set(self._store.ids(Filter(current_only=True)))

    def _newest(self, condition: str, params: list[Any]) -> MemoryVersion | None:
        found = [v for v in self._store.where(f"{CURRENT} AND {condition}", params, order="id DESC")
                 if v.kind not in NEVER_SUPERSEDED]  # fmt: skip
        return found[0] if found else None

    def by_key(self, project: str, key: str) -> MemoryVersion | None:
        return self._newest("project = ? AND key = ?", [project, key])

    def by_slot(self, project: str, slot: str) -> MemoryVersion | None:
        return self._newest("project = ? AND slot = ?", [project, slot_key(slot)])

    def by_content(self, project: str, content: str) -> MemoryVersion | None:
        return self._newest("project = ? AND norm_hash = ?", [project, sha256(identity(content))])

    # the embedded live set follows each commit; the database needs no telling
    def apply(self, gone: Iterable[int], added: dict[int, MemoryVersion]) -> None:
        return None

    def put(self, v: MemoryVersion) -> None:
        return None
