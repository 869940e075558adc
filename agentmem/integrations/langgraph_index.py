"""The store's own vector space for LangGraph's `index` config: which texts of a value are
embedded, with which embedding function, and the cosine similarity of a query with them.

LangGraph lets a store embed chosen paths of each value (`fields`, or the put's `index=[...]`,
nothing for `index=False`) with any `embed` of `dims` dimensions. agentmem's own indexes hold one
vector per memory, of the whole memory text, by the model the data directory was made with, so
the store keeps this second space itself: vectors of the indexed texts, made by `embed` when a
search first needs them and kept in a bounded cache (made again after a restart). A score is the
best similarity of the query with an item's texts, as in LangGraph's stores: cosine similarity by
default, or with `distance_type` as PostgresStore has it, the inner product or the negative
Euclidean distance.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from langgraph.store.base import IndexConfig, ensure_embeddings, get_text_at_path, tokenize_path

from agentmem import ValidationError
from agentmem.integrations.langgraph_values import Index

KNOWN = frozenset({"dims", "embed", "fields", "distance_type"})
DISTANCES = ("cosine", "inner_product", "l2")
CACHE = 100_000  # vectors kept, least recently used first out


class VectorSpace:
    """LangGraph's IndexConfig, honoured: `dims` (checked against what `embed` returns), `embed`
    (a LangChain Embeddings, a function, or a provider string), `fields` (default the whole value,
    "$") and `distance_type` (one of DISTANCES). Anything else is an error, never ignored.
    `fallback` embeds when the config names no `embed` (agentmem's own model, in process)."""

    def __init__(self, config: IndexConfig, fallback: Any = None) -> None:
        unknown = sorted(set(config) - KNOWN)
        if unknown:
            raise ValidationError(f"index: agentmem's LangGraph store does not support {', '.join(unknown)}")
        self.distance = config.get("distance_type", "cosine")
        if self.distance not in DISTANCES:
            raise ValidationError(f"index: distance_type {self.distance!r} is not supported: "
                                  f"choose one of {', '.join(DISTANCES)}")  # fmt: skip
        dims = config.get("dims")
        if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1:
            raise ValidationError(f"index: dims must be a positive whole number, got {dims!r}")
        embed = config.get("embed") or fallback
        if embed is None:
            raise ValidationError("index: give an `embed` (agentmem's own model is only at hand in process)")
        self.dims = dims
        self.embeddings = ensure_embeddings(embed)
        self.fields = list(config.get("fields") or ["$"])
        self._paths = {p: (p if p == "$" else tokenize_path(p)) for p in self.fields}
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def texts(self, value: Mapping[str, Any], index: Index) -> list[str]:
        """The texts of `value` this space embeds, for a put with `index` (None: the config's fields)."""
        if index is False:
            return []
        paths = self._paths if index is None else {p: tokenize_path(p) for p in index}
        return [t for path in paths.values() for t in get_text_at_path(value, path) if t]

    def scores(self, query: str, items: Sequence[list[str]]) -> list[float | None]:
        """The best similarity of `query` with each item's texts; None for an item with none."""
        wanted = list(dict.fromkeys(t for texts in items for t in texts))
        vectors = self._vectors(wanted)
        q = self._checked(np.asarray(self.embeddings.embed_query(query), dtype=np.float64))
        return [max(self._similarity(q, vectors[t]) for t in texts) if texts else None for texts in items]

    def _similarity(self, q: np.ndarray, v: np.ndarray) -> float:
        if self.distance == "l2":
            return -float(np.linalg.norm(q - v))
        if self.distance == "inner_product":
            return float(q @ v)
        norms = float(np.linalg.norm(q) * np.linalg.norm(v))
        return float(q @ v) / norms if norms else 0.0

    def _vectors(self, texts: list[str]) -> dict[str, np.ndarray]:
        with self._lock:
            found = {t: v for t in texts if (v := self._cache.get(t)) is not None}
            for t in found:
                self._cache.move_to_end(t)
        todo = [t for t in texts if t not in found]
        if todo:
            made = [self._checked(np.asarray(v, dtype=np.float64)) for v in self.embeddings.embed_documents(todo)]
            if len(made) != len(todo):
                raise ValidationError(f"index: embed returned {len(made)} vectors for {len(todo)} texts")
            found |= dict(zip(todo, made, strict=True))
            with self._lock:
                self._cache.update(zip(todo, made, strict=True))
                while len(self._cache) > CACHE:
                    self._cache.popitem(last=False)
        return found

    def _checked(self, v: np.ndarray) -> np.ndarray:
        if v.shape != (self.dims,):
            raise ValidationError(f"index: embed returned vectors of {v.shape[-1] if v.ndim else 0} dimensions, "
                                  f"the index config says dims={self.dims}")  # fmt: skip
        return v
