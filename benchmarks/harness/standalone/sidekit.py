"""What the side scripts share (recall_ab_side, concurrency_inprocess, currentness_natural_side).

A side runs with another source tree alone on PYTHONPATH, so it cannot import `benchmarks` (that
tree's copy may be older or missing): it puts this folder first on sys.path instead. Hence this
module imports the standard library only (numpy for its types), and the folder holds nothing else to
import.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np


class Clock:
    """A clock the benchmark sets (agentmem's `clock=`): writes as of their date, recalls as of the question's."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def watch_parent() -> None:
    """Exit if the benchmark that started this process dies (no orphan holding a data directory)."""
    parent = os.getppid()

    def loop() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(3)

    threading.Thread(target=loop, name="watch-parent", daemon=True).start()


class VectorsEmbedder:
    """An agentmem Embedder (the indexes.embed protocol) over vectors computed beforehand.

    `many` gives the vectors of texts (a VectorCache's `get`, a lookup table); `one` a query's,
    when that differs (by default many([text])[0]).
    """

    def __init__(
        self,
        name: str,
        dim: int,
        many: Callable[[list[str]], np.ndarray],
        one: Callable[[str], np.ndarray] | None = None,
    ) -> None:
        self.name = name
        self.dim = dim
        self._many = many
        self._one = one

    @classmethod
    def of(cls, cache: Any) -> VectorsEmbedder:
        """The real model's vectors from a VectorCache (benchmarks.harness.embedder): a text it lacks is
        embedded and cached."""
        return cls(cache.model, cache.dim, cache.get)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._many(list(texts))

    def embed_query(self, text: str) -> np.ndarray:
        return self._one(text) if self._one is not None else self._many([text])[0]
