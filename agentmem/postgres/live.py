"""The current versions as the database holds them now, read without locks: what the services
that read outside a unit see (sweep, consolidation, stats), each every committed write.

A unit's own reads, which lock what they return, are `agentmem.postgres.current.Current`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agentmem.currentness import analysis
from agentmem.currentness.analysis import Analysis
from agentmem.filters import Filter
from agentmem.postgres.current import slot_key
from agentmem.postgres.schema import CURRENT
from agentmem.postgres.store import PgStore
from agentmem.records import MemoryVersion
from agentmem.supersede import NEVER_SUPERSEDED
from agentmem.text import identity, sha256

READ_LATELY = 16_384  # analyses kept after a read: about the hits of a few thousand recalls


class LiveView:
    """Every current version as the database holds it now (no locks; see the module's docstring)."""

    def __init__(self, store: PgStore) -> None:
        self._store = store
        # analyses read lately, by (id, content hash): a version's text never changes, and an
        # erased one's hash does, so what was erased is never served from here
        self._read: OrderedDict[tuple[int, str], Analysis] = OrderedDict()
        self._read_lock = threading.Lock()

    def __len__(self) -> int:
        return int(self._store.scalar(f"SELECT count(*) FROM memories WHERE {CURRENT}"))

    def __contains__(self, memory_id: object) -> bool:
        return isinstance(memory_id, int) and self.get(memory_id) is not None

    def get(self, memory_id: int) -> MemoryVersion | None:
        return self.many([memory_id]).get(memory_id)

    def many(self, ids: Iterable[int], project: str | None = None) -> dict[int, MemoryVersion]:
        """The current versions among `ids` (of `project`, when given): else their projects
        first, then one read per project."""
        ids = list(ids)
        out: dict[int, MemoryVersion] = {}
        grouped = {project: ids} if project is not None else self._store.by_project(ids)
        for p, mine in grouped.items():
            out.update((v.id, v) for v in self._store.where(f"project = ? AND {CURRENT} AND id = ANY(?::bigint[])",
                                                            [p, mine]))  # fmt: skip
        return out

    def values(self, projects: Sequence[str] | None = None) -> list[MemoryVersion]:
        """Every current version, or those of `projects` (one read per project)."""
        if projects is None:
            return self._store.where(CURRENT)
        return [v for p in sorted(set(projects)) for v in self._store.where(f"project = ? AND {CURRENT}", [p])]

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

    def hold(self, project: str, keys: Sequence[str], slots: Sequence[str]) -> None:
        return None  # reads without locks have nothing to hold (a unit's `Current` locks)

    # the embedded live set follows each commit; the database needs no telling
    def apply(self, gone: Iterable[int], added: dict[int, MemoryVersion], analyses: Mapping[int, Analysis]) -> None:
        return None

    def put(self, v: MemoryVersion) -> None:
        return None

    def analyses(self, versions: Iterable[MemoryVersion]) -> dict[int, Analysis]:
        """The analyses the database stores of `versions`: those read lately, the others in one
        read per project. One stored by another `analysis.VERSION` is left out (recall makes it:
        `analysis.of_versions`)."""
        out: dict[int, Analysis] = {}
        unread: list[MemoryVersion] = []
        with self._read_lock:
            for v in versions:
                a = self._read.get((v.id, v.content_hash))
                if a is None:
                    unread.append(v)
                else:
                    self._read.move_to_end((v.id, v.content_hash))
                    out[v.id] = a
        if not unread:
            return out
        stored = self._store.analyses(unread)
        with self._read_lock:
            for v in unread:
                if (a := analysis.decode(stored.get(v.id))) is not None:
                    out[v.id] = self._read[(v.id, v.content_hash)] = a
            while len(self._read) > READ_LATELY:
                self._read.popitem(last=False)
        return out
