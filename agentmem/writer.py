"""Group commit: concurrent writes queue up, and one thread at a time commits them in batches.

Each write is a job, a function of a `Write` unit. A caller queues its job and then competes
for the writer's lock; whoever holds it (the leader) takes every job queued so far, runs them
in arrival order against one unit, so a later job sees what an earlier one did, commits that
unit once (one DuckDB transaction, one index apply) and wakes each caller with its own result
or error. A job that raises leaves no trace in the unit; the others in its batch commit.

An exclusive unit (`Writer.exclusive`) commits whatever is queued first, then holds the writer
for one caller: services that read the store while they write (sweep, delete, import) see
every acknowledged write and nothing half-done.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

from agentmem.unit import Write

T = TypeVar("T")

MAX_BATCH = 256  # jobs one commit takes at most (the rest go to the next)


class _Ticket(Generic[T]):
    __slots__ = ("job", "done", "value", "error")

    def __init__(self, job: Callable[[Write], T]) -> None:
        self.job = job
        self.done = False
        self.value: Any = None
        self.error: BaseException | None = None


class Writer:
    """The one writer of a data directory. `new_unit()` makes a unit, `commit(unit)` writes it."""

    def __init__(self, new_unit: Callable[[], Write], commit: Callable[[Write], None]) -> None:
        self._new_unit = new_unit
        self._commit = commit
        self.lock = threading.RLock()  # held by the leader while it runs and commits a batch
        self._queue: list[_Ticket[Any]] = []
        self._queue_lock = threading.Lock()
        self._owner: int | None = None  # the thread inside `exclusive`, if any
        self.batches = 0
        self.jobs = 0

    @property
    def queued(self) -> int:
        """Jobs waiting for the next batch."""
        return len(self._queue)

    def run(self, job: Callable[[Write], T]) -> T:
        """Run `job` in the next batch and return its result once the batch is committed."""
        if self._owner == threading.get_ident():
            # called from inside an exclusive unit (a service composing writes): commit on its own
            unit = self._new_unit()
            value = job(unit)
            self._commit(unit)
            return value
        ticket: _Ticket[T] = _Ticket(job)
        with self._queue_lock:
            self._queue.append(ticket)
        while not ticket.done:
            with self.lock:
                if not ticket.done:
                    self._drain_once()
        if ticket.error is not None:
            raise ticket.error
        return ticket.value  # type: ignore[no-any-return]

    def _drain_once(self) -> None:
        with self._queue_lock:
            batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
        if not batch:
            return
        unit = self._new_unit()
        for t in batch:
            mark = unit.mark()
            try:
                t.value = t.job(unit)
            except BaseException as exc:  # delivered to its caller; the rest of the batch goes on
                unit.reset(mark)
                t.error = exc
        try:
            self._commit(unit)
        except BaseException as exc:  # nothing of the batch was written: every caller hears why
            for t in batch:
                if t.error is None:
                    t.error = exc
        self.batches += 1
        self.jobs += len(batch)
        for t in batch:
            t.done = True

    @contextmanager
    def exclusive(self) -> Iterator[Write]:
        """A unit of its own: queued jobs are committed first, and none run until it commits."""
        with self.lock:
            while self._queue:
                self._drain_once()
            outer, self._owner = self._owner, threading.get_ident()
            try:
                unit = self._new_unit()
                yield unit
                self._commit(unit)
            finally:
                self._owner = outer
