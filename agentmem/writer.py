"""Group commit: concurrent writes queue up, and one thread at a time commits them in batches.

The leader runs every queued job in arrival order against one `Write` unit and commits it once; a
failing job leaves no trace, and on a shared database a refused batch runs again with jittered
backoff until `deadline`. How batches, exclusive units and retries behave: docs/design/modules.md#writer.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

from agentmem.unit import Write

T = TypeVar("T")

MAX_BATCH = 256  # jobs one commit takes at most (the rest go to the next)
DEADLINE = 20.0  # seconds a batch may keep asking for a retry before its callers hear the conflict
PAUSE = (0.005, 1.0)  # the first pause before a retry, and the longest (it doubles each time, jittered)


class _Ticket(Generic[T]):
    __slots__ = ("job", "done", "final", "value", "error")

    def __init__(self, job: Callable[[Write], T]) -> None:
        self.job = job
        self.done = False
        self.final = False  # its error is its answer: a later run of the batch leaves it out
        self.value: Any = None
        self.error: BaseException | None = None


class Writer:
    """The one writer of a data directory. `new_unit()` makes a unit, `commit(unit)` writes it."""

    def __init__(
        self,
        new_unit: Callable[[], Write],
        commit: Callable[[Write], None],
        *,
        abort: Callable[[Write], None] = lambda unit: None,
        retryable: tuple[type[BaseException], ...] = (),
        deadline: float = DEADLINE,
    ) -> None:
        self._new_unit = new_unit
        self._commit = commit
        self._abort = abort  # a unit that will not be committed (its store transaction is rolled back)
        self._retryable = retryable
        self.deadline = deadline
        self.retries = 0  # runs of a batch again after the store asked for it
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
            try:
                value = job(unit)
                self._commit(unit)
            except BaseException:
                self._abort(unit)
                raise
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
        self._run_batch(batch)
        self.batches += 1
        self.jobs += len(batch)
        for t in batch:
            t.done = True

    def _run_batch(self, batch: list[_Ticket[Any]]) -> None:
        """Run `batch` until it commits, retrying with backoff until the deadline (see the module)."""
        end = time.monotonic() + self.deadline
        for pause in _pauses():
            outcome = self._attempt(batch, last=time.monotonic() >= end)
            if outcome == "done":
                return
            if outcome == "alone":  # bad input refused at commit: find whose, one job at a time
                for t in batch:
                    if not t.final:
                        self._run_batch([t])
                return
            if outcome == "retry":
                self.retries += 1
                time.sleep(min(pause, max(0.0, end - time.monotonic())))
            # "again": a job broke the transaction and was left out; run the rest at once

    def _attempt(self, batch: list[_Ticket[Any]], *, last: bool) -> str:
        """Run and commit `batch` once: "done", "retry" (the store asked for the batch again),
        "again" (a job broke the unit and was left out) or "alone" (see `_run_batch`)."""
        unit = self._new_unit()
        pending = [t for t in batch if not t.final]
        for t in pending:
            t.error = None
            mark = unit.mark()
            try:
                t.value = t.job(unit)
            except self._retryable as exc:
                return self._conflict(unit, batch, exc, last)
            except BaseException as exc:  # delivered to its caller; the rest of the batch goes on
                t.error = exc
                if unit.broken:  # its database transaction is gone: the others run again without it
                    t.final = True
                    self._abort(unit)
                    return "again"
                unit.reset(mark)
        try:
            self._commit(unit)
        except self._retryable as exc:
            return self._conflict(unit, batch, exc, last)
        except BaseException as exc:  # nothing of the batch was written
            self._abort(unit)
            if len([t for t in pending if t.error is None]) > 1 and 400 <= getattr(exc, "status", 500) < 500:
                return "alone"
            self._fail(batch, exc)  # every caller hears why
        return "done"

    def _conflict(self, unit: Write, batch: list[_Ticket[Any]], exc: BaseException, last: bool) -> str:
        """The store asked for the batch again: "retry", or past the deadline every caller hears why."""
        self._abort(unit)
        if last:
            self._fail(batch, exc)
            return "done"
        return "retry"

    @staticmethod
    def _fail(batch: list[_Ticket[Any]], exc: BaseException) -> None:
        for t in batch:
            if t.error is None:
                t.error = exc

    def run_alone(self, job: Callable[[Write], T]) -> T:
        """`job` in an exclusive unit, run again (as a batch is) when the store asks for it: for
        services that read outside the unit's locks (restore, delete) and must decide again."""
        end = time.monotonic() + self.deadline
        for pause in _pauses():
            try:
                with self.exclusive() as unit:
                    return job(unit)
            except self._retryable:
                if time.monotonic() >= end or self._owner == threading.get_ident():
                    raise
                self.retries += 1
                time.sleep(min(pause, max(0.0, end - time.monotonic())))
        raise AssertionError("unreachable")

    @contextmanager
    def exclusive(self) -> Iterator[Write]:
        """A unit of its own: queued jobs are committed first, and none run until it commits."""
        with self.lock:
            while self._queue:
                self._drain_once()
            outer, self._owner = self._owner, threading.get_ident()
            try:
                unit = self._new_unit()
                try:
                    yield unit
                    self._commit(unit)
                except BaseException:
                    self._abort(unit)
                    raise
            finally:
                self._owner = outer


def _pauses() -> Iterator[float]:
    """Pauses before each retry: exponential backoff with full jitter, capped (`PAUSE`)."""
    ceiling = PAUSE[0]
    while True:
        yield random.uniform(0, ceiling)
        ceiling = min(PAUSE[1], ceiling * 2)
