"""A text analysed once, when it is written: what the currentness rules and the pair model read of it.

Recall compares each of its best hits with every other; reading their texts again for every query
(sentences, words, values, stems) cost more than the comparisons themselves. So a version's
`Analysis` is made once, when a commit writes the version: it is stored with it (`encode`, in the
version's row) and kept beside it in the live set (`agentmem.live.LiveSet.analyses`), which reads
the stored ones back when it opens. `VERSION` names how a text is analysed: a stored analysis of
another version is made again (`decode` refuses it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache

import msgspec
import numpy as np
from sentencex import segment

from agentmem.currentness import pair
from agentmem.records import MemoryVersion
from agentmem.supersede import NUMBER_WORDS, Words, question_slot, words
from agentmem.text import token_set

# An event is a thing that happened or was said: a later one does not make it older news ("we
# met twice" stays true of its day). Events take no part, as they never supersede.
TIMELESS = frozenset({"event"})
SAID = frozenset({"observation", "claim"})  # the sentences that best match the query are the ones compared


class Claim(msgspec.Struct, frozen=True, array_like=True):
    """A sentence that states something, with the words the rules read off it: all of them as a set,
    and those that describe its slot (its words less its values and names)."""

    text: str
    words: Words
    word_set: frozenset[str]
    described: frozenset[str]


MIN_WORDS = 1  # descriptive words a claim needs besides its values and names: "Thanks, Mel!" states nothing
# What a value needs in an ASCII sentence (`supersede.words`): a digit, a number word, or a capital
# letter past the first character that is not the pronoun "I" or one of its contractions.
_DIGIT_OR_NUMBER = re.compile(r"[0-9]|\b(?:" + "|".join(sorted(NUMBER_WORDS)) + r")\b", re.IGNORECASE)
_PRONOUN_I = re.compile(r"\bI(?:['\u2019]?(?:m|ve|d|ll))?\b")


def _may_hold_value(sentence: str) -> bool:
    """False only where `words(sentence).values` is empty, read at C speed: most sentences of a
    conversation name no value, and reading their words costs a hundred times more."""
    if not sentence.isascii():
        return True  # folding accents can make a digit or a capital: let `words` read it
    if _DIGIT_OR_NUMBER.search(sentence) is not None:
        return True
    rest = _PRONOUN_I.sub(" ", sentence)[1:]  # the first character starts the sentence: no value
    return rest.lower() != rest


@lru_cache(maxsize=16_384)
def claims(text: str, plain: bool = False) -> tuple[Claim, ...]:
    """The sentences of `text` that state something: a value, and a word that says
    what the value is of. Each with its words. With `plain`, also the sentences with no value
    and at least two words that describe (what was said: "I dedicate an hour a day to it")."""
    out = []
    for line in text.split("\n"):
        for piece in segment("en", line):
            s = " ".join(piece.split())
            if not s or not (plain or _may_hold_value(s)):
                continue
            w = words(s)
            all_words = frozenset(w.words)
            described = all_words - w.values - w.maybe
            if (w.values and len(described) >= MIN_WORDS) or (plain and len(described) >= 2):
                out.append(Claim(s, w, all_words, described))
    return tuple(out)


class Analysis:
    """What currentness reads of one text.

    `words`: its stemmed words (`text.token_set`) as the pair model's vocabulary ids, sorted (Jaccard,
    the model's word inputs); `question`: the question and answer it is, normalised, if it is one
    (`supersede.question_slot`); `claims`: its sentences that state a value (`claims`); `said`: those
    and its plain sentences, read for things said in a conversation only (`claims(text, plain=True)`);
    `text`: its words as one text (`supersede.words`), what the write-time rules read of a current
    memory.

    An analysis read back from the store holds its sentences and `text` as their stored bytes, and
    decodes each the first time it is read: recall compares every hit's words and question, but
    reads the sentences of few and the `text` of none, and decoding them all cost a recall of new
    hits more than the rest of its currentness stage.
    """

    __slots__ = ("_conversation", "_sentences", "_split", "_text", "question", "words")

    def __init__(self, words: np.ndarray, question: tuple[str, str] | None, sentences: tuple[Claim, ...] | msgspec.Raw,
                 conversation: bool, text: Words | msgspec.Raw) -> None:  # fmt: skip
        self.words = words
        self.question = question
        self._conversation = conversation
        self._sentences = sentences
        self._text = text
        self._split: tuple[tuple[Claim, ...], tuple[Claim, ...]] | None = None  # (claims, said), when first read

    @property
    def claims(self) -> tuple[Claim, ...]:
        return self._claims_and_said()[0]

    @property
    def said(self) -> tuple[Claim, ...]:
        return self._claims_and_said()[1]

    @property
    def text(self) -> Words:
        if isinstance(self._text, msgspec.Raw):
            self._text = _WORDS.decode(self._text)
        return self._text

    def _claims_and_said(self) -> tuple[tuple[Claim, ...], tuple[Claim, ...]]:
        """`claims` and `said` from the sentences (decoded when stored, once): a conversation's claims
        are those of its sentences that state a value."""
        if self._split is None:
            s = self._sentences
            sentences = _SENTENCES.decode(s) if isinstance(s, msgspec.Raw) else s
            if self._conversation:
                claims = tuple(c for c in sentences if c.words.values and len(c.described) >= MIN_WORDS)
                self._split = (claims, sentences)
            else:
                self._split = (sentences, ())
        return self._split


# How `analyse` reads a text. Raise it with any change to what it makes: stored analyses of an
# older version are then made again from their texts.
VERSION = 2


class _Stored(msgspec.Struct, array_like=True):
    """An `Analysis` as a version's row holds it: its stems as words (the pair model's vocabulary
    ids are given out per process), the version of `analyse` that made it, and its claims once
    (`said`, when it has them, holds them all: `claims` are those of `said` that state a value)."""

    version: int
    stems: list[str]
    question: tuple[str, str] | None
    sentences: tuple[Claim, ...]
    said: bool
    text: Words


class _Version(msgspec.Struct, array_like=True):
    version: int  # the first field of `_Stored`: read alone, the rest is skipped


class _Held(msgspec.Struct, array_like=True):
    """`_Stored` as recall reads it back: its sentences and its words as one text left as their
    bytes, decoded when first read (`Analysis`)."""

    version: int
    stems: list[str]
    question: tuple[str, str] | None
    sentences: msgspec.Raw
    said: bool
    text: msgspec.Raw


_ENCODER, _DECODER = msgspec.msgpack.Encoder(), msgspec.msgpack.Decoder(_Held)
_SENTENCES, _WORDS = msgspec.msgpack.Decoder(tuple[Claim, ...]), msgspec.msgpack.Decoder(Words)
_VERSION = msgspec.msgpack.Decoder(_Version)


def analyse(text: str, kind: str) -> Analysis:
    """The analysis of `text`, a memory of `kind` (pure: the same text and kind give the same one)."""
    return _made_of(_read(text, kind))


def _read(text: str, kind: str) -> _Stored:
    said = kind in SAID
    return _Stored(VERSION, sorted(token_set(text)), question_slot(text), claims(text, plain=said), said, words(text))


def _made_of(s: _Stored | _Held) -> Analysis:
    return Analysis(pair.word_ids(s.stems), s.question, s.sentences, s.said, s.text)


def stored(text: str, kind: str) -> tuple[Analysis, bytes]:
    """The analysis of `text` (as `analyse`), and the bytes a version's row keeps of it."""
    s = _read(text, kind)
    return _made_of(s), _ENCODER.encode(s)


def current(data: bytes) -> bool:
    """Whether `data` is an analysis this `VERSION` made (read without decoding the rest)."""
    try:
        return _VERSION.decode(data).version == VERSION
    except msgspec.DecodeError:
        return False


def decode(data: bytes | None) -> Analysis | None:
    """The analysis stored as `data`; None when there is none, or `VERSION` did not make it. Its
    sentences and `text` are decoded when first read (`Analysis`): stored bytes that do not decode
    as them raise then, but only this code's `encode` writes them, under its `VERSION`."""
    if data is None:
        return None
    try:
        s = _DECODER.decode(data)
    except msgspec.DecodeError:  # written by a version of this code that stored another shape
        return None
    return _made_of(s) if s.version == VERSION else None


def of_new(versions: Iterable[MemoryVersion]) -> tuple[dict[int, Analysis], dict[int, bytes]]:
    """What a commit stores of the current versions it writes that currentness reads: their
    analyses and the bytes of each, by id."""
    made, data = {}, {}
    for v in versions:
        if v.is_latest and v.status == "active" and wanted(v):
            made[v.id], data[v.id] = stored(v.content, v.kind)
    return made, data


def wanted(v: MemoryVersion) -> bool:
    """Whether currentness reads `v` at all: an event never pairs (`TIMELESS`)."""
    return v.kind not in TIMELESS


@lru_cache(maxsize=4_096)
def _made(text: str, kind: str) -> Analysis:
    return analyse(text, kind)


def of_versions(versions: Iterable[MemoryVersion], held: Mapping[int, Analysis]) -> dict[int, Analysis]:
    """The analyses of `versions` that currentness reads, by id: those `held` (the live set's),
    else made now (a past version, read by `as_of` or with the superseded ones)."""
    out = {}
    for v in versions:
        if wanted(v):
            a = held.get(v.id)
            out[v.id] = a if a is not None else _made(v.content, v.kind)
    return out
