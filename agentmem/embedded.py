"""The embedded backend: one data directory's DuckDB file, the live set in memory, and Tantivy and
hnswlib fed by the outbox.

After each commit the live set and both indexes apply the unit once; a failed index write leaves
the change safe in DuckDB and is replayed from the outbox before the next search.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import msgspec
from tqdm import tqdm

from agentmem.config import Config
from agentmem.currentness import analysis
from agentmem.documents import ANALYSIS, StoreSource, doc_of
from agentmem.filters import Filter
from agentmem.live import LiveSet
from agentmem.store import Store
from agentmem.store import compact as compact_file
from agentmem.unit import Write
from indexes.docs import Doc, IndexFailure
from indexes.sync import IndexSet

log = logging.getLogger("agentmem")

DB_FILE = "agentmem.duckdb"


def compact(path: Path) -> tuple[int, int]:
    """Rewrite a closed data directory's DuckDB file so erased content leaves the disk; its sizes
    before and after (PostgreSQL has VACUUM FULL)."""
    return compact_file(path / DB_FILE)


class Embedded:
    """The store, live set and indexes of one data directory (see `agentmem.backend.Backend`)."""

    changes_model = True

    def __init__(self, path: Path, *, dim: int, config: Config) -> None:
        self.path, self.dim, self.config = path, dim, config
        self.store = Store(path / DB_FILE, threads=config.store_threads)
        try:
            self.live = LiveSet(self.store.versions(Filter(current_only=True)))
            self._read_analyses()
        except BaseException:
            self.store.close()
            raise
        self._stale = False

    def _read_analyses(self) -> None:
        """The current versions' stored text analyses into the live set (decoded when first
        read). Those this code's `analysis.VERSION` did not make (a data directory written before
        it) are made again and stored, once."""
        rows = self.store.current_analyses()
        self.live.hold_stored((i, data) for i, data in rows if data is not None and analysis.current(data))
        todo = self.live.missing_analyses()
        if not todo:
            return
        log.info("analysing %d memories for currentness (analysis version %d)", len(todo), analysis.VERSION)
        bar = tqdm(todo, desc="analyse", unit="memory", disable=not sys.stderr.isatty(), leave=False)
        made, data = analysis.of_new(bar)
        with self.store.transaction() as tx:
            self.store.put_analyses(tx, data)
        self.live.hold_analyses(made)

    def open_indexes(self, model: str, lock: threading.RLock) -> None:
        self._lock = lock
        self.source = StoreSource(self.store, model)
        self.indexes = IndexSet(
            self.path / "index",
            self.source,
            dim=self.dim,
            model=model,
            analysis=ANALYSIS,
            flush_every=self.config.vector_flush_every,
            lock=lock,
        )

    def new_unit(self, now: datetime, start_confidence: Callable[[str], float]) -> Write:
        return Write(self.live, self.store.allocate_id, now, start_confidence)

    def committed(self, w: Write, first: int, accesses: Counter[int]) -> None:
        c = w.changes
        self.live.apply(c.gone, c.added, w.analyses)
        for memory_id, n in accesses.items():
            m = self.live.get(memory_id)
            if m is not None:
                self.live.put(msgspec.structs.replace(m, accesses=m.accesses + n, last_accessed_at=w.now))
        if c.outbox:
            self._index(w, first)

    def _index(self, w: Write, first: int) -> None:
        """Apply a committed unit's outbox entries to both indexes; a failure leaves them to replay."""
        c = w.changes
        try:
            touched = list(dict.fromkeys(i for _, i in c.outbox))
            docs: list[Doc] = []
            fetch = []
            for i in (i for i in touched if i in self.live):
                v = c.inserts.get(i)
                vector = w.vectors.get(v.content_hash) if v is not None else None
                parent = c.added.get(v.parent_id) if v is not None and v.parent_id is not None else None
                if v is not None and vector is not None and v.version == 1:
                    docs.append(doc_of(v, vector))  # a new lineage: nothing superseded to carry
                elif v is not None and vector is not None and parent is not None and parent.version == 1:
                    docs.append(doc_of(v, vector, [parent.content]))  # the one version it replaced
                else:
                    fetch.append(i)  # a longer history, or a version brought back: read it from the store
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

    @property
    def stale(self) -> bool:
        return self._stale

    def refresh(self) -> None:
        if self._stale:
            self.sync()
        try:
            self.indexes.refresh()
        except IndexFailure as exc:
            self._stale = True
            log.warning("index commit failed, will replay from the outbox: %s", exc)

    def sync(self) -> None:
        try:
            with self._lock:
                self.indexes.sync()
            self._stale = False
        except Exception as exc:
            self._stale = True
            log.warning("index update failed, will replay from the outbox: %s", exc)

    @contextmanager
    def model_switch(
        self, model: str, catch_up: Callable[[], None], cancelled: Callable[[], bool]
    ) -> Iterator[Callable[[], None]]:
        source = StoreSource(self.store, model)
        with self.indexes.model_switch(model, source, catch_up, cancelled=cancelled) as install:

            def switch() -> None:
                install()
                self.source = source

            yield switch
