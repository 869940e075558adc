"""The engine of one data directory (or one node on a shared database): the store of record,
the live set, the indexes and the writer.

Every change goes through one write unit; after each commit the live set and the indexes apply it
once, and a failed index write is replayed from the outbox. How a write flows:
docs/design/architecture.md and docs/design/modules.md#engine.
"""

from __future__ import annotations

import functools
import logging
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

import msgspec
import numpy as np
from tqdm import tqdm

from agentmem.audit import AuditEntry
from agentmem.backend import Indexes, Live
from agentmem.config import Config
from agentmem.documents import ANALYSIS, StoreSource, doc_of
from agentmem.errors import IndexUnavailableError, NotFoundError, StoreError, ValidationError
from agentmem.filters import Filter
from agentmem.live import LiveSet
from agentmem.provider import Provider
from agentmem.records import MemoryVersion, Reembedding
from agentmem.store import RetryConflict, Store, StoreOfRecord, compact
from agentmem.supersede import NEVER_SUPERSEDED
from agentmem.unit import Write
from agentmem.validate import MAX_ID
from agentmem.writer import Writer
from indexes.docs import Doc, IndexFailure
from indexes.embed import EmbedBatcher, Embedder, embed_query
from indexes.onnx_embed import embedder_named
from indexes.sync import Consistency, IndexSet

log = logging.getLogger("agentmem")

DB_FILE = "agentmem.duckdb"

T = TypeVar("T")
CURRENT = Filter(current_only=True)


P = ParamSpec("P")


class ModelChanged(Exception):
    """A write embedded with one model reached the writer after a change of model: run it again."""


_embedding = threading.local()  # the model this thread's write (see `gated`) embeds with


def gated(write: Callable[Concatenate[Engine, P], T]) -> Callable[Concatenate[Engine, P], T]:
    """A write that embeds outside the writer and commits later. Each of its jobs checks, under
    the writer, that the model it embedded with still serves; if a change of model landed in
    between, the whole write runs again with the new one (its vectors are never stored under
    another model's name, and nothing waits for anything)."""

    @functools.wraps(write)
    def inside(engine: Engine, *args: P.args, **kwargs: P.kwargs) -> T:
        outer = getattr(_embedding, "model", None)
        try:
            while True:
                _embedding.model = engine.model
                try:
                    return write(engine, *args, **kwargs)
                except ModelChanged:
                    log.info("the model changed during a write: running it again")
        finally:
            _embedding.model = outer

    return inside


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
        self.target = embedder  # the configured model; served once every version has its vector
        self.embedder = embedder  # the model that serves now (the stored one, while re-embedding)
        self.config = config
        self.clock = clock
        self.model = embedder.name
        self.database_url = database_url
        self.reembedding: Reembedding | None = None
        self._embedded: set[int] = set()
        self._held: set[int] = set()
        self._reembed_thread: threading.Thread | None = None
        self._access: Counter[int] = Counter()
        self._access_lock = threading.Lock()
        self._stale = False
        self._last_change = 0.0
        self._wake = threading.Event()
        self._closing = threading.Event()
        self._purge_lock = threading.Lock()
        self._purge_asked = 0
        self._purge_done = 0
        self.source: StoreSource | None = None
        self.store: StoreOfRecord
        self.live: Live
        self.indexes: Indexes
        if database_url:
            from agentmem import postgres  # psycopg only for those who ask for PostgreSQL

            pg = postgres.PgStore(
                database_url, model=self.model, dim=embedder.dim, lock_timeout=config.lock_timeout_seconds
            )
            self.store, self.live = pg, postgres.LiveView(pg)
        else:
            duck = Store(path / DB_FILE)
            self.store = duck
        try:
            if not database_url:
                self.live = LiveSet(duck.versions(CURRENT))
            self.writer = Writer(
                self._new_unit,
                self._commit,
                abort=self._abort,
                retryable=(RetryConflict,),
                deadline=config.retry_deadline_seconds,
            )
            if not database_url:
                self.embedder = self._serving(embedders)
                self.model = self.embedder.name
            self._batcher = EmbedBatcher(self.embedder)
            self._queries = self.embedder
            self._backfill_embeddings()
            # which contents have a stored vector: a new text skips the store lookup and the
            # insert's existence check (kept in step by _commit, under the writer)
            self._embedded = {_hash_key(h) for h in self.store.embedded_hashes(self.model)}
            self._held = {_held_key(p, h) for p, h in self.store.held_embedded(self.model)}
            if database_url:
                self.indexes = postgres.PgIndexes(pg)
            else:
                self.source = StoreSource(duck, self.model)
                self.indexes = IndexSet(
                    path / "index",
                    self.source,
                    dim=embedder.dim,
                    model=self.model,
                    analysis=ANALYSIS,
                    flush_every=config.vector_flush_every,
                    lock=self.writer.lock,
                )
            self.provider = Provider(config.provider, self.store, self.writer.lock) if config.provider else None
            if self.indexes.rebuilt:
                why = "index missing, damaged or of another text analysis on open"
                self.audit_rebuild(list(self.indexes.rebuilt), "startup", why, True)
        except BaseException:
            self.store.close()
            raise
        self._thread = threading.Thread(target=self._background, name="agentmem-background", daemon=True)
        self._thread.start()
        todo = 0 if database_url else self.store.unembedded_count(self.target.name)
        if todo:
            self.reembedding = Reembedding(model=self.target.name, done=0, total=todo)
            self._reembed_thread = threading.Thread(target=self._reembed, name="agentmem-reembed", daemon=True)
            self._reembed_thread.start()

    # -- writing -----------------------------------------------------------------------

    def run(self, job: Callable[[Write], T]) -> T:
        """Run `job` in the next group commit; its result once the batch is durable and applied."""
        return self.writer.run(self._checked(job))

    @contextmanager
    def write(self) -> Iterator[Write]:
        """A unit of its own, committed on exit: the store it reads holds every acknowledged write."""
        with self.writer.exclusive() as w:
            self._checked(lambda w: None)(w)
            yield w

    def run_alone(self, job: Callable[[Write], T]) -> T:
        """`job` in a unit of its own (as `write`), run again when a shared store reports that
        another node changed what it read (`Writer.run_alone`)."""
        return self.writer.run_alone(self._checked(job))

    def _checked(self, job: Callable[[Write], T]) -> Callable[[Write], T]:
        """`job`, refused (ModelChanged) if the `gated` write it belongs to embedded with a model
        that no longer serves by the time it runs under the writer."""
        model = getattr(_embedding, "model", None)
        if model is None:
            return job

        def checked(w: Write) -> T:
            if model != self.model:
                raise ModelChanged(f"embedded with {model}, {self.model} serves now")
            return job(w)

        return checked

    @staticmethod
    def compact(path: Path) -> tuple[int, int]:  # DuckDB only: PostgreSQL has VACUUM FULL
        """Rewrite a closed data directory's DuckDB file so erased content leaves the disk."""
        return compact(path / DB_FILE)

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
        session = self.store.open_unit()
        if session is None:
            return Write(self.live, self.store.allocate_id, self.clock(), lambda kind: kinds[kind].start_confidence)
        return Write(session.current, session.allocate_id, self.clock(), lambda kind: kinds[kind].start_confidence,
                     session)  # fmt: skip

    def _abort(self, w: Write) -> None:
        self.store.abort(w.session)

    def _commit(self, w: Write) -> None:
        with self._access_lock:
            accesses, self._access = self._access, Counter()
        if w.empty and not accesses:
            self._abort(w)  # nothing to write: a shared store's transaction ends (and its locks go)
            return
        c, s = w.changes, self.store
        try:
            with s.transaction(w.session) as tx:
                for new in (True, False):  # hashes not stored before (a plain insert), and the others
                    part = {h: v for h, v in c.embeddings.items() if (_hash_key(h) not in self._embedded) is new}
                    if part:
                        s.put_embeddings(tx, list(part), self.model, np.stack(list(part.values())), new=new)
                if s.shared and w.vectors:  # stored per project with the versions: it needs them all
                    s.put_embeddings(tx, list(w.vectors), self.model, np.stack(list(w.vectors.values())))
                s.insert_versions(tx, list(c.inserts.values()))
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
        self._embedded.update(_hash_key(h) for h in c.embeddings)
        self._held.update(_held_key(v.project, h) for v in c.inserts.values() if (h := v.content_hash) in w.vectors)
        for e in c.erasures:  # an erased text is no longer held (its vector may be gone, or another's)
            self._held.difference_update(_held_key(p, h) for p in {p for p, _ in e.lineages} for h in e.hashes)
        if s.shared:
            return  # the database's current versions and search changed in the transaction
        self.live.apply(c.gone, c.added)
        for memory_id, n in accesses.items():
            m = self.live.get(memory_id)
            if m is not None:
                self.live.put(msgspec.structs.replace(m, accesses=m.accesses + n, last_accessed_at=w.now))
        if c.outbox:
            self._last_change = time.monotonic()
            self._index(w, first)

    def _index(self, w: Write, first: int) -> None:
        """Apply a committed unit's outbox entries to both indexes; a failure leaves them to replay."""
        c = w.changes
        try:
            touched = list(dict.fromkeys(i for _, i in c.outbox))
            current = [i for i in touched if i in self.live]
            docs: list[Doc] = []
            fetch = []
            for i in current:
                v = c.inserts.get(i)
                vector = w.vectors.get(v.content_hash) if v is not None else None
                parent = c.added.get(v.parent_id) if v is not None and v.parent_id is not None else None
                if v is not None and vector is not None and v.version == 1:
                    docs.append(doc_of(v, vector))  # a new lineage: nothing superseded to carry
                elif v is not None and vector is not None and parent is not None and parent.version == 1:
                    docs.append(doc_of(v, vector, [parent.content]))  # the one version it replaced
                else:
                    fetch.append(i)  # a longer history, or a version brought back: read it from the store
            assert self.source is not None
            docs += self.source.docs(fetch)
            present = {d.id for d in docs}
            purges = [i for op, i in c.outbox if op == "purge"]
            deletes = [i for i in touched if i not in present and i not in set(purges)]
            self.indexes.apply(docs, deletes, purges, first, first + len(c.outbox) - 1)
            if len(self.indexes.waiting()) >= self.config.text_commit_every:
                self.indexes.refresh()
            self._stale = False
        except Exception as exc:  # the change is committed: never fail it for an index problem
            self._stale = True
            log.warning("index update failed, will replay from the outbox: %s", exc)

    # -- vectors -----------------------------------------------------------------------

    def embed(self, texts: list[str]) -> np.ndarray:
        """Vectors for `texts`, embedded together with other callers' waiting texts."""
        try:
            return self._batcher.embed(texts)
        except IndexFailure as exc:
            raise IndexUnavailableError(str(exc)) from exc

    @property
    def query_embedder(self) -> Embedder:
        return self._queries

    @query_embedder.setter
    def query_embedder(self, embedder: Embedder) -> None:
        """Embed queries with another instance of the serving model (its own cache, threads)."""
        if (embedder.name, embedder.dim) != (self.model, self.embedder.dim):
            raise ValidationError(f"queries must be embedded with {self.model}, not {embedder.name}")
        self._queries = embedder

    def embed_query(self, text: str) -> tuple[np.ndarray, str]:
        """A recall's query vector and its model, from the embedder's cache when the query came
        recently. Each query is embedded on its own: on this model and CPU a batch of short queries
        costs as much a query as one alone (`python -m benchmarks.embedders`), so concurrent
        recalls run side by side instead."""
        embedder = self._queries  # read once: a change of model swaps it
        return embed_query(embedder, text), embedder.name

    def vector_for(self, project: str, content: str, content_hash: str) -> tuple[np.ndarray, bool]:
        """The vector of this content for a write to `project`, and whether it is stored already
        (see `held_vectors`; else it is embedded now, outside the writer)."""
        found = None
        if self._holds(project, content_hash):
            found = self.store.vector(content_hash, self.model, project=project)
        if found is not None:
            return found, True
        return self.embed([content])[0], False

    def held_vectors(self, project: str, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """Stored vectors, by content hash, of the texts `project` itself holds. A text that only
        another project holds is embedded again: neither the vector a write gets nor how long it
        takes tells one project what another stores (a vector is never reused across projects)."""
        mine = [h for h in dict.fromkeys(hashes) if self._holds(project, h)]
        return self.store.vectors(mine, self.model, project=project) if mine else {}

    def _holds(self, project: str, content_hash: str) -> bool:
        return _held_key(project, content_hash) in self._held

    # -- a change of model -------------------------------------------------------------

    def _serving(self, embedders: Callable[[str], Embedder | None]) -> Embedder:
        """The model to serve with now: the configured one if every current version has its vector;
        else the stored model that has them all, if this package can load it (recall answers from
        the old vectors while `_reembed` makes the new ones); else the configured one, after
        `_backfill_embeddings` embeds the current versions before the engine opens."""
        if not self.store.unembedded_count(self.target.name, current_only=True):
            return self.target
        stored = sorted(self.store.embedding_models().items(), key=lambda kv: (-kv[1], kv[0]))
        for model, _ in stored:
            if model == self.target.name or self.store.unembedded_count(model, current_only=True):
                continue
            old = embedders(model)
            if old is not None and old.dim == self.target.dim:
                log.warning("serving with %s while every version is re-embedded for %s", model, self.target.name)
                return old
        return self.target

    def _backfill_embeddings(self) -> None:
        """Embed the current memories that have no vector for the serving model, before opening
        (a new model that no stored one can stand in for); past versions follow in `_reembed`."""
        todo = self.store.unembedded_count(self.model, current_only=True)
        if not todo:
            return
        if self.store.shared:
            raise StoreError(
                f"{todo} current memories have no {self.model} vector in the database: a change of model "
                "is not supported on PostgreSQL yet; start with the model the database was written with"
            )
        log.warning("embedding %d memories for model %s", todo, self.model)
        with tqdm(total=todo, desc=f"embed {self.model}", unit="memory", disable=not sys.stderr.isatty(),
                  leave=False) as bar:  # fmt: skip
            while rows := self.store.unembedded(self.model, current_only=True, limit=256):
                self._put_vectors(rows, self.embedder)
                bar.update(len(rows))

    def _put_vectors(self, rows: list[tuple[str, str]], embedder: Embedder) -> None:
        """Embed `rows` (hash, text) outside the writer; store the vectors of those a version still
        holds (a governance delete may have erased one meanwhile: its vector must not come back)."""
        vectors = dict(zip((h for h, _ in rows), embedder.embed([c for _, c in rows]), strict=True))
        with self.writer.lock:
            held = [h for h in self.store.held_hashes(list(vectors)) if h in vectors]
            if held:
                with self.store.transaction() as tx:
                    self.store.put_embeddings(tx, held, embedder.name, np.stack([vectors[h] for h in held]))
            if embedder.name == self.model:  # a later write of the same text reuses it (no second insert)
                self._embedded.update(_hash_key(h) for h in held)

    def _reembed(self) -> None:
        """Give every version (past ones too: `as_of` and history searches use them) a vector of
        the configured model, 256 at a time, each batch committed (a kill loses at most one and
        the next open goes on from there); then, if another model serves, switch to it."""
        target, progress = self.target, self.reembedding
        assert progress is not None
        log.warning("re-embedding %d versions for model %s", progress.total, target.name)
        try:
            with tqdm(total=progress.total, desc=f"re-embed {target.name}", unit="version",
                      disable=not sys.stderr.isatty(), leave=False) as bar:  # fmt: skip
                while not self._closing.is_set() and (rows := self.store.unembedded(target.name, limit=256)):
                    self._put_vectors(rows, target)
                    bar.update(len(rows))
                    progress.done += len(rows)
                    if len(rows) < 256:  # caught up with the writes: `_switch` embeds the last ones
                        break
            if self._closing.is_set():
                return
            if self.embedder is not target:
                old = self.model
                self._switch(target)
                self.audit_rebuild(["vectors"], "agentmem", f"model changed from {old} to {target.name}", True)
            log.warning("every version has a %s vector; serving with it", target.name)
            self.reembedding = None
        except Exception as exc:  # the old model goes on serving; the next open starts again
            if not self._closing.is_set():
                progress.error = str(exc)
                log.exception("re-embedding for %s failed", target.name)

    def _switch(self, target: Embedder) -> None:
        """Swap in a vector index of `target` built beside the live one, and serve with `target`.
        A write embedded with the old model and not committed yet runs again (`gated`); a recall
        whose query vector meets the other model's index embeds it again (`StaleModel`)."""
        assert isinstance(self.store, Store) and isinstance(self.indexes, IndexSet)
        source = StoreSource(self.store, target.name)

        def catch_up() -> None:  # the versions written since the last pass
            while rows := self.store.unembedded(target.name, limit=256):
                self._put_vectors(rows, target)
                if len(rows) < 256:
                    return

        switch = self.indexes.model_switch(target.name, source, catch_up, cancelled=self._closing.is_set)
        with switch as install, self.writer.lock:
            catch_up()
            install()
            self.embedder, self.model, self.source = target, target.name, source
            self._batcher = EmbedBatcher(target)
            self._queries = target
            self._embedded = {_hash_key(h) for h in self.store.embedded_hashes(target.name)}
            self._held = {_held_key(p, h) for p, h in self.store.held_embedded(target.name)}

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
        if self._stale:
            with self.writer.lock:
                self.sync()
        try:
            self.indexes.refresh()
        except IndexFailure as exc:
            self._stale = True
            log.warning("index commit failed, will replay from the outbox: %s", exc)

    @property
    def index_stale(self) -> bool:
        """True while an index write has failed and the outbox has not been replayed yet."""
        return self._stale

    def sync(self) -> None:
        """Bring the indexes up to the outbox; a failure leaves every write safe in DuckDB."""
        try:
            with self.writer.lock:
                self.indexes.sync()
            self._stale = False
        except Exception as exc:
            self._stale = True
            log.warning("index update failed, will replay from the outbox: %s", exc)

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
        if self._reembed_thread is not None:
            self._reembed_thread.join(timeout=30)
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


def _hash_key(content_hash: str) -> int:
    """A content hash as a machine-word int (Python's own string hash: the set lives in this
    process only): the set of stored ones stays small, and a collision only costs a store lookup."""
    return hash(content_hash)


def _held_key(project: str, content_hash: str) -> int:
    """`_hash_key` of a text held by one project."""
    return hash((project, content_hash))
