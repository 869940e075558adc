"""The seam between the engine and what holds the memories, and the one factory that picks a side.

A `Backend` owns three parts, and how a unit opens and what follows its commit. Two exist: the
embedded default (`agentmem.embedded`) and PostgreSQL (`agentmem.postgres.backend`).

- the store of record, `agentmem.store.StoreOfRecord`: a unit's writes and the named read
  queries (`agentmem.store.Store` on DuckDB, `agentmem.postgres.store.PgStore`);
- the current versions, `Live` here: looked up by id, key, triple slot and content, and
  listed (`agentmem.live.LiveSet` in memory, `agentmem.postgres.current.LiveView` in the
  database); a unit decides against a `agentmem.unit.Current` (the live set, or the locking
  `agentmem.postgres.current.Current` of its transaction);
- search over current versions, `Indexes` (`indexes.sync.IndexSet`: Tantivy and hnswlib
  fed by the outbox; `agentmem.postgres.search.PgIndexes`: full-text search and pgvector in
  the database).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import Protocol

import numpy as np

from agentmem.config import Config
from agentmem.currentness.analysis import Analysis
from agentmem.embedded import Embedded
from agentmem.records import MemoryVersion
from agentmem.store import StoreOfRecord
from agentmem.unit import Current, Write
from indexes.docs import Doc
from indexes.sync import Consistency


class Live(Current, Protocol):
    """Every current version, for recall and the services; `apply` / `put` after a commit."""

    def __len__(self) -> int: ...

    def __contains__(self, memory_id: object) -> bool: ...

    def many(self, ids: Iterable[int], project: str | None = None) -> dict[int, MemoryVersion]:
        """The current versions among `ids`; `project`: the one they all belong to, when the caller
        knows it (a search within it found them), so that a database need not look it up."""

    def values(self, projects: Sequence[str] | None = None) -> list[MemoryVersion]: ...

    def ids(self) -> set[int]: ...

    def apply(self, gone: Iterable[int], added: dict[int, MemoryVersion], analyses: Mapping[int, Analysis]) -> None: ...

    def put(self, v: MemoryVersion) -> None: ...

    def analyses(self, versions: Iterable[MemoryVersion]) -> dict[int, Analysis]:
        """The stored text analyses of `versions` it holds, by id: of the current ones at least
        (`agentmem.currentness.analysis`)."""
        ...


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

    def vectors_of(self, ids: Sequence[int], project: str | None = None) -> dict[int, np.ndarray]:
        """The indexed vectors of `ids` (those it holds); `project` as for `Live.many`."""

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


class Backend(Protocol):
    """One backend: its store of record, current versions and search, and the steps of a write
    that differ between backends."""

    @property
    def store(self) -> StoreOfRecord: ...

    @property
    def live(self) -> Live: ...

    @property
    def indexes(self) -> Indexes:
        """Search, once `open_indexes` ran."""

    @property
    def changes_model(self) -> bool:
        """Whether it can re-embed every version for another model and switch to it."""

    def open_indexes(self, model: str, lock: threading.RLock) -> None:
        """Open search for the serving model; `lock` is the writers' lock."""

    def new_unit(self, now: datetime, start_confidence: Callable[[str], float]) -> Write: ...

    def committed(self, w: Write, first: int, accesses: Counter[int]) -> None:
        """After `w` committed (its outbox entries from `first`): bring live set and search up to it."""

    @property
    def stale(self) -> bool:
        """True while a search update failed and has not been replayed yet."""

    def refresh(self) -> None:
        """Before a search: replay what failed, and make every acknowledged change searchable."""

    def sync(self) -> None:
        """Replay every change search has not applied yet."""

    def model_switch(
        self, model: str, catch_up: Callable[[], None], cancelled: Callable[[], bool]
    ) -> AbstractContextManager[Callable[[], None]]:
        """Build search for another model beside the live one; yields the function that swaps it in."""


def open_backend(path: Path, database_url: str | None, *, model: str, dim: int, config: Config) -> Backend:
    """The PostgreSQL backend for a database URL, else the embedded one in the data directory `path`."""
    if database_url:
        from agentmem.postgres.backend import PgBackend  # psycopg only for those who ask for PostgreSQL

        return PgBackend(database_url, model=model, dim=dim, config=config)
    return Embedded(path, dim=dim, config=config)
