"""The current beliefs held in memory: every latest active version, looked up by id, key, slot or content.

It mirrors DuckDB exactly because one process owns the store and updates it right after each
commit. Recall filters and ranks against it, so a stale index can never bring back an old
version and the hot path makes no DuckDB round trip. It also holds each current version's text
analysis (`agentmem.currentness.analysis`), stored with it when a commit writes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from agentmem.currentness.analysis import Analysis, analyse, decode, wanted
from agentmem.records import MemoryVersion
from agentmem.supersede import NEVER_SUPERSEDED
from agentmem.text import identity, slot_of

Lookup = tuple[str, str]  # (project, value)
EMPTY: Mapping[int, Analysis] = {}


class LiveSet:
    def __init__(self, versions: Iterable[MemoryVersion] = ()) -> None:
        self._by_id: dict[int, MemoryVersion] = {}
        self._by_key: dict[Lookup, set[int]] = {}
        self._by_slot: dict[Lookup, set[int]] = {}
        self._by_norm: dict[Lookup, set[int]] = {}
        self._analysis: dict[int, Analysis] = {}
        self._stored: dict[int, bytes] = {}  # analyses read back from the store, decoded when first read
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

    def many(self, ids: Iterable[int], project: str | None = None) -> dict[int, MemoryVersion]:
        """The current versions among `ids`, by id (`project`, the one they belong to when the
        caller knows it, changes nothing: every project is in memory)."""
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
            if _looked_up_by(old) == _looked_up_by(v):
                return  # an access count, a reinforcement: found the same way, with the same analysis
            self._unlink(old)
            if (old.content, old.kind) != (v.content, v.kind):
                self._analysis.pop(v.id, None)
                self._stored.pop(v.id, None)
        for table, lookup in self._lookups(v):
            table.setdefault(lookup, set()).add(v.id)

    def apply(
        self, gone: Iterable[int], added: dict[int, MemoryVersion], analyses: Mapping[int, Analysis] = EMPTY
    ) -> None:
        """After a commit: put what a unit changed (in place: a concurrent recall never finds it
        missing), with the analyses the commit stored of its new versions; drop what it removed.
        A version current again without a new row (restored, unarchived) is analysed here."""
        for v in added.values():
            self.put(v)
        self.hold_analyses(analyses)
        held, stored = self._analysis, self._stored
        for i, v in added.items():
            if i not in held and i not in stored and i in self._by_id and wanted(v):
                held[i] = analyse(v.content, v.kind)
        for memory_id in gone:
            if memory_id not in added:
                self.drop(memory_id)

    def hold_analyses(self, analyses: Mapping[int, Analysis]) -> None:
        """Keep the analyses of current versions, by id (a commit's, or those made when the store
        opened)."""
        by_id = self._by_id
        self._analysis.update((i, a) for i, a in analyses.items() if i in by_id)

    def hold_stored(self, stored: Iterable[tuple[int, bytes]]) -> None:
        """Keep the stored analyses of current versions (`analysis.encode`d, of this
        `analysis.VERSION`), by id: each is decoded when a recall first reads it, so a store
        opens without decoding every one, and only the analyses recall reads take their memory."""
        by_id = self._by_id
        self._stored.update((i, data) for i, data in stored if i in by_id)

    def missing_analyses(self) -> list[MemoryVersion]:
        """The current versions currentness reads whose analysis is not held."""
        held, stored = self._analysis, self._stored
        return [v for i, v in self._by_id.items() if i not in held and i not in stored and wanted(v)]

    def analyses(self, versions: Iterable[MemoryVersion]) -> dict[int, Analysis]:
        """The text analyses held of those of `versions` that are current, by id (those made
        when written, or read back from the store)."""
        held, stored, out = self._analysis, self._stored, {}
        for v in versions:
            a = held.get(v.id)
            if a is None and (data := stored.get(v.id)) is not None and (a := decode(data)) is not None:
                held[v.id] = a
                stored.pop(v.id, None)
            if a is not None:
                out[v.id] = a
        return out

    def drop(self, memory_id: int) -> None:
        self._analysis.pop(memory_id, None)
        self._stored.pop(memory_id, None)
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


def _looked_up_by(v: MemoryVersion) -> tuple[object, ...]:
    """What a version's lookups and analysis are made from: a refresh that changes none of it (the
    access counts flushed every few seconds, a reinforcement) keeps them as they are, instead of
    reading the text again (`text.identity`)."""
    return v.content, v.kind, v.project, v.key, v.triple
