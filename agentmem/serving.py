"""Which embedding model serves, the vectors it gives, and a change of model.

`Serving` picks the model at open (the configured one, or a stored one that stands in while every
version is re-embedded), embeds texts and queries, knows which texts already have a stored vector,
and switches models once the new vectors are all written. A write that embedded with a model that
no longer serves runs again (`gated`, `ModelChanged`). How it fits: docs/design/modules.md#engine.
"""

from __future__ import annotations

import functools
import logging
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

import numpy as np
from tqdm import tqdm

from agentmem.backend import Backend
from agentmem.errors import IndexUnavailableError, StoreError, ValidationError
from agentmem.records import Reembedding
from agentmem.unit import Write
from indexes.docs import IndexFailure
from indexes.embed import EmbedBatcher, Embedder, embed_query

log = logging.getLogger("agentmem")

T = TypeVar("T")
P = ParamSpec("P")
BATCH = 256  # versions embedded and committed together while re-embedding


class ModelChanged(Exception):
    """A write embedded with one model reached the writer after a change of model: run it again."""


class Gated(Protocol):
    """What `gated` needs of the object whose method it wraps: the model serving now."""

    @property
    def serving(self) -> Serving: ...


_embedding = threading.local()  # the model this thread's write (see `gated`) embeds with
G = TypeVar("G", bound=Gated)


def gated(write: Callable[Concatenate[G, P], T]) -> Callable[Concatenate[G, P], T]:
    """A write that embeds outside the writer and commits later. Each of its jobs checks, under
    the writer, that the model it embedded with still serves (`checked`); if a change of model
    landed in between, the whole write runs again with the new one (its vectors are never stored
    under another model's name, and nothing waits for anything)."""

    @functools.wraps(write)
    def inside(owner: G, *args: P.args, **kwargs: P.kwargs) -> T:
        outer = getattr(_embedding, "model", None)
        try:
            while True:
                _embedding.model = owner.serving.model
                try:
                    return write(owner, *args, **kwargs)
                except ModelChanged:
                    log.info("the model changed during a write: running it again")
        finally:
            _embedding.model = outer

    return inside


class Serving:
    """The serving model of one engine and the vectors it gives."""

    def __init__(
        self,
        target: Embedder,
        backend: Backend,
        lock: threading.RLock,
        *,
        embedders: Callable[[str], Embedder | None],
        switched: Callable[[str, str], None],
    ) -> None:
        self.target = target  # the configured model; served once every version has its vector
        self._backend = backend
        self._store = backend.store
        self._lock = lock
        self._switched = switched
        self.embedder = self._pick(embedders) if backend.changes_model else target
        self.model = self.embedder.name
        self._batcher = EmbedBatcher(self.embedder)
        self._queries = self.embedder
        self.reembedding: Reembedding | None = None
        self._thread: threading.Thread | None = None
        self._closing = threading.Event()
        self._embedded: set[int] = set()
        self._held: set[int] = set()
        self._backfill()
        self._remember_stored()

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
            found = self._store.vector(content_hash, self.model, project=project)
        if found is not None:
            return found, True
        return self.embed([content])[0], False

    def held_vectors(self, project: str, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """Stored vectors, by content hash, of the texts `project` itself holds. A text that only
        another project holds is embedded again: neither the vector a write gets nor how long it
        takes tells one project what another stores (a vector is never reused across projects)."""
        mine = [h for h in dict.fromkeys(hashes) if self._holds(project, h)]
        return self._store.vectors(mine, self.model, project=project) if mine else {}

    def checked(self, job: Callable[[Write], T]) -> Callable[[Write], T]:
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

    def write(self, tx: Any, w: Write) -> None:
        """Inside a unit's transaction: store the vectors of its texts (a plain insert for texts
        with no stored vector yet)."""
        embeddings = w.changes.embeddings
        for new in (True, False):
            part = {h: v for h, v in embeddings.items() if (_hash_key(h) not in self._embedded) is new}
            if part:
                self._store.put_embeddings(tx, list(part), self.model, np.stack(list(part.values())), new=new)
        self._store.put_unit_vectors(tx, w.vectors, self.model)

    def written(self, w: Write) -> None:
        """After a unit's commit: which texts now have a stored vector, and which projects hold them."""
        c = w.changes
        self._embedded.update(_hash_key(h) for h in c.embeddings)
        self._held.update(_held_key(v.project, h) for v in c.inserts.values() if (h := v.content_hash) in w.vectors)
        for e in c.erasures:  # an erased text is no longer held (its vector may be gone, or another's)
            self._held.difference_update(_held_key(p, h) for p in {p for p, _ in e.lineages} for h in e.hashes)

    def _holds(self, project: str, content_hash: str) -> bool:
        return _held_key(project, content_hash) in self._held

    def _remember_stored(self) -> None:
        # which contents have a stored vector: a new text skips the store lookup and the
        # insert's existence check (kept in step by `written`, under the writer)
        self._embedded = {_hash_key(h) for h in self._store.embedded_hashes(self.model)}
        self._held = {_held_key(p, h) for p, h in self._store.held_embedded(self.model)}

    # -- a change of model -------------------------------------------------------------

    def start(self) -> None:
        """Re-embed every version for the configured model in the background, if any lacks one."""
        todo = self._store.unembedded_count(self.target.name) if self._backend.changes_model else 0
        if todo:
            self.reembedding = Reembedding(model=self.target.name, done=0, total=todo)
            self._thread = threading.Thread(target=self._reembed, name="agentmem-reembed", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._closing.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _pick(self, embedders: Callable[[str], Embedder | None]) -> Embedder:
        """The model to serve with now: the configured one if every current version has its vector;
        else the stored model that has them all, if this package can load it (recall answers from
        the old vectors while `_reembed` makes the new ones); else the configured one, after
        `_backfill` embeds the current versions before the engine opens."""
        if not self._store.unembedded_count(self.target.name, current_only=True):
            return self.target
        stored = sorted(self._store.embedding_models().items(), key=lambda kv: (-kv[1], kv[0]))
        for model, _ in stored:
            if model == self.target.name or self._store.unembedded_count(model, current_only=True):
                continue
            old = embedders(model)
            if old is not None and old.dim == self.target.dim:
                log.warning("serving with %s while every version is re-embedded for %s", model, self.target.name)
                return old
        return self.target

    def _backfill(self) -> None:
        """Embed the current memories that have no vector for the serving model, before opening
        (a new model that no stored one can stand in for); past versions follow in `_reembed`."""
        todo = self._store.unembedded_count(self.model, current_only=True)
        if not todo:
            return
        if not self._backend.changes_model:
            raise StoreError(
                f"{todo} current memories have no {self.model} vector in the database: a change of model "
                "is not supported on PostgreSQL yet; start with the model the database was written with"
            )
        log.warning("embedding %d memories for model %s", todo, self.model)
        with tqdm(total=todo, desc=f"embed {self.model}", unit="memory", disable=not sys.stderr.isatty(),
                  leave=False) as bar:  # fmt: skip
            while rows := self._store.unembedded(self.model, current_only=True, limit=BATCH):
                self._put_vectors(rows, self.embedder)
                bar.update(len(rows))

    def _put_vectors(self, rows: list[tuple[str, str]], embedder: Embedder) -> None:
        """Embed `rows` (hash, text) outside the writer; store the vectors of those a version still
        holds (a governance delete may have erased one meanwhile: its vector must not come back)."""
        vectors = dict(zip((h for h, _ in rows), embedder.embed([c for _, c in rows]), strict=True))
        with self._lock:
            held = [h for h in self._store.held_hashes(list(vectors)) if h in vectors]
            if held:
                with self._store.transaction() as tx:
                    self._store.put_embeddings(tx, held, embedder.name, np.stack([vectors[h] for h in held]))
            if embedder.name == self.model:  # a later write of the same text reuses it (no second insert)
                self._embedded.update(_hash_key(h) for h in held)

    def _reembed(self) -> None:
        """Give every version (past ones too: `as_of` and history searches use them) a vector of
        the configured model, BATCH at a time, each batch committed (a kill loses at most one and
        the next open goes on from there); then, if another model serves, switch to it."""
        target, progress = self.target, self.reembedding
        assert progress is not None
        log.warning("re-embedding %d versions for model %s", progress.total, target.name)
        try:
            with tqdm(total=progress.total, desc=f"re-embed {target.name}", unit="version",
                      disable=not sys.stderr.isatty(), leave=False) as bar:  # fmt: skip
                while not self._closing.is_set() and (rows := self._store.unembedded(target.name, limit=BATCH)):
                    self._put_vectors(rows, target)
                    bar.update(len(rows))
                    progress.done += len(rows)
                    if len(rows) < BATCH:  # caught up with the writes: `_switch` embeds the last ones
                        break
            if self._closing.is_set():
                return
            if self.embedder is not target:
                old = self.model
                self._switch(target)
                self._switched(old, target.name)
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

        def catch_up() -> None:  # the versions written since the last pass
            while rows := self._store.unembedded(target.name, limit=BATCH):
                self._put_vectors(rows, target)
                if len(rows) < BATCH:
                    return

        with self._backend.model_switch(target.name, catch_up, self._closing.is_set) as install, self._lock:
            catch_up()
            install()
            self.embedder, self.model = target, target.name
            self._batcher = EmbedBatcher(target)
            self._queries = target
            self._remember_stored()


def _hash_key(content_hash: str) -> int:
    """A content hash as a machine-word int (Python's own string hash: the set lives in this
    process only): the set of stored ones stays small, and a collision only costs a store lookup."""
    return hash(content_hash)


def _held_key(project: str, content_hash: str) -> int:
    """`_hash_key` of a text held by one project."""
    return hash((project, content_hash))
