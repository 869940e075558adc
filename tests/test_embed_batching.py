"""Micro-batching of write embeddings: concurrent callers share forward passes, each gets its own rows."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from indexes.embed import EmbedBatcher
from tests.fakes import FakeEmbedder


class Slow(FakeEmbedder):
    """A fake whose forward pass takes a while and records its batch sizes and overlap."""

    def __init__(self, delay: float = 0.05) -> None:
        super().__init__()
        self.delay = delay
        self.sizes: list[int] = []
        self.running = 0
        self.most_at_once = 0
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
            self.sizes.append(len(texts))
        try:
            time.sleep(self.delay)
            return super().embed(texts)
        finally:
            with self._lock:
                self.running -= 1


@pytest.mark.parametrize("runners", [1, 2])
def test_concurrent_callers_share_passes_and_get_their_own_vectors(runners: int) -> None:
    model = Slow()
    batcher = EmbedBatcher(model, max_texts=32, runners=runners)
    texts = [f"question number {i} about the {i % 7} service" for i in range(48)]
    with ThreadPoolExecutor(16) as pool:
        got = list(pool.map(lambda t: batcher.embed([t])[0], texts))
    assert np.allclose(np.stack(got), FakeEmbedder().embed(texts), atol=1e-6)
    assert sum(model.sizes) == 48 and batcher.calls == len(model.sizes) < 48  # shared passes
    assert max(model.sizes) <= 32 and model.most_at_once <= runners
    if runners == 2:
        assert model.most_at_once == 2  # both cores busy under load


def test_a_failing_pass_fails_only_its_own_callers() -> None:
    class Flaky(Slow):
        def embed(self, texts: Sequence[str]) -> np.ndarray:
            if any("poison" in t for t in texts):
                raise RuntimeError("model fell over")
            return super().embed(texts)

    batcher = EmbedBatcher(Flaky(), runners=2)
    with pytest.raises(RuntimeError, match="fell over"):
        batcher.embed(["poison pill"])
    assert batcher.embed(["fine text"]).shape == (1, 64)


def test_a_broken_embedder_fails_every_caller_and_hangs_none() -> None:
    class Short(FakeEmbedder):
        def embed(self, texts: Sequence[str]) -> np.ndarray:
            return super().embed(texts)[:1]  # one vector, whatever was asked

    batcher = EmbedBatcher(Short(), runners=2)
    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(batcher.embed, [f"text {i}", f"more {i}"]) for i in range(4)]
        errors = [f.exception(timeout=10) for f in futures]
    assert all(e is not None and "vectors for" in str(e) for e in errors)
