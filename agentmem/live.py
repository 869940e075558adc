"""The current beliefs held in memory: every latest active version, looked up by id, key, slot or content.

It mirrors DuckDB exactly because one process owns the store and updates it right after each
commit. Recall filters and ranks against it, so a stale index can never bring back an old
version and the hot path makes no DuckDB round trip. It also holds each current version's text
analysis (`agentmem.currentness.analysis`), made once when a commit brings the version in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from agentmem.currentness.analysis import Analysis, analyse, wanted
from agentmem.records import MemoryVersion
from agentmem.supersede import NEVER_SUPERSEDED
from agentmem.text import identity, slot_of

Lookup = tuple[str, str]  # (project, value)


class LiveSet:
    def __init__(self, versions: Iterable[MemoryVersion] = ()) -> None:
        self._by_id: dict[int, MemoryVersion] = {}
        self._by_key: dict[Lookup, set[int]] = {}
        self._by_slot: dict[Lookup, set[int]] = {}
        self._by_norm: dict[Lookup, set[int]] = {}
        self._analysis: dict[int, Analysis] = {}
        for v in versions:
            self.put(v)

    def __len__(self) -> int:
        return len(self._by_id)

    def __contains__(self, memory_id: object) -> bool:
        return memory_id in self._by_id

    def hold(self, project: str, keys: Sequence[str], slots: Sequence[str]) -> None:
        """Nothing to read ahead: every lookup is in memory (a shared store's unit locks them here)."""
        return None

    def get(self, memory_id: int) -> MemoryVersion | None:
        return self._by_id.get(memory_id)

    def many(self, ids: Iterable[int]) -> dict[int, MemoryVersion]:
        """The current versions among `ids`, by id."""
        by_id = self._by_id
        return {i: v for i in ids if (v := by_id.get(i)) is not None}

    def ids(self) -> set[int]:
        return set(self._by_id)

    def values(self, projects: Sequence[str] | None = None) -> list[MemoryVersion]:
        """A snapshot of every current version (of `projects`, when given)."""
        if projects is None:
            return list(self._by_id.values())
        wanted = set(projects)
        return [v for v in self._by_id.values() if v.project in wanted]

    def _lookups(self, v: MemoryVersion) -> list[tuple[dict[Lookup, set[int]], Lookup]]:
        if v.kind in NEVER_SUPERSEDED:
            return []
        out = [(self._by_norm, (v.project, identity(v.content)))]
        if v.key is not None:
            out.append((self._by_key, (v.project, v.key)))
        if v.triple is not None:
            out.append((self._by_slot, (v.project, slot_of(v.triple.subject, v.triple.predicate))))
        return out

    def put(self, v: MemoryVersion) -> None:
        """Add or refresh a version; one that is no longer latest and active is dropped instead."""
        if not (v.is_latest and v.status == "active"):
            self.drop(v.id)
            return
        old = self._by_id.get(v.id)
        self._by_id[v.id] = v  # replaced in place: a concurrent recall never finds it missing
        if old is not None:
            self._unlink(old)
            if (old.content, old.kind) != (v.content, v.kind):
                self._analysis.pop(v.id, None)
        for table, lookup in self._lookups(v):
            table.setdefault(lookup, set()).add(v.id)

    def apply(self, gone: Iterable[int], added: dict[int, MemoryVersion]) -> None:
        """After a commit: put what a unit changed (in place: a concurrent recall never finds it
        missing), drop what it removed."""
        for v in added.values():
            self.put(v)
        self.analyses(added)  # what a commit brings in is read once, now, not by each recall
        for memory_id in gone:
            if memory_id not in added:
                self.drop(memory_id)

    def analyses(self, ids: Iterable[int]) -> dict[int, Analysis]:
        """The text analyses of the current versions among `ids` that currentness reads (not
        events), by id: those held, and the others made now and held (after a restart, a version
        is analysed when it is first read)."""
        held, by_id, out = self._analysis, self._by_id, {}
        for i in ids:
            a = held.get(i)
            if a is None:
                v = by_id.get(i)
                if v is None or not wanted(v):
                    continue
                a = held[i] = analyse(v.content, v.kind)
            out[i] = a
        return out

    def drop(self, memory_id: int) -> None:
        self._analysis.pop(memory_id, None)
        v = self._by_id.pop(memory_id, None)
        if v is not None:
            self._unlink(v)

    def _unlink(self, v: MemoryVersion) -> None:
        memory_id = v.id
        for table, lookup in self._lookups(v):
            ids = table.get(lookup)
            if ids is not None:
                ids.discard(memory_id)
                if not ids:
                    del table[lookup]

    def _newest(self, table: dict[Lookup, set[int]], lookup: Lookup) -> MemoryVersion | None:
        ids = table.get(lookup)
        return self._by_id[max(ids)] if ids else None

    def by_key(self, project: str, key: str) -> MemoryVersion | None:
        return self._newest(self._by_key, (project, key))

    def by_slot(self, project: str, slot: str) -> MemoryVersion | None:
        return self._newest(self._by_slot, (project, slot))

    def by_content(self, project: str, content: str) -> MemoryVersion | None:
        return self._newest(self._by_norm, (project, identity(content)))
