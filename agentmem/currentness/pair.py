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


class Bags(msgspec.Struct, frozen=True):
    """The texts a batch of pairs reads, each as a row of 0/1 over the words they hold together:
    what both heads read of the words, built once for all the pairs among them."""

    rows: np.ndarray  # texts x words
    words: list[str]

    @classmethod
    def of(cls, sets: Sequence[frozenset[str]]) -> Bags:
        """The bags of texts given as their `text.token_set`s (an `Analysis` holds each)."""
        index: dict[str, int] = {}
        cols = [[index.setdefault(w, len(index)) for w in s] for s in sets]
        rows = np.zeros((len(sets), len(index)), dtype=np.float32)
        for r, c in enumerate(cols):
            rows[r, c] = 1.0
        return cls(rows=rows, words=list(index))


class Head(msgspec.Struct, frozen=True):
    """One logistic regression over `features` (`weights`, `bias`) and `word_features`: the weight
    of each word the newer text adds (`added`) or drops (`dropped`)."""

    weights: np.ndarray
    bias: float
    added: Mapping[str, float] = msgspec.field(default_factory=dict)
    dropped: Mapping[str, float] = msgspec.field(default_factory=dict)

    def each(self, older: np.ndarray, newer: np.ndarray, older_texts: Sequence[str],
             newer_texts: Sequence[str]) -> np.ndarray:  # fmt: skip
        """Its probability for n pairs given apart (rows of `older` and `newer`)."""
        return self.weigh(Inputs.apart(older, newer, older_texts, newer_texts))

    @property
    def dim(self) -> int:
        """The size of the vectors it reads."""
        return (len(self.weights) - 2) // 3

    def weigh(self, x: Inputs) -> np.ndarray:
        """Its probability for each pair of `x`."""
        z = x.features @ self.weights + self.bias
        if self.added or self.dropped:
            add = np.array([self.added.get(t, 0.0) for t in x.words], dtype=np.float32)
            drop = np.array([self.dropped.get(t, 0.0) for t in x.words], dtype=np.float32)
            z += x.gained @ add + x.lost @ drop
        return np.asarray(1.0 / (1.0 + np.exp(-z)))


class Inputs(msgspec.Struct, frozen=True):
    """What both heads read of a batch of pairs, built once for them: each pair's `features` as
    rows, and the words its newer text adds (`gained`) and drops (`lost`) as 0/1 over `words`."""

    features: np.ndarray  # pairs x (2 + 3 * dim)
    gained: np.ndarray  # pairs x words
    lost: np.ndarray
    words: list[str]

    @classmethod
    def of(cls, vectors: np.ndarray, bags: Bags, older: np.ndarray, newer: np.ndarray) -> Inputs:
        """The pairs (`older[k]`, `newer[k]`) of rows of `vectors` and `bags`: one pass over all
        pairs, no loop per pair (recall's window: each hit is in many pairs)."""
        o, n = vectors[older], vectors[newer]
        xo, xn = bags.rows[older], bags.rows[newer]
        both = xo * xn
        shared = both.sum(axis=1)
        union = xo.sum(axis=1) + xn.sum(axis=1) - shared
        jac = np.divide(shared, union, out=np.zeros_like(shared), where=union > 0)
        cos = np.einsum("ij,ij->i", o, n)
        features = np.hstack([cos[:, None], jac[:, None], o * n, np.abs(o - n), n - o])
        return cls(features=features, gained=xn - both, lost=xo - both, words=bags.words)

    @classmethod
    def apart(cls, older: np.ndarray, newer: np.ndarray, older_texts: Sequence[str],
              newer_texts: Sequence[str]) -> Inputs:  # fmt: skip
        """n pairs given apart (rows of `older` and `newer`, and their texts)."""
        n = len(older_texts)
        bags = Bags.of([token_set(t) for t in [*older_texts, *newer_texts]])
        return cls.of(np.vstack([older, newer]), bags, np.arange(n), np.arange(n, 2 * n))


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

    def judge(self, x: Inputs) -> tuple[np.ndarray, np.ndarray]:
        """For each pair of `x`: whether recall puts the newer first, and whether it marks the older."""
        marked = self.marks.weigh(x) >= self.mark
        ordered = self.orders.weigh(x) >= self.order
        return ordered | marked, marked

    def judge_each(
        self, older: np.ndarray, newer: np.ndarray, older_texts: Sequence[str], newer_texts: Sequence[str]
    ) -> tuple[np.ndarray, np.ndarray]:
        """`judge` for n pairs given apart (rows of `older` and `newer`)."""
        return self.judge(Inputs.apart(older, newer, older_texts, newer_texts))


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
