"""A text analysed once, when it is written: what the currentness rules and the pair model read of it.

Recall compares each of its best hits with every other; reading their texts again for every query
(sentences, words, values, stems) cost more than the comparisons themselves. So a version's
`Analysis` is made when a commit makes it current and is kept beside it in the live set
(`agentmem.live.LiveSet.analyses`); the stage reads it there.
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


class Claim(msgspec.Struct, frozen=True):
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


class Analysis(msgspec.Struct, frozen=True):
    """What currentness reads of one text.

    `words`: its stemmed words (`text.token_set`) as the pair model's vocabulary ids, sorted (Jaccard,
    the model's word inputs); `question`: the
    question and answer it is, normalised, if it is one (`supersede.question_slot`); `claims`: its
    sentences that state a value (`claims`); `said`: those and its plain sentences, read
    for things said in a conversation only (`claims(text, plain=True)`)."""

    words: np.ndarray
    question: tuple[str, str] | None
    claims: tuple[Claim, ...]
    said: tuple[Claim, ...]


def analyse(text: str, kind: str) -> Analysis:
    """The analysis of `text`, a memory of `kind` (pure: the same text and kind give the same one)."""
    said = claims(text, plain=True) if kind in SAID else ()
    return Analysis(words=pair.word_ids(token_set(text)), question=question_slot(text), claims=claims(text), said=said)


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
