"""The PostgreSQL backend: versions, current versions and search all live in the database.

A unit is one transaction; its current versions and search documents change inside it, so
nothing follows a commit and no model change is offered yet.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime

from agentmem.config import Config
from agentmem.errors import StoreError
from agentmem.postgres.live import LiveView
from agentmem.postgres.search import PgIndexes
from agentmem.postgres.store import PgStore
from agentmem.unit import Write


class PgBackend:
    """One node's view of a shared database (see `agentmem.backend.Backend`)."""

    changes_model = False
    stale = False  # search changes in the unit's transaction: nothing can lag

    def __init__(self, url: str, *, model: str, dim: int, config: Config) -> None:
        self.store = PgStore(url, model=model, dim=dim, lock_timeout=config.lock_timeout_seconds)
        self.live = LiveView(self.store)

    def open_indexes(self, model: str, lock: threading.RLock) -> None:
        self.indexes = PgIndexes(self.store)

    def new_unit(self, now: datetime, start_confidence: Callable[[str], float]) -> Write:
        session = self.store.open_unit()
        return Write(session.current, session.allocate_id, now, start_confidence, session)

    def committed(self, w: Write, first: int, accesses: Counter[int]) -> None:
        return None

    def refresh(self) -> None:
        return None

    def sync(self) -> None:
        return None

    @contextmanager
    def model_switch(
        self, model: str, catch_up: Callable[[], None], cancelled: Callable[[], bool]
    ) -> Iterator[Callable[[], None]]:
        raise StoreError("a change of model is not supported on PostgreSQL yet")
        yield lambda: None  # pragma: no cover
