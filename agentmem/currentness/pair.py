"""The learned pair model: does a newer memory replace an older one, or is it another fact?

A logistic regression over what every memory already has, its sentence vector and its words:
the cosine and the Jaccard overlap of the two texts, and the element-wise product, distance and
difference (newer minus older) of their vectors. The difference carries the direction: a text
that moves a fact on reads unlike the one it moves on from. The weights are trained by
`scripts/train_pair_model.py` on hand-written labelled pairs (`data/`) and ship beside this
module with a card naming their data and command (`pair_model.json`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import msgspec
import numpy as np

from agentmem.text import jaccard, token_set

WEIGHTS = Path(__file__).with_name("pair_model.npz")
CARD = Path(__file__).with_name("pair_model.json")


def features(older: np.ndarray, newer: np.ndarray, older_text: str, newer_text: str) -> np.ndarray:
    """The model's inputs for one pair of unit vectors and their texts."""
    head = np.array([float(older @ newer), jaccard(token_set(older_text), token_set(newer_text))], dtype=np.float32)
    return np.concatenate([head, older * newer, np.abs(older - newer), newer - older])


class PairModel(msgspec.Struct, frozen=True):
    """Weights and bias of the logistic regression, and the thresholds chosen with them."""

    embedder: str  # the model whose vectors it reads: for any other it has nothing to say
    weights: np.ndarray
    bias: float
    mark: float  # recall marks the older hit `older_than` at or above this probability
    order: float  # recall puts the newer of two hits about one topic first at or above this
    topic: float  # the cosine at which two hits can be about one topic

    @property
    def dim(self) -> int:
        """The size of the vectors it reads."""
        return (len(self.weights) - 2) // 3

    def replaces(self, older: np.ndarray, newer: np.ndarray, older_text: str, newer_text: str) -> float:
        """The probability that `newer_text` makes `older_text` no longer current."""
        return float(self.replaces_each(older[None], newer[None], [older_text], [newer_text])[0])

    def replaces_each(
        self, older: np.ndarray, newer: np.ndarray, older_texts: Sequence[str], newer_texts: Sequence[str]
    ) -> np.ndarray:
        """`replaces` for n pairs at once (rows of `older` and `newer`): the features of `features`,
        weighed without building them."""
        d = self.dim
        w = self.weights
        jac = [jaccard(token_set(a), token_set(b)) for a, b in zip(older_texts, newer_texts, strict=True)]
        z = (
            w[0] * np.einsum("ij,ij->i", older, newer)
            + w[1] * np.asarray(jac, dtype=np.float32)
            + (older * newer) @ w[2 : 2 + d]
            + np.abs(older - newer) @ w[2 + d : 2 + 2 * d]
            + (newer - older) @ w[2 + 2 * d :]
            + self.bias
        )
        return np.asarray(1.0 / (1.0 + np.exp(-z)))


def for_embedder(name: str) -> PairModel | None:
    """The shipped model when it reads vectors of the embedding model `name`, else None."""
    model = shipped()
    return model if model.embedder == name else None


@cache
def shipped() -> PairModel:
    """The model that ships with the package (read once)."""
    with np.load(WEIGHTS) as npz:
        weights, bias = npz["weights"].astype(np.float32), float(npz["bias"])
    card = json.loads(CARD.read_text())
    t = card["thresholds"]
    return PairModel(embedder=card["embedder"], weights=weights, bias=bias, mark=t["mark"],
                     order=t["order"], topic=t["topic"])  # fmt: skip
