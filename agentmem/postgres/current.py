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

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from agentmem.postgres.schema import CURRENT, PROJECTS_OF
from agentmem.records import MemoryVersion
from agentmem.store import SELECT, to_version
from agentmem.supersede import NEVER_SUPERSEDED
from agentmem.text import identity, sha256, slot_of


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
        self._held: dict[tuple[str, str, str], MemoryVersion | None] = {}  # read by `hold`

    def hold(self, project: str, keys: Sequence[str], slots: Sequence[str]) -> None:
        """Lock and read the current holders of many keys and triple slots at once (an import):
        two statements, where `by_key` and `by_slot` take two each. They then answer from what
        this read, which holds until the commit: the locks keep every other node from changing it."""
        wanted = sorted({("key", k) for k in keys} | {("slot", slot_key(s)) for s in slots})
        names = [f"{len(project)}:{project}/{what}/{value}" for what, value in wanted]
        fresh = sorted(n for n in names if n not in self._locked)
        if not fresh:
            return
        self._tx.run("SELECT pg_advisory_xact_lock(hashtextextended(n, 0)) FROM unnest(?::text[]) AS n ORDER BY n",
                     [fresh])  # fmt: skip
        self._locked.update(fresh)
        key_list = [v for what, v in wanted if what == "key"]
        slot_list = [v for what, v in wanted if what == "slot"]
        rows = self._tx.run(
            f"{SELECT} WHERE {CURRENT} AND project = ? AND (key = ANY(?::text[]) OR slot = ANY(?::text[])) "
            "ORDER BY id DESC FOR UPDATE",
            [project, key_list, slot_list],
        )
        found = [to_version(r) for r in rows if r[13] not in NEVER_SUPERSEDED]  # 13: kind
        self._tx.seen(found)
        for what, value in wanted:
            self._held.setdefault((project, what, value), None)
        for v in reversed(found):  # the newest last: it is the one kept, as `_one` returns it
            if v.key is not None:
                self._held[(project, "key", v.key)] = v
            if v.triple is not None:
                self._held[(project, "slot", slot_key(slot_of(v.triple.subject, v.triple.predicate)))] = v

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
        return self.many([memory_id]).get(memory_id)

    def many(self, ids: Iterable[int]) -> dict[int, MemoryVersion]:
        """The current versions among `ids`, each locked: one statement per project, rows locked in
        id order (an id's project first from where every id's project is kept, when not seen yet)."""
        ids = sorted(set(ids))
        known = self._tx.projects
        unknown = [i for i in ids if i not in known]
        found_in = {int(i): str(p) for i, p in self._tx.run(PROJECTS_OF, [unknown])} if unknown else {}
        by_project: dict[str, list[int]] = {}
        for i in ids:
            project = known[i] if i in known else found_in.get(i)  # "" is a project too
            if project is not None:
                by_project.setdefault(project, []).append(i)
        found = []
        for project, mine in sorted(by_project.items()):
            rows = self._tx.run(f"{SELECT} WHERE project = ? AND id = ANY(?::bigint[]) AND {CURRENT} "
                                "ORDER BY id FOR UPDATE", [project, mine])  # fmt: skip
            found += [to_version(r) for r in rows]
        self._tx.seen(found)
        return {v.id: v for v in found}

    def by_key(self, project: str, key: str) -> MemoryVersion | None:
        if (project, "key", key) in self._held:
            return self._held[(project, "key", key)]
        self._lock(project, "key", key)
        return self._one("project = ? AND key = ?", [project, key])

    def by_slot(self, project: str, slot: str) -> MemoryVersion | None:
        if (project, "slot", slot_key(slot)) in self._held:
            return self._held[(project, "slot", slot_key(slot))]
        self._lock(project, "slot", slot_key(slot))
        return self._one("project = ? AND slot = ?", [project, slot_key(slot)])

    def by_content(self, project: str, content: str) -> MemoryVersion | None:
        norm = sha256(identity(content))
        self._lock(project, "content", norm)
        return self._one("project = ? AND norm_hash = ?", [project, norm])
