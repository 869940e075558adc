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
import threading
from collections.abc import Iterable, Sequence
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


class Vocabulary:
    """Integer ids of stemmed words: the shipped model's words first (ids under `known`), and any
    other word after, from the first time a text holds it. A text's words are turned into ids once,
    when it is analysed (`agentmem.currentness.analysis`), so that comparing many texts is array work."""

    def __init__(self, known: Sequence[str]) -> None:
        self._id = {w: i for i, w in enumerate(known)}
        self.known = len(self._id)
        self._lock = threading.Lock()

    def ids(self, words: Iterable[str]) -> np.ndarray:
        """The ids of `words` (distinct), sorted."""
        words = list(words)
        known = self._id
        try:
            ids = [known[w] for w in words]
        except KeyError:  # a word no text held before
            with self._lock:
                for w in words:
                    known.setdefault(w, len(known))
            ids = [known[w] for w in words]
        ids.sort()
        return np.array(ids, dtype=np.int32)


class Window(msgspec.Struct, frozen=True):
    """Texts compared pairwise, as both heads read them: their unit vectors as rows, and their words
    as 0/1 rows over the words they hold together (`words`: the vocabulary id of each column)."""

    vectors: np.ndarray  # texts x dim
    bags: np.ndarray  # texts x words
    words: np.ndarray
    sizes: np.ndarray  # how many words each text holds

    @classmethod
    def of(cls, vectors: np.ndarray, word_ids: Sequence[np.ndarray]) -> Window:
        """The window of texts given as their unit vectors (rows) and their words' vocabulary ids."""
        held = np.concatenate(word_ids) if word_ids else np.zeros(0, dtype=np.int32)
        words, column = np.unique(held, return_inverse=True)
        sizes = np.array([len(x) for x in word_ids], dtype=np.float32)
        bags = np.zeros((len(word_ids), len(words)), dtype=np.float32)
        bags[np.repeat(np.arange(len(word_ids)), sizes.astype(np.int64)), column] = 1.0
        return cls(vectors=np.asarray(vectors, dtype=np.float32), bags=bags, words=words, sizes=sizes)

    @classmethod
    def apart(cls, older: np.ndarray, newer: np.ndarray, older_texts: Sequence[str],
              newer_texts: Sequence[str], vocabulary: Vocabulary) -> tuple[Window, np.ndarray, np.ndarray]:  # fmt: skip
        """n pairs given apart (rows of `older` and `newer`, and their texts): the window of all 2n
        texts, and the positions of each pair's older and newer text in it."""
        n = len(older_texts)
        ids = [vocabulary.ids(token_set(t)) for t in [*older_texts, *newer_texts]]
        return cls.of(np.vstack([older, newer]), ids), np.arange(n), np.arange(n, 2 * n)


class Head(msgspec.Struct, frozen=True):
    """One logistic regression over `features` (`weights`, `bias`) and `word_features`: the weight
    of each word the newer text adds (`added`) or drops (`dropped`), by vocabulary id."""

    weights: np.ndarray
    bias: float
    added: np.ndarray  # by vocabulary id, for the ids under `Vocabulary.known`
    dropped: np.ndarray

    @property
    def dim(self) -> int:
        """The size of the vectors it reads."""
        return (len(self.weights) - 2) // 3

    def weigh(self, w: Window, older: np.ndarray, newer: np.ndarray) -> np.ndarray:
        """Its probability for each pair (`older[k]`, `newer[k]`) of positions in `w`."""
        return _weigh(Heads.of([self]), w, older, newer)[:, 0]

    def each(self, older: np.ndarray, newer: np.ndarray, older_texts: Sequence[str], newer_texts: Sequence[str],
             vocabulary: Vocabulary) -> np.ndarray:  # fmt: skip
        """Its probability for n pairs given apart (rows of `older` and `newer`)."""
        return self.weigh(*Window.apart(older, newer, older_texts, newer_texts, vocabulary))


class Heads(msgspec.Struct, frozen=True):
    """Heads weighed together, their weights laid out once for `_weigh`: the vector inputs as one
    matrix (the cosine is the sum of the product, so its weight joins the product's), and the word
    weights by vocabulary id, with a last row of zeros for the words no head was trained on."""

    vector: np.ndarray  # 3 * dim x heads: product, distance, difference
    jaccard: np.ndarray  # heads
    bias: np.ndarray  # heads
    added: np.ndarray | None  # known words + 1 x heads; None when no head reads words
    dropped: np.ndarray | None

    @classmethod
    def of(cls, heads: Sequence[Head]) -> Heads:
        """The heads `heads`, in this order (columns)."""
        d = heads[0].dim
        x = np.stack([h.weights for h in heads], axis=1).astype(np.float32)
        vector = x[2:].copy()
        vector[:d] += x[0]
        known = max(len(h.added) for h in heads)
        added = dropped = None
        if known:
            added, dropped = (np.zeros((known + 1, len(heads)), np.float32) for _ in "ad")
            for k, h in enumerate(heads):
                added[: len(h.added), k], dropped[: len(h.dropped), k] = h.added, h.dropped
        bias = np.array([h.bias for h in heads], dtype=np.float32)
        return cls(vector=vector, jaccard=x[1].copy(), bias=bias, added=added, dropped=dropped)


_CHUNK = 64  # pairs per block: a block's inputs stay small (an allocation the size of all of them
# goes to mmap and page-faults on every recall, which cost more than the arithmetic)


def _weigh(hs: Heads, w: Window, older: np.ndarray, newer: np.ndarray) -> np.ndarray:
    """Each head's probability (columns) for each pair (`older[k]`, `newer[k]`) of positions in `w`:
    `features` and `word_features` weighed: the product and the distance of a block of pairs'
    vectors at a time, the difference as the newer text's projection less the older's (it is
    linear: each text is projected once). The words come from the window's bags, per text and per
    two texts (the words both hold), never per pair. Few array calls: at a recall's sizes, each
    costs more than its arithmetic."""
    v, d, bags = w.vectors, w.vectors.shape[1], w.bags
    product, distance = hs.vector[:d], hs.vector[d : 2 * d]
    moved = v @ hs.vector[2 * d :]  # the difference is linear: each text's projection, once
    z = moved[newer] - moved[older] + hs.bias
    kept = None  # the weight of a word both texts hold: it is neither added nor dropped
    if hs.added is not None and hs.dropped is not None:
        ids = np.minimum(w.words, len(hs.added) - 1)  # a word no head knows weighs nothing
        added, dropped = hs.added[ids], hs.dropped[ids]
        kept = added + dropped
        z += (bags @ added)[newer] + (bags @ dropped)[older]  # less the words both hold (below)
    for at in range(0, len(older), _CHUNK):
        i, j = older[at : at + _CHUNK], newer[at : at + _CHUNK]
        o, n = v[i], v[j]
        both = bags[i] * bags[j]
        shared = both.sum(axis=1)
        union = w.sizes[i] + w.sizes[j] - shared  # no words on either side: no overlap
        block = np.abs(n - o) @ distance + (o * n) @ product + np.outer(shared / np.maximum(union, 1.0), hs.jaccard)
        z[at : at + _CHUNK] += block if kept is None else block - both @ kept
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
    beside: float  # words that say a newer text adds a fact (`marks`' word weights) weigh under this
    vocabulary: Vocabulary
    both: Heads  # `marks` and `orders`, weighed together by `judge`

    @property
    def dim(self) -> int:
        """The size of the vectors it reads."""
        return self.orders.dim

    def judge(self, w: Window, older: np.ndarray, newer: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each pair of positions in `w`: whether recall puts the newer first, and whether it
        marks the older."""
        p = _weigh(self.both, w, older, newer)
        marked, ordered = p[:, 0] >= self.mark, p[:, 1] >= self.order
        return ordered | marked, marked

    def adds_beside(self, older_text: str, newer_text: str) -> bool:
        """Whether the words the newer text adds and drops ("also", "too") say that it states a
        fact beside the older one rather than in its place: their weights in `marks` sum under
        `beside`, a level only 1% of the replacing training pairs fall under (out of fold). The
        write-time value rules ask it before they retire a memory; the vectors are left out, as
        one value swapped in a sentence barely moves them."""
        head, known = self.marks, len(self.marks.added)
        if not known:
            return False  # a head without words has nothing to say of them
        a = self.vocabulary.ids(token_set(older_text))
        b = self.vocabulary.ids(token_set(newer_text))
        added, dropped = np.setdiff1d(b, a, assume_unique=True), np.setdiff1d(a, b, assume_unique=True)
        said = head.added[added[added < known]].sum() + head.dropped[dropped[dropped < known]].sum()
        return bool(said < self.beside)

    def judge_each(
        self, older: np.ndarray, newer: np.ndarray, older_texts: Sequence[str], newer_texts: Sequence[str]
    ) -> tuple[np.ndarray, np.ndarray]:
        """`judge` for n pairs given apart (rows of `older` and `newer`)."""
        return self.judge(*Window.apart(older, newer, older_texts, newer_texts, self.vocabulary))


def for_embedder(name: str) -> PairModel | None:
    """The shipped model when it reads vectors of the embedding model `name`, else None."""
    model = shipped()
    return model if model.embedder == name else None


@cache
def shipped() -> PairModel:
    """The model that ships with the package (read once)."""
    with np.load(WEIGHTS) as npz:
        said = {name: dict(zip(npz[f"{name}_words"].tolist(), npz[f"{name}_word_weights"].tolist(), strict=True))
                for name in ("orders", "marks")}  # fmt: skip
        vocabulary = Vocabulary(sorted({w[1:] for words in said.values() for w in words}))

        def by_id(words: dict[str, float], sign: str) -> np.ndarray:
            out = np.zeros(vocabulary.known if words else 0, dtype=np.float32)  # a head without words reads none
            for k, v in words.items():
                if k[0] == sign:
                    out[vocabulary.ids([k[1:]])[0]] = v
            return out

        heads = {
            name: Head(
                weights=npz[f"{name}_weights"].astype(np.float32),
                bias=float(npz[f"{name}_bias"]),
                added=by_id(said[name], "+"),
                dropped=by_id(said[name], "-"),
            )  # fmt: skip
            for name in said
        }
    card = json.loads(CARD.read_text())
    t = card["thresholds"]
    return PairModel(embedder=card["embedder"], orders=heads["orders"], marks=heads["marks"], order=t["order"],
                     mark=t["mark"], topic=t["topic"], beside=t["beside"], vocabulary=vocabulary,
                     both=Heads.of([heads["marks"], heads["orders"]]))  # fmt: skip


def word_ids(words: Iterable[str]) -> np.ndarray:
    """The vocabulary ids of a text's stemmed words (`text.token_set`), for the shipped model."""
    return shipped().vocabulary.ids(words)
