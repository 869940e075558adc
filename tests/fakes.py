"""A deterministic fake embedder for fast tests (the real model has its own marked tests)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from agentmem.text import tokens

DIM = 64


class FakeEmbedder:
    """Bag of hashed stemmed tokens: texts sharing words get similar vectors. Deterministic, instant."""

    name = "fake-hash-64"
    dim = DIM

    def __init__(self) -> None:
        self.calls = 0
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts += len(texts)
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for row, text in enumerate(texts):
            for tok in tokens(text) or ["<empty>"]:
                h = int.from_bytes(hashlib.blake2b(tok.encode(), digest_size=4).digest(), "little")
                out[row, h % DIM] += 1.0 if (h >> 16) & 1 else -1.0
            norm = np.linalg.norm(out[row])
            out[row] = out[row] / norm if norm else 1.0 / np.sqrt(DIM)
        return out
