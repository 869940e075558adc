"""The query, parsed once: every later stage reads these fields instead of tokenising the text again."""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any

import msgspec

from agentmem import timewindow
from agentmem.records import TimeRange, TimeWindow
from agentmem.slots import query_words, time_words
from agentmem.supersede import STOPWORDS, asked
from agentmem.text import folded_words, stem, tokens

MAX_PREFIXES = 16  # words a store word search looks for when the model is down


class Query(msgspec.Struct, frozen=True, kw_only=True):
    """A recall's query as the stages read it.

    `words`: content words as `supersede.words` reads them, less question words (roll-up, slot
    rules); `time_words`: the words of its time expressions (never a slot's); `stems`: its Snowball
    stems (keyword overlap of DuckDB's candidates); `prefixes`: the starts of words a store word
    search looks for, longest first; `window`: the time it names or `time_range` gives; `asked`: the
    question it asks, normalised (`supersede.asked`)."""

    text: str
    words: frozenset[str]
    time_words: frozenset[str]
    stems: frozenset[str]
    prefixes: tuple[str, ...]
    window: TimeWindow | None
    asked: str | None


def parse(text: str, time_range: TimeRange | dict[str, Any] | str | None, now: datetime) -> Query:
    """`text` read once; `time_range` (else the query's own expressions) resolved against `now`."""
    return Query(
        text=text,
        words=query_words(text),
        time_words=time_words(text),
        stems=frozenset(tokens(text)),
        prefixes=tuple(sorted(prefixes(text), key=lambda w: (-len(w), w))[:MAX_PREFIXES]),
        window=timewindow.understand(text, time_range, now),
        asked=asked(text),
    )


def prefixes(text: str) -> set[str]:
    """The query's words as the starts of words to look for: accent-folded, lower case, no
    stopwords, each cut to what it shares with its stem ("policies" -> "polici")."""
    out = set()
    for word in set(folded_words(text)) - STOPWORDS:
        n = len(os.path.commonprefix([word, stem(word)]))
        out.add(word[:n] if n >= 3 else word)
    return out
