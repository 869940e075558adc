"""The write pipeline of one data directory (or one node on a shared database): queue, decide,
apply, commit, acknowledge.

Every change goes through one write unit of the `Writer`; its commit writes the store of record in
one transaction, and the backend (`agentmem.backend`) then brings its live set and search up to
it. Which model embeds is `agentmem.serving`'s. How a write flows: docs/design/architecture.md.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TypeVar

import msgspec

from agentmem.audit import AuditEntry
from agentmem.backend import open_backend
from agentmem.config import Config
from agentmem.currentness import analysis
from agentmem.errors import NotFoundError, ValidationError
from agentmem.provider import Provider
from agentmem.records import MemoryVersion
from agentmem.serving import Serving
from agentmem.store import RetryConflict
from agentmem.supersede import NEVER_SUPERSEDED
from agentmem.unit import Write
from agentmem.validate import MAX_ID
from agentmem.writer import Writer
from indexes.embed import Embedder
from indexes.onnx_embed import embedder_named
from indexes.sync import Consistency

log = logging.getLogger("agentmem")

T = TypeVar("T")


class Engine:
    """Owns one data directory. Services (lifecycle, consolidation, admission, transfer) and the
    `Memory` facade change memories only through `run` and `write`."""

    def __init__(
        self,
        path: Path,
        *,
        embedder: Embedder,
        config: Config,
        clock: Callable[[], datetime],
        database_url: str | None = None,
        embedders: Callable[[str], Embedder | None] = embedder_named,
    ) -> None:
        self.path = path
        self.config = config
        self.clock = clock
        self._access: Counter[int] = Counter()
        self._access_lock = threading.Lock()
        self._last_change = 0.0
        self._wake = threading.Event()
        self._closing = threading.Event()
        self._purge_lock = threading.Lock()
        self._purge_asked = 0
        self._purge_done = 0
        self.backend = open_backend(path, database_url, model=embedder.name, dim=embedder.dim, config=config)
        self.store, self.live = self.backend.store, self.backend.live
        try:
            self.writer = Writer(
                self._new_unit,
                self._commit,
                abort=self._abort,
                retryable=(RetryConflict,),
                deadline=config.retry_deadline_seconds,
            )
            self.serving = Serving(embedder, self.backend, self.writer.lock, embedders=embedders,
                                   switched=self._model_switched)  # fmt: skip
            self.backend.open_indexes(self.serving.model, self.writer.lock)
            self.indexes = self.backend.indexes
            self.provider = Provider(config.provider, self.store, self.writer.lock) if config.provider else None
            if self.indexes.rebuilt:
                why = "index missing, damaged or of another text analysis on open"
                self.audit_rebuild(list(self.indexes.rebuilt), "startup", why, True)
        except BaseException:
            self.store.close()
            raise
        self._thread = threading.Thread(target=self._background, name="agentmem-background", daemon=True)
        self._thread.start()
        self.serving.start()

    # -- writing -----------------------------------------------------------------------

    def run(self, job: Callable[[Write], T]) -> T:
        """Run `job` in the next group commit; its result once the batch is durable and applied."""
        return self.writer.run(self.serving.checked(job))

    @contextmanager
    def write(self) -> Iterator[Write]:
        """A unit of its own, committed on exit: the store it reads holds every acknowledged write."""
        with self.writer.exclusive() as w:
            self.serving.checked(lambda w: None)(w)
            yield w

    def run_alone(self, job: Callable[[Write], T]) -> T:
        """`job` in a unit of its own (as `write`), run again when a shared store reports that
        another node changed what it read (`Writer.run_alone`)."""
        return self.writer.run_alone(self.serving.checked(job))

    def claim_job(self, name: str, every_seconds: float) -> bool:
        """Whether to run the scheduled job `name` now: always on a store this process owns; on a
        shared database, on one node of all each period (`StoreOfRecord.claim_job`)."""
        return self.store.claim_job(name, every_seconds, self.clock())

    def record(self, entries: list[AuditEntry]) -> list[int]:
        """Write audit entries that go with no other change; returns their ids."""
        with self.write() as w:
            w.audit(entries)
        return w.audit_ids

    def _new_unit(self) -> Write:
        kinds = self.config.kinds
        return self.backend.new_unit(self.clock(), lambda kind: kinds[kind].start_confidence)

    def _abort(self, w: Write) -> None:
        self.store.abort(w.session)

    def _commit(self, w: Write) -> None:
        with self._access_lock:
            accesses, self._access = self._access, Counter()
        if w.empty and not accesses:
            self._abort(w)  # nothing to write: a shared store's transaction ends (and its locks go)
            return
        c, s = w.changes, self.store
        w.analyses, stored = analysis.of_new(c.inserts.values())  # each text read once, here
        try:
            with s.transaction(w.session) as tx:
                self.serving.write(tx, w)
                s.insert_versions(tx, list(c.inserts.values()), stored)
                s.apply_updates(tx, c.updates, c.read)
                for e in c.erasures:
                    s.erase(tx, e.ids, e.hashes, e.fields, lineages=e.lineages, known=e.known)
                s.add_links(tx, c.links)
                first = s.enqueue(tx, c.outbox, w.now)
                w.audit_ids = s.write_audit(tx, c.audits)
                if accesses:
                    s.add_accesses(tx, dict(accesses), w.now)
        except BaseException:
            with self._access_lock:
                self._access.update(accesses)  # advisory counts: tried again with the next commit
            raise
        self.serving.written(w)
        if c.outbox:
            self._last_change = time.monotonic()
        self.backend.committed(w, first, accesses)

    def _model_switched(self, old: str, new: str) -> None:
        self.audit_rebuild(["vectors"], "agentmem", f"model changed from {old} to {new}", True)

    # -- reading -----------------------------------------------------------------------

    def get(self, memory_id: int) -> MemoryVersion:
        """One version by id (any status); NotFoundError if there is none."""
        if isinstance(memory_id, bool) or not isinstance(memory_id, int):
            raise ValidationError(f"memory id: expected a whole number, got {memory_id!r}")
        if not 0 < memory_id <= MAX_ID:  # beyond it no id is ever given out
            raise NotFoundError(f"no memory with id {memory_id}")
        found = self.store.get_many([memory_id])
        if not found:
            raise NotFoundError(f"no memory with id {memory_id}")
        return found[memory_id]

    def refresh(self) -> None:
        """Before a search: replay the outbox if an index write failed, and make every
        acknowledged change searchable."""
        self.backend.refresh()

    @property
    def index_stale(self) -> bool:
        """True while an index write has failed and the outbox has not been replayed yet."""
        return self.backend.stale

    def sync(self) -> None:
        """Bring the indexes up to the outbox; a failure leaves every write safe in the store."""
        self.backend.sync()

    # -- access counts, batched off the recall path -------------------------------------

    def note_access(self, ids: list[int]) -> None:
        with self._access_lock:
            self._access.update(ids)
            due = len(self._access) >= self.config.access_flush_every
        if due:
            self._wake.set()  # the background thread writes them; recall never waits on DuckDB

    def flush_access(self) -> None:
        """Write pending access counts now (they ride along with any commit anyway)."""
        if self._access:
            self.writer.run(lambda w: None)

    def _background(self) -> None:
        """Access counts every `access_flush_seconds`, the BM25 commit `text_commit_seconds`
        after the last change."""
        while not self._closing.is_set():
            self._wake.wait(min(self.config.access_flush_seconds, self.config.text_commit_seconds))
            self._wake.clear()
            if self._closing.is_set():
                return
            try:
                if self._access:
                    self.flush_access()
                if self.indexes.waiting() and time.monotonic() - self._last_change >= self.config.text_commit_seconds:
                    self.refresh()
            except Exception:  # logged and tried again on the next round
                log.exception("background index upkeep failed")

    # -- upkeep ------------------------------------------------------------------------

    def purge(self) -> None:
        """After a governance delete: rebuild BM25 from the store (deleted documents stay in
        Tantivy's segment files until a merge; a rebuild writes only what is current) and
        overwrite the erased vectors in the saved vector graph (the purge overwrote them in memory
        already). It runs beside the writer, not under it: other writes go on, and one rebuild
        serves every delete that was committed before it started."""
        with self._purge_lock:
            self._purge_asked += 1
            ticket = self._purge_asked
        with self._purge_lock:
            if self._purge_done >= ticket:
                return
            covers = self._purge_asked
            self.indexes.purge()
            self._purge_done = covers
        self.store.checkpoint()

    def check(self) -> Consistency:
        """Ids in each index against the latest active ids in DuckDB, and the store's own invariants
        (`Store.broken_invariants`: lineages, references, one current memory per key and slot)."""
        with self.writer.lock:
            report = self.indexes.check()
            problems = self.store.broken_invariants(self.clock(), sorted(NEVER_SUPERSEDED))
        return msgspec.structs.replace(report, store_problems=problems)

    def rebuild(self, which: list[str], *, actor: str) -> Consistency:
        """Rebuild indexes from DuckDB (no re-embedding) beside the live ones, then swap them in."""
        try:
            self.indexes.rebuild(which)
        except ValueError as exc:
            raise ValidationError(str(exc)) from None
        report = self.check()
        self.audit_rebuild(which, actor, "requested", report.ok)
        return report

    def audit_rebuild(self, which: list[str], actor: str, reason: str, ok: bool) -> None:
        entry = AuditEntry(
            created_at=self.clock(),
            action="rebuild",
            actor=actor,
            affected=len(self.live),
            reason=reason,
            details={"indexes": which, "ok": ok},
        )
        self.record([entry])

    def flush(self) -> None:
        """Write pending access counts, commit BM25 and save the vector graph."""
        self.flush_access()
        with self.writer.lock:
            self.sync()
            self.indexes.flush()

    def close(self) -> None:
        """Write pending access counts, persist the indexes, release the data directory."""
        self._closing.set()
        self._wake.set()
        self._thread.join(timeout=30)
        self.serving.stop()
        with self.writer.lock:
            try:
                self.flush_access()
            finally:
                try:
                    self.indexes.close()
                    if self.provider is not None:
                        self.provider.close()
                finally:
                    self.store.close()
