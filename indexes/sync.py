"""Keeps the BM25 and vector indexes equal to the store by replaying its outbox.

The store commits each change together with an outbox entry (seq, op, id). Each
index records the last seq it applied; on open it replays what it missed, and an
index that is missing, damaged or built for another model is rebuilt from the
store's documents (vectors come from the store, nothing is re-embedded).
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

import msgspec
import numpy as np
from tqdm import tqdm

from indexes.bm25 import BM25Index
from indexes.docs import Doc, IndexCorrupt, IndexFailure, OutboxEntry, StaleModel
from indexes.vectors import VectorIndex

log = logging.getLogger("agentmem")

BATCH = 5000


class Source(Protocol):
    """What the indexes need from the store of record."""

    def outbox_after(self, seq: int, limit: int) -> list[OutboxEntry]: ...

    def docs(self, ids: Sequence[int]) -> list[Doc]:
        """The documents among `ids` that should be indexed now, with their vectors."""
        ...

    def iter_docs(self, batch: int) -> Iterator[list[Doc]]: ...

    def indexable_count(self) -> int: ...

    def indexable_ids(self) -> set[int]: ...

    def last_seq(self) -> int: ...

    def prune_outbox(self, upto: int) -> None: ...


class IndexReport(msgspec.Struct, frozen=True):
    """How one index compares with the store."""

    name: str
    count: int
    applied_seq: int
    missing: list[int]
    extra: list[int]

    @property
    def ok(self) -> bool:
        return not self.missing and not self.extra


class Consistency(msgspec.Struct, frozen=True):
    """The invariant: the ids in each index equal the store's indexable ids; and the store's own
    invariants hold (`store_problems`, each a sentence, filled in by the store's owner)."""

    expected: int
    last_seq: int
    indexes: list[IndexReport]
    store_problems: list[str] = []

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.indexes) and not self.store_problems


def _progress(total: int, desc: str) -> tqdm:
    return tqdm(total=total, desc=desc, unit="doc", disable=not sys.stderr.isatty(), leave=False)


class IndexSet:
    """The two indexes under one data directory, opened, repaired and replayed together.

    `sync`, `flush`, `check` and the swap step of `rebuild` take `lock` (pass the store's writer
    lock); the long build step of a rebuild does not, and searches never do.
    """

    def __init__(
        self,
        path: Path,
        source: Source,
        *,
        dim: int,
        model: str,
        analysis: str = "",
        flush_every: int = 2000,
        lock: threading.RLock | None = None,
    ) -> None:
        self.path = path
        self.analysis = analysis  # the text analysis of the documents: a BM25 index of another is rebuilt
        self.source = source
        self.dim = dim
        self.model = model
        self.flush_every = flush_every
        self.rebuilt: list[str] = []
        self._holds: list[int] = []  # seqs that builds in progress still need from the outbox
        self._building = threading.Lock()  # one vector build at a time: they share a side directory
        self.closed = False
        # The writers' lock of the caller: outbox reads, prunes and index swaps happen under it.
        self._swap = lock or threading.RLock()
        path.mkdir(parents=True, exist_ok=True)
        self.bm25 = self._open_bm25()
        self.vectors = self._open_vectors()
        self.sync()

    def _open_bm25(self) -> BM25Index:
        try:
            ix = BM25Index(self.path / "bm25", analysis=self.analysis)
            if len(ix.ids()) != ix.count():
                ix.close()
                raise IndexCorrupt("BM25 id column does not match its document count")
            return ix
        except IndexCorrupt as exc:
            self._note_rebuild("bm25", self.path / "bm25", exc)
            with self._hold():
                self._install(self._build_bm25(), "bm25")
            return BM25Index(self.path / "bm25", analysis=self.analysis)

    def _open_vectors(self) -> VectorIndex:
        try:
            return VectorIndex(self.path / "vectors", self.dim, self.model)
        except IndexCorrupt as exc:
            self._note_rebuild("vectors", self.path / "vectors", exc)
            with self._hold():
                self._install(self._build_vectors(), "vectors")
            return VectorIndex(self.path / "vectors", self.dim, self.model)

    def _note_rebuild(self, name: str, path: Path, why: Exception) -> None:
        if path.exists() or self.source.last_seq() > 0:
            self.rebuilt.append(name)
            log.warning("rebuilding the %s index from the store: %s", name, why)
        else:
            log.info("creating the %s index", name)

    @contextmanager
    def _hold(self) -> Iterator[int]:
        """Keep the outbox from being pruned past now until a fresh index is built and swapped in."""
        with self._swap:
            seq = self.source.last_seq()
            self._holds.append(seq)
        try:
            yield seq
        finally:
            with self._swap:
                self._holds.remove(seq)

    def _fill(
        self,
        ix: BM25Index | VectorIndex,
        desc: str,
        source: Source | None = None,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> None:
        """Load every indexable document into an empty index, marking it as applied up to the hold."""
        seq = min(self._holds)
        source = source or self.source
        with _progress(source.indexable_count(), desc) as bar:
            for docs in source.iter_docs(BATCH):
                if cancelled():
                    raise IndexFailure("the build was cancelled")
                ix.apply(docs, [], seq=0)
                bar.update(len(docs))
        ix.apply([], [], seq=seq)

    def _build_bm25(self) -> Path:
        """A complete BM25 index in a side directory (a crash mid-build leaves the old one, or none)."""
        path = self.path / "bm25.rebuild"
        ix = BM25Index.create(path, self.analysis)
        try:
            self._fill(ix, "rebuild bm25")
        finally:
            ix.close()
        return path

    def _build_vectors(
        self, model: str | None = None, source: Source | None = None, cancelled: Callable[[], bool] = lambda: False
    ) -> Path:
        """A complete vector index in a side directory: of this index set's model, or of `model`
        with vectors from `source` (a model switch). The caller holds `_building`."""
        path = self.path / "vectors.rebuild"
        source = source or self.source
        capacity = int(source.indexable_count() * 1.25) + 1024
        ix = VectorIndex.create(path, self.dim, model or self.model, capacity=capacity)
        self._fill(ix, "rebuild vectors", source, cancelled)
        ix.flush(force=True)
        return path

    @contextmanager
    def model_switch(
        self, model: str, source: Source, ready: Callable[[], None], cancelled: Callable[[], bool] = lambda: False
    ) -> Iterator[Callable[[], None]]:
        """Build a vector index of another model beside the live one (searches go on against the
        live one); yields the function that swaps it in. The outbox is held from the start:
        `ready()` runs first and must leave `source` a vector for every version written so far
        (the build takes those), and the caller runs `install` holding the writers' lock once
        `source` has one for every version written since (the outbox replays those). Not swapped
        in: the build is dropped."""
        with self._building, self._hold():
            ready()
            built = self._build_vectors(model, source, cancelled)

            def install() -> None:
                with self._swap:
                    if self.closed:
                        raise IndexFailure("the index set was closed during the model switch")
                    self._install(built, "vectors")
                    self.source, self.model = source, model
                    self.vectors = VectorIndex(self.path / "vectors", self.dim, model)
                    self.sync()

            try:
                yield install
            finally:
                shutil.rmtree(built, ignore_errors=True)

    def _install(self, built: Path, name: str) -> None:
        """Move a completed build into place (the old directory, if any, goes)."""
        target = self.path / name
        old = target.with_name(name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        if target.exists():
            target.rename(old)
        built.rename(target)
        shutil.rmtree(old, ignore_errors=True)

    def sync(self) -> int:
        """Apply every outbox entry an index has not applied yet, and commit; returns how many
        entries were read. This is the replay path (open, repair, after a failed write)."""
        read = 0
        with self._swap:
            indexes: list[BM25Index | VectorIndex] = [self.bm25, self.vectors]
            while True:
                low = min(self._position(ix) for ix in indexes)
                entries = self.source.outbox_after(low, BATCH)
                if not entries:
                    break
                read += len(entries)
                # Only upserts need their documents; an id not found current is removed either way.
                docs = self.source.docs(list(dict.fromkeys(e.memory_id for e in entries if e.op == "upsert")))
                present = {d.id for d in docs}
                for ix in indexes:
                    mine = [e for e in entries if e.seq > self._position(ix)]
                    if not mine:
                        continue
                    ids = {e.memory_id for e in mine}
                    upserts, deletes = [d for d in docs if d.id in ids], [i for i in ids if i not in present]
                    self._apply(ix, upserts, deletes, [e.memory_id for e in mine if e.op == "purge"], entries[-1].seq)
            self.bm25.commit()
            if self.vectors.unsaved >= self.flush_every:
                self.vectors.flush()
            self._prune()
        return read

    @staticmethod
    def _position(ix: BM25Index | VectorIndex) -> int:
        """The last seq an index holds, searchable or waiting for its commit."""
        return ix.staged_seq if isinstance(ix, BM25Index) else ix.applied_seq

    def _apply(
        self, ix: BM25Index | VectorIndex, upserts: list[Doc], deletes: list[int], purges: list[int], seq: int
    ) -> None:
        if isinstance(ix, VectorIndex):
            ix.apply(upserts, deletes, seq=seq, scrub=purges)
        else:
            ix.apply(upserts, deletes, seq=seq, commit=False)

    def apply(self, upserts: list[Doc], deletes: list[int], purges: list[int], first: int, last: int) -> None:
        """Apply a committed batch whose documents the writer has at hand (outbox seqs `first` to
        `last`), without reading the store back; the BM25 commit waits for `refresh` or for
        `commit_due`. If either index is behind the batch, the outbox is replayed instead."""
        with self._swap:
            indexes: list[BM25Index | VectorIndex] = [self.bm25, self.vectors]
            if any(self._position(ix) != first - 1 for ix in indexes):
                self.sync()
                return
            for ix in indexes:
                self._apply(ix, upserts, [*deletes, *purges], purges, last)
            if self.vectors.unsaved >= self.flush_every:
                self.vectors.flush()
                self._prune()

    def waiting(self) -> list[int]:
        """Ids upserted into the BM25 writer that wait for a commit (text search misses them)."""
        return list(self.bm25.waiting_ids)

    def refresh(self) -> None:
        """Make every applied change searchable (read your writes): commit what waits in BM25."""
        ix = self.bm25
        try:
            ix.commit()
        except IndexFailure:
            if ix is self.bm25:
                raise
            self.bm25.commit()  # swapped for a rebuilt index meanwhile: that one is caught up

    def _prune(self) -> None:
        done = min([self.bm25.applied_seq, self.vectors.saved_seq, *self._holds])
        if done > 0:
            self.source.prune_outbox(done)

    def lag(self) -> int:
        """How many outbox entries the slower index has still to apply (a change waiting in the
        BM25 writer counts as applied: the next search commits it)."""
        return max(0, self.source.last_seq() - self._behind())

    def pending_ids(self) -> set[int]:
        """The memory ids of the outbox entries that `lag` counts."""
        lag = self.lag()
        return {e.memory_id for e in self.source.outbox_after(self._behind(), lag)} if lag else set()

    def _behind(self) -> int:
        return min(self.bm25.staged_seq, self.vectors.applied_seq)

    def rebuild(self, which: Sequence[str] = ("bm25", "vectors")) -> None:
        """Build fresh indexes beside the live ones, then swap them in and catch them up.

        Searches go on against the old indexes while the new ones are built; the outbox is
        held (not pruned) from the start of each build until its swap.
        """
        unknown = set(which) - {"bm25", "vectors"}
        if unknown:
            raise ValueError(f"unknown index {sorted(unknown)}: choose bm25 or vectors")
        for name in ("bm25", "vectors"):
            if name not in which:
                continue
            with self._building if name == "vectors" else contextlib.nullcontext(), self._hold():
                built = self._build_bm25() if name == "bm25" else self._build_vectors()
                with self._swap:
                    if self.closed:
                        raise IndexFailure("the index set was closed during the rebuild")
                    if name == "bm25":
                        self.bm25.close()
                        self._install(built, "bm25")
                        self.bm25 = BM25Index(self.path / "bm25", analysis=self.analysis)
                    else:
                        self._install(built, "vectors")
                        self.vectors = VectorIndex(self.path / "vectors", self.dim, self.model)
                    self.sync()

    def check(self) -> Consistency:
        """Compare each index's ids with the store's indexable ids (after applying the outbox)."""
        with self._swap:
            self.sync()
            expected = self.source.indexable_ids()
            reports = []
            for name, ix in (("bm25", self.bm25), ("vectors", self.vectors)):
                got = ix.ids()
                reports.append(
                    IndexReport(
                        name=name,
                        count=len(got),
                        applied_seq=ix.applied_seq,
                        missing=sorted(expected - got),
                        extra=sorted(got - expected),
                    )
                )
            return Consistency(expected=len(expected), last_seq=self.source.last_seq(), indexes=reports)

    def search_text(
        self,
        text: str,
        k: int,
        *,
        project: str | None = None,
        agents: Sequence[str] = (),
        kinds: Sequence[str] = (),
        tiers: Sequence[str] = (),
    ) -> list[tuple[int, float]]:
        return self.bm25.search(text, k, project=project, agents=agents, kinds=kinds, tiers=tiers)

    def search_vector(
        self, vector: np.ndarray, k: int, *, project: str | None = None, model: str | None = None
    ) -> list[tuple[int, float]]:
        """Nearest current ids; `model`, the one that made `vector`, must be this index's (else StaleModel)."""
        ix = self.vectors
        if model is not None and model != ix.model:
            raise StaleModel(f"a {model} query vector for a {ix.model} index")
        return ix.search(vector, k, project=project)

    def vectors_of(self, ids: Sequence[int], project: str | None = None) -> dict[int, np.ndarray]:
        """The indexed vectors of these ids (those it holds; `project` narrows nothing: this index
        holds one data directory's every project)."""
        return self.vectors.vectors_of(ids)

    def ids(self, which: str) -> set[int]:
        """The ids one index ("bm25" or "vectors") holds."""
        return (self.bm25 if which == "bm25" else self.vectors).ids()

    def sizes(self, ids: set[int] | None = None) -> tuple[int, int]:
        """How many documents each index holds (of `ids` when given): (bm25, vectors)."""
        if ids is None:
            return self.bm25.count(), self.vectors.count()
        return len(self.bm25.ids() & ids), len(self.vectors.ids() & ids)

    def purge(self) -> None:
        """After a governance delete: rebuild BM25 (deleted documents stay in Tantivy's segment
        files until a merge; a rebuild writes only what is current) and overwrite the erased
        vectors in the saved vector graph."""
        self.rebuild(["bm25"])
        self.vectors.erase_from_file()

    def flush(self) -> None:
        with self._swap:
            self.bm25.commit()
            self.vectors.flush()
            self._prune()

    def close(self) -> None:
        with self._swap:
            self.flush()
            self.bm25.close()
            self.closed = True
