"""The slot rules of recall: two hits that state one slot with different values.

Used by `agentmem.currentness.order` to put the newer statement first when no rule was sure enough
to supersede at write time (and observations never supersede). `pairs` finds them; `same_slot`
and `claims` are the tests. The cases, with examples: docs/design/modules.md#slots.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache

from agentmem.currentness.analysis import SAID, TIMELESS, Analysis, Claim, claims
from agentmem.records import Hit
from agentmem.supersede import (
    NUMBER_WORDS,
    Words,
    described_alike,
    moved,
    new_state,
    new_value,
    question_slot,
    words,
)
from agentmem.timewindow import expressions

# Question words say what is asked, not which slot.
_ASKING = frozenset(words("how many much what which where who whom whose why").words)
SENTENCES_PER_HIT = 3


def query_words(query: str) -> frozenset[str]:
    """The query's content words, as `supersede.words` reads them, less the question words."""
    return frozenset(words(query).words) - _ASKING


def time_words(query: str) -> frozenset[str]:
    """The words of the query's time expressions: "last year" says when, not which slot, so two
    sentences never share them towards a pair ("our camping trip last year" and "a blast last year
    at the Pride fest" answer no one question)."""
    return frozenset(words(" ".join(expressions(query))).words)


def _numeric(word: str) -> bool:
    return any(c.isdigit() for c in word) or word in NUMBER_WORDS


def _other_value(a: Words, b: Words) -> bool:
    """Each has a value the other lacks, of one shape: a number for a number, or a name for a name."""
    gained, lost = b.values - a.values, a.values - b.values
    numbers = any(map(_numeric, gained)) and any(map(_numeric, lost))
    names = not all(map(_numeric, gained)) and not all(map(_numeric, lost))
    return bool(gained and lost) and (numbers or names)


def _says_as_much(a: Claim, b: Claim) -> bool:
    """The newer sentence `b` says something the older `a` did not (not a restatement), and has a
    value of each shape that `a` has (a number for a number, a name for a name): a sentence without
    the number never wins over the one with it."""
    if b.described <= a.described and b.words.values <= a.words.values:
        return False
    shapes = [(any(map(_numeric, c.words.values)), not all(map(_numeric, c.words.values))) for c in (a, b)]
    return all(has_b or not has_a for has_a, has_b in zip(shapes[0], shapes[1], strict=True))


def _best(found: tuple[Claim, ...], query: frozenset[str]) -> list[tuple[int, Claim]]:
    """The claims `found` in a text with the most query words describing their slot, most first:
    (how many, claim)."""
    scored = [(len(query & c.described), c) for c in found]
    scored.sort(key=lambda sc: -sc[0])
    return scored[:SENTENCES_PER_HIT]


@lru_cache(maxsize=65_536)
def _rule_slot(a: Words, b: Words) -> bool:
    """A supersession rule's same-slot test between two claims (cached: a store's claims meet again
    and again, whatever the query)."""
    return new_value(a, b) or new_state(a, b) or moved(a, b)


def _may_pair(a: Words, wa: frozenset[str], b: Words, wb: frozenset[str]) -> bool:
    """False only where `_rule_slot(a, b)` is False, from what each rule needs first (`wa`, `wb`: the
    claims' word sets). Every rule needs a word both say (`new_value` and `moved` compare shared words,
    `new_state` a shared subject); besides, `new_value` needs a value (or capitalised word) that each
    has and the other lacks, `new_state` a copula on both sides with the same linker, and `moved` a
    word of change or "now" in the newer one, and both the descriptive words of one among the other's
    (`supersede.described_alike`). Most pairs of a recall's hits fail here in microseconds
    instead of running the rules (a large store's pairs are mostly new to `_rule_slot`'s cache)."""
    if wa.isdisjoint(wb):
        return False
    if a.copula is not None and b.copula is not None and a.linker == b.linker:
        return True  # new_state's to judge
    marked = a.values | b.values | a.maybe | b.maybe
    value = not (wb - wa).isdisjoint(marked) and not (wa - wb).isdisjoint(marked)
    move = (b.now and not a.now) or b.change or b.retract
    return (value or move) and described_alike(a, b)


# A hit's best claims as the pair test reads them: (how many query words, the claim, the query words
# describing it)
_Read = list[tuple[int, Claim, frozenset[str]]]


def _read(best: list[tuple[int, Claim]], query: frozenset[str], when: frozenset[str] = frozenset()) -> _Read:
    return [(n, c, (query - when) & c.described) for n, c in best]


def _same_read(a: _Read, b: _Read, query: frozenset[str], query_words: int, said: bool, rules: bool = True) -> bool:
    """Whether two hits' best claims, each read once (a recall compares each hit's claims with many
    others'), state one slot: the pair tests of the module docstring; with `rules` False, only
    those that read the query (not the write-time value rules)."""
    for na, ca, qa in a:
        wa = ca.words
        for nb, cb, qb in b:
            wb = cb.words
            if rules and wa.values and wb.values and _may_pair(wa, ca.word_set, wb, cb.word_set) and _rule_slot(wa, wb):
                return True
            shared = qa & qb  # names alone ("Caroline") are no slot
            enough = len(shared) >= query_words and 2 * len(shared) >= max(na, nb)
            if enough and _other_value(wa, wb):
                return True
            if said and enough and 2 * len(shared) >= len(query) and _says_as_much(ca, cb):
                return True
    return False


def same_slot(
    older: str,
    newer: str,
    query: frozenset[str],
    query_words: int,
    said: bool = False,
    when: frozenset[str] = frozenset(),
) -> bool:
    """`newer` states a slot that `older` states, with another value (see the module docstring);
    `said`: both are things said in a conversation (observations, claims)."""
    qa, qb = question_slot(older), question_slot(newer)
    if qa is not None and qb is not None:
        return _asks_same(qa, qb)
    a = _read(_best(claims(older, said), query), query, when)
    b = _read(_best(claims(newer, said), query), query, when)
    return _same_read(a, b, query, query_words, said)


def _asks_same(a: tuple[str, str], b: tuple[str, str]) -> bool:
    """Two texts that are each a question and its answer: the question is the slot, and the answers differ."""
    return a[0] == b[0] and a[1] != b[1]


def pairs(
    hits: Sequence[Hit],
    analyses: Mapping[int, Analysis],
    q: frozenset[str],
    when_words: frozenset[str],
    *,
    query_words_needed: int,
    value_rules: bool = True,
) -> list[tuple[int, int]]:
    """(older, newer) positions of `hits` that state one slot by the tests of the module docstring:
    the newer strictly later. `analyses`: the hits' texts as written (by memory id; a hit without
    one, an event, never pairs); `q` and `when_words`: the query's `query_words` and `time_words`;
    `value_rules`: also the write-time value rules (`_rule_slot`), which the pair model stands in
    for where it reads the hits. `agentmem.currentness.order` places and marks them."""
    head = list(hits)
    when = [h.memory.valid_from for h in head]
    said = [h.memory.kind in SAID for h in head]
    read_of = [analyses.get(h.memory.id) for h in head]
    slots = [a.question if a is not None else None for a in read_of]
    best = [_best((a.said if said[i] else a.claims) if a is not None else (), q) for i, a in enumerate(read_of)]
    # what can pair: not an event, and a question slot or a claim that this query or a rule can read
    can = [
        a is not None and h.memory.kind not in TIMELESS and (s is not None or bool(b))
        for h, a, s, b in zip(head, read_of, slots, best, strict=True)
    ]
    read = [_read(b, q, when_words) if ok else [] for b, ok in zip(best, can, strict=True)]
    # without the value rules, two hits pair only on query words that describe a claim of each
    asked = [frozenset().union(*(qw for _, _, qw in r)) for r in read]
    # an event, or a hit that states nothing this query or a rule can pair, takes no part; the
    # others are compared oldest first, each with those strictly later (statements of one moment, a
    # conversation imported at once, are not ordered)
    if not value_rules:  # then a hit pairs on a question slot, or on enough query words of its own
        can = [c and (s is not None or len(a) >= query_words_needed) for c, s, a in zip(can, slots, asked, strict=True)]
    taking = sorted((i for i in range(len(head)) if can[i]), key=when.__getitem__)
    found: list[tuple[int, int]] = []
    for at, i in enumerate(taking):
        older = head[i].memory
        for j in taking[at + 1 :]:
            newer = head[j].memory
            if not when[i] < when[j] or older.lineage_id == newer.lineage_id or older.content == newer.content:
                continue
            a, b = slots[i], slots[j]
            if a is not None and b is not None:
                same = _asks_same(a, b)
            elif not value_rules and len(asked[i] & asked[j]) < query_words_needed:
                same = False
            else:
                same = _same_read(read[i], read[j], q, query_words_needed, said[i] and said[j], value_rules)
            if same:
                found.append((i, j))
    return sorted(found)
