"""What the services may use of the write pipeline: a port, not the engine.

Lifecycle, consolidation, admission, transfer, the write decisions (`agentmem.writes`) and recall
run write units, read the store of record, the current versions and the search indexes, embed,
and note audit entries. They see no writer, backend, queue or background upkeep: those stay the
engine's (`agentmem.engine.Engine`, the one implementation), and a service cannot reach them.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Protocol, TypeVar

from agentmem.audit import AuditEntry
from agentmem.backend import Indexes, Live
from agentmem.config import Config
from agentmem.provider import Provider
from agentmem.records import MemoryVersion
from agentmem.serving import Serving
from agentmem.store import StoreOfRecord
from agentmem.unit import Write

T = TypeVar("T")


class Port(Protocol):
    """Units to write in, and what to read and search: all a service needs."""

    @property
    def config(self) -> Config: ...

    @property
    def clock(self) -> Callable[[], datetime]: ...

    @property
    def store(self) -> StoreOfRecord: ...

    @property
    def live(self) -> Live: ...

    @property
    def indexes(self) -> Indexes: ...

    @property
    def serving(self) -> Serving: ...

    @property
    def provider(self) -> Provider | None: ...

    def run(self, job: Callable[[Write], T]) -> T:
        """`job` in the next group commit, beside other callers' jobs; its result once the batch is
        durable and applied."""
        ...

    def write(self) -> AbstractContextManager[Write]:
        """A write unit, committed when the block ends without an error."""
        ...

    def run_alone(self, job: Callable[[Write], T]) -> T:
        """`run`, with no other unit sharing its commit."""
        ...

    def get(self, memory_id: int) -> MemoryVersion:
        """One version by id (NotFoundError when there is none)."""
        ...

    def record(self, entries: list[AuditEntry]) -> list[int]:
        """Audit entries written in a unit of their own; their ids."""
        ...

    def purge(self) -> None:
        """Erased text leaves the index files (beside the writer, not under it)."""
        ...

    def refresh(self) -> None:
        """The search indexes see every acknowledged write."""
        ...

    def note_access(self, ids: list[int]) -> None:
        """Recall returned these: their access counts rise with a later commit."""
        ...
