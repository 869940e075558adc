"""The events a question names, each to be recalled on its own: "Which did I set up first, the smart
thermostat or the mesh network?", "How many days passed between the workshop and the day I planted
the saplings?", "How long had I used the rug when I rearranged the furniture?".

One query vector for such a question lands nearer one of its events than the other, and the second
event's memories fall out of the top k, though the question needs both. Recall therefore also asks
each facet on its own and keeps each memory at its best score (agentmem.recall.best_of).

Three shapes, by a few regular expressions (no model):
  alternatives   "<question>, A or B" (or "A, B or C"): the question with each alternative alone
  between        "between A and B": A and B
  clauses        "<A> when|before|after|since|until <B>": A and B; in B, a question inverted after
                 its lead clause ("before my anniversary did Rachel get engaged") is split there too
Only a query of one sentence: in a passage of several, the sentences are each other's context.
A facet must name something (a word that is neither a stopword nor a word of asking about time:
"how many days", "first", "ago"); fewer than two facets, and there are none. Time expressions the
window understood ("between May 1 and May 10", "since last Tuesday") are taken out first: they are
the window's (agentmem.timewindow), not events.

>>> of("Which device did I set up first, the smart thermostat or the mesh network system?")
['Which device did I set up first, the smart thermostat', 'Which device did I set up first, the mesh network system']
>>> of("How many days passed between the gardening workshop and the day I planted the tomato saplings?")
['the gardening workshop', 'the day I planted the tomato saplings']
>>> of("What did I cook last week?")
[]
"""

from __future__ import annotations

import re

from agentmem.supersede import STOPWORDS
from agentmem.text import folded_words

MAX_FACETS = 4

# Words that ask about time or order rather than name an event: a facet of these alone names nothing.
_ASKING = frozenset(
    """how many much long which what who whom whose where when why whether first second third last
    earliest latest earlier later recently most least order passed pass elapsed ago since before after
    until day days week weeks month months year years time times hour hours minute minutes
    happen happened happens go went take took use used get got old age aged""".split()
)
_ALTERNATIVES = re.compile(
    r"^(?P<head>.+?)[,:;]\s+(?P<tail>[^,:;]+?(?:,\s+[^,:;]+?)*,?\s+or\s+[^,:;]+?)\s*[?.!]*$", re.IGNORECASE
)
_OR = re.compile(r"\s*,?\s+or\s+|\s*,\s+", re.I)
_BETWEEN = re.compile(r"\bbetween\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)\s*[?.!]*$", re.I)
_CLAUSE = re.compile(r"\s+(?:when|before|after|since|until)\s+", re.I)
_INVERTED = re.compile(r"\s+(?:did|do|does)\s+(?=\S)", re.I)
_SENTENCES = re.compile(r"[.?!]\s+\S")


def names_something(text: str) -> bool:
    """Whether `text` has a word that is neither a stopword nor one of asking about time or order."""
    return any(w not in STOPWORDS and w not in _ASKING for w in folded_words(text))


def of(query: str, time_expression: str | None = None) -> list[str]:
    """The facets of `query` (at most MAX_FACETS, in the query's order), or [] when it names one event.
    `time_expression` (the words the time window came from) is left out of every facet."""
    text = " ".join(query.split())
    if _SENTENCES.search(text):  # a passage, not one question: its sentences are context, not events
        return []
    if time_expression:
        text = " ".join(re.sub(re.escape(time_expression), " ", text, flags=re.I).split())
    for shape in (_alternatives, _between, _clauses):
        found = [f for f in dict.fromkeys(shape(text)) if names_something(f)]
        if len(found) >= 2:
            return found[:MAX_FACETS]
    return []


def _alternatives(text: str) -> list[str]:
    m = _ALTERNATIVES.match(text)
    if m is None or not names_something(m["head"]):
        return []
    alts = [a.strip() for a in _OR.split(m["tail"]) if a.strip()]
    if len(alts) < 2 or not all(names_something(a) for a in alts):
        return []
    return [f"{m['head'].strip()}, {a}" for a in alts]


def _between(text: str) -> list[str]:
    m = _BETWEEN.search(text)
    return [] if m is None else [m["a"].strip(), m["b"].strip()]


def _clauses(text: str) -> list[str]:
    parts = [p.strip(" ,?.!") for p in _CLAUSE.split(text)]
    if len(parts) < 2:
        return []
    out = [parts[0]]
    for p in parts[1:]:  # "before my anniversary did Rachel get engaged": two events in one clause
        lead, *rest = _INVERTED.split(p, maxsplit=1)
        out += [lead, *rest] if rest and names_something(lead) and names_something(rest[0]) else [p]
    return [p for p in out if p]
