"""The narrow interface between the engine and what holds the memories.

Three parts, each with two implementations (the embedded default, and PostgreSQL):

- the store of record, `agentmem.store.StoreOfRecord`: a unit's writes and the named read
  queries (`agentmem.store.Store` on DuckDB, `agentmem.postgres.store.PgStore`);
- the current versions, `Live` here: looked up by id, key, triple slot and content, and
  listed (`agentmem.live.LiveSet` in memory, `agentmem.postgres.current.LiveView` in the
  database); a unit decides against a `Current` (the live set, or the locking
  `agentmem.postgres.current.Current` of its transaction);
- search over current versions, `Indexes` (`indexes.sync.IndexSet`: Tantivy and hnswlib
  fed by the outbox; `agentmem.postgres.search.PgIndexes`: full-text search and pgvector in
  the database).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

import numpy as np

from agentmem.records import MemoryVersion
from indexes.docs import Doc
from indexes.sync import Consistency


class Current(Protocol):
    """The current versions a write unit decides against."""

    def get(self, memory_id: int) -> MemoryVersion | None: ...

    def by_key(self, project: str, key: str) -> MemoryVersion | None: ...

    def by_slot(self, project: str, slot: str) -> MemoryVersion | None: ...

    def by_content(self, project: str, content: str) -> MemoryVersion | None: ...

    def hold(self, project: str, keys: Sequence[str], slots: Sequence[str]) -> None:
        """Read the holders of many keys and triple slots at once, ahead of `by_key` / `by_slot`."""


class Live(Current, Protocol):
    """Every current version, for recall and the services; `apply` / `put` after a commit."""

    def __len__(self) -> int: ...

    def __contains__(self, memory_id: object) -> bool: ...

    def many(self, ids: Iterable[int]) -> dict[int, MemoryVersion]: ...

    def values(self, projects: Sequence[str] | None = None) -> list[MemoryVersion]: ...

    def ids(self) -> set[int]: ...

    def apply(self, gone: Iterable[int], added: dict[int, MemoryVersion]) -> None: ...

    def put(self, v: MemoryVersion) -> None: ...


class Indexes(Protocol):
    """Text and vector search over current versions, and its upkeep."""

    rebuilt: list[str]

    def search_text(
        self,
        text: str,
        k: int,
        *,
        project: str | None = None,
        agents: Sequence[str] = (),
        kinds: Sequence[str] = (),
        tiers: Sequence[str] = (),
    ) -> list[tuple[int, float]]: ...

    def search_vector(
        self, vector: np.ndarray, k: int, *, project: str | None = None, model: str | None = None
    ) -> list[tuple[int, float]]: ...

    def waiting(self) -> list[int]: ...

    def vectors_of(self, ids: Sequence[int]) -> dict[int, np.ndarray]: ...

    def ids(self, which: str) -> set[int]: ...

    def sizes(self, ids: set[int] | None = None) -> tuple[int, int]: ...

    def apply(self, upserts: list[Doc], deletes: list[int], purges: list[int], first: int, last: int) -> None: ...

    def refresh(self) -> None: ...

    def sync(self) -> int: ...

    def lag(self) -> int: ...

    def pending_ids(self) -> set[int]: ...

    def rebuild(self, which: Sequence[str] = ...) -> None: ...

    def purge(self) -> None: ...

    def check(self) -> Consistency: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...
