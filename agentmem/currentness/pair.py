"""The learned pair model: does a newer memory replace an older one, or is it another fact?

Logistic regressions over what every memory already has, its sentence vector and its words:
the cosine and the Jaccard overlap of the two texts, the element-wise product, distance and
difference (newer minus older) of their vectors, and (for marking) a learned weight for each word
the newer text adds or drops. The difference carries the direction: a text that moves a fact on
reads unlike the one it moves on from; the added and dropped words say how. The weights are trained by
`scripts/train_pair_model.py` on hand-written labelled pairs (`data/`) and ship beside this
module with a card naming their data and command (`pair_model.json`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
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


def word_features(older_text: str, newer_text: str) -> list[str]:
    """The words the newer text adds ("+word") and drops ("-word"), stemmed, sorted."""
    a, b = token_set(older_text), token_set(newer_text)
    return sorted([f"+{w}" for w in b - a] + [f"-{w}" for w in a - b])


class Head(msgspec.Struct, frozen=True):
    """One logistic regression over `features` (`weights`, `bias`) and `word_features`: the weight
    of each word the newer text adds (`added`) or drops (`dropped`)."""

    weights: np.ndarray
    bias: float
    added: Mapping[str, float] = msgspec.field(default_factory=dict)
    dropped: Mapping[str, float] = msgspec.field(default_factory=dict)

    def each(self, older: np.ndarray, newer: np.ndarray, older_texts: Sequence[str],
             newer_texts: Sequence[str]) -> np.ndarray:  # fmt: skip
        """Its probability for n pairs at once (rows of `older` and `newer`), weighed without
        building `features`."""
        return self.weigh(older, newer, *_word_sets(older_texts, newer_texts))

    @property
    def dim(self) -> int:
        """The size of the vectors it reads."""
        return (len(self.weights) - 2) // 3

    def weigh(
        self, older: np.ndarray, newer: np.ndarray, sets: Sequence[tuple[frozenset[str], frozenset[str]]],
        jac: np.ndarray,
    ) -> np.ndarray:  # fmt: skip
        """`each`, given the pairs' token sets and their Jaccard overlaps."""
        d, w = self.dim, self.weights
        z = (
            w[0] * np.einsum("ij,ij->i", older, newer)
            + w[1] * jac
            + (older * newer) @ w[2 : 2 + d]
            + np.abs(older - newer) @ w[2 + d : 2 + 2 * d]
            + (newer - older) @ w[2 + 2 * d :]
            + self.bias
        )
        if self.added or self.dropped:
            add, drop = self.added.get, self.dropped.get
            z += np.asarray([sum(add(t, 0.0) for t in b - a) + sum(drop(t, 0.0) for t in a - b) for a, b in sets],
                            dtype=np.float32)  # fmt: skip
        return np.asarray(1.0 / (1.0 + np.exp(-z)))


class PairModel(msgspec.Struct, frozen=True):
    """Two heads trained on the same pairs, and their thresholds. Ordering is bold: `orders`, over
    the vectors alone, also finds a restatement that says nothing of a change. Marking is strict:
    `marks` adds what the newer text adds or drops ("now", "also"), which lifts the replacements
    it is sure of and holds back the facts that only sit beside an older one."""

    embedder: str  # the model whose vectors it reads: for any other it has nothing to say
    orders: Head
    marks: Head
    order: float  # recall puts the newer of two hits about one topic first at or above this (`orders`)
    mark: float  # recall marks the older hit `older_than` at or above this (`marks`)
    topic: float  # the cosine at which two hits can be about one topic

    @property
    def dim(self) -> int:
        """The size of the vectors it reads."""
        return self.orders.dim

    def judge_each(
        self, older: np.ndarray, newer: np.ndarray, older_texts: Sequence[str], newer_texts: Sequence[str]
    ) -> tuple[np.ndarray, np.ndarray]:
        """For n pairs: whether recall puts the newer first, and whether it marks the older."""
        sets, jac = _word_sets(older_texts, newer_texts)
        marked = self.marks.weigh(older, newer, sets, jac) >= self.mark
        ordered = self.orders.weigh(older, newer, sets, jac) >= self.order
        return ordered | marked, marked


def _word_sets(
    older_texts: Sequence[str], newer_texts: Sequence[str]
) -> tuple[list[tuple[frozenset[str], frozenset[str]]], np.ndarray]:
    """Each pair's token sets, and their Jaccard overlaps: what both heads read of the words."""
    sets = [(token_set(a), token_set(b)) for a, b in zip(older_texts, newer_texts, strict=True)]
    return sets, np.asarray([jaccard(a, b) for a, b in sets], dtype=np.float32)


def for_embedder(name: str) -> PairModel | None:
    """The shipped model when it reads vectors of the embedding model `name`, else None."""
    model = shipped()
    return model if model.embedder == name else None


@cache
def shipped() -> PairModel:
    """The model that ships with the package (read once)."""
    with np.load(WEIGHTS) as npz:
        heads = {}
        for name in ("orders", "marks"):
            words = dict(zip(npz[f"{name}_words"].tolist(), npz[f"{name}_word_weights"].tolist(), strict=True))
            heads[name] = Head(
                weights=npz[f"{name}_weights"].astype(np.float32),
                bias=float(npz[f"{name}_bias"]),
                added={k[1:]: v for k, v in words.items() if k[0] == "+"},
                dropped={k[1:]: v for k, v in words.items() if k[0] == "-"},
            )
    card = json.loads(CARD.read_text())
    t = card["thresholds"]
    return PairModel(embedder=card["embedder"], orders=heads["orders"], marks=heads["marks"], order=t["order"],
                     mark=t["mark"], topic=t["topic"])  # fmt: skip
