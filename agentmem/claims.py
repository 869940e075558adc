"""Claims, not chunks: each sentence of an observed turn that states something is a memory of its own.

The turn is kept whole as evidence; its claims are decided like `remember()` in the same write unit,
so a conversation's changes supersede sentence by sentence. `roll_up` shows one hit per turn in
recall. Why these rules, and the splitters not chosen: docs/design/modules.md#claims.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

import msgspec

from agentmem.admission.extract import sentences
from agentmem.admission.policy import before_hedge, remark, screen
from agentmem.config import ClaimRules
from agentmem.records import Hit, MemoryVersion, NewMemory
from agentmem.supersede import words

CLAIM = "claim"  # the kind of a turn's sentence kept as its own memory
TURN = "observation"  # the kind of a turn whose sentences become claims
RESTATED = frozenset({"similarity", "same value"})  # supersession reasons that say the same thing again


# A speaker label says who spoke, not what: the hook recipe logs a prompt as "User asked: ...".
_SPEAKER = re.compile(
    r"(?i)^(?:(?:the\s+)?(?:user|assistant|human|customer|agent)\s+(?:asked|said|wrote|says)|user|human|me)\s*:\s*"
)


def is_turn(m: NewMemory) -> bool:
    """Whether an observation is something said (a turn), whose sentences become claims; a tool's
    observation (the hooks name the tool in its title: "Used Edit: ...") is what a tool did."""
    return m.kind == TURN and m.title is None


def states_something(sentence: str, rules: ClaimRules) -> bool:
    """Whether a sentence of a turn states something (the rules of the module docstring)."""
    if sentence.rstrip().endswith("?") or remark(sentence) is not None or screen(sentence) is not None:
        return False
    n = len(words(sentence).words)
    return rules.min_words <= n and len(sentence.split()) <= rules.max_words


def of_turn(text: str, rules: ClaimRules) -> list[str]:
    """The sentences of a turn that become claims, in order, each once."""
    said = (before_hedge(_SPEAKER.sub("", s, count=1)) for s in sentences(text))
    found = [s for s in dict.fromkeys(said) if s and states_something(s, rules)]
    return found[: rules.max_per_turn]


def claim_of(turn: MemoryVersion, sentence: str) -> NewMemory:
    """The claim a sentence of `turn` makes: in the turn's project, session and time, derived from it."""
    return NewMemory(
        content=sentence,
        project=turn.project,
        kind=CLAIM,
        tier="semantic",
        agent=turn.agent,
        session=turn.session,
        source=turn.source,
        source_ref=turn.source_ref,
        source_ids=[turn.id],
        salience=turn.salience,
        valid_from=turn.valid_from,
        expires_at=turn.expires_at,
    )


def turn_of(m: MemoryVersion) -> int | None:
    """The id of the turn a claim was stated in (None for any other memory)."""
    return m.source_ids[0] if m.kind == CLAIM and m.source_ids else None


def roll_up(
    hits: Sequence[Hit],
    query_words: frozenset[str],
    turns: Mapping[int, MemoryVersion],
    claims_of: Callable[[list[int]], Mapping[int, list[MemoryVersion]]],
) -> list[Hit]:
    """`hits` (best first), one per turn: claims and their turns read together (see the module docstring).

    `turns`: the turns of the claim hits, by id (current or not); `claims_of(turn ids)`: by turn,
    the claims derived from it (stated in it, or reinforced by it), whatever their status.
    """
    seen: set[int] = set()  # turns stood for already, by their best-ranked member (the turn or a claim of it)
    out: list[Hit] = []
    for h in hits:
        t = turn_of(h.memory)
        if t is None and h.memory.kind == TURN:
            t = h.memory.id
        if t is None:
            out.append(h)
        elif t not in seen:
            seen.add(t)
            out.append(msgspec.structs.replace(h, stated_in=turns.get(t)) if h.memory.id != t else h)
    open_turns = [h.memory.id for h in out if h.memory.kind == TURN and h.older_than is None]
    if not open_turns or not query_words:
        return out
    by_turn = claims_of(open_turns)
    # the hit of this reply that stands for a claim: the claim's own, or its turn's
    standing = {c.id: t for t in open_turns for c in by_turn.get(t, [])} | {h.memory.id: h.memory.id for h in out}
    kept: list[Hit] = []
    for h in out:
        dead = _answered_by_dead_claim(by_turn.get(h.memory.id, []), query_words)
        if dead is not None and dead.superseded_by is not None and dead.supersede_reason not in RESTATED:
            newer = standing.get(dead.superseded_by, dead.superseded_by)  # a claim said again is no older news
            h = msgspec.structs.replace(h, older_than=newer, older_reason="claim superseded")
        kept.append(h)
    return kept


def _answered_by_dead_claim(claims: list[MemoryVersion], query_words: frozenset[str]) -> MemoryVersion | None:
    """The superseded claim that best answers the query among a turn's claims, if the best one is
    superseded: the turn's answer to this query is older news. None when a current claim answers
    as well, or no claim shares a query word."""
    best: list[MemoryVersion] = []
    top = 0
    for c in claims:
        n = len(query_words & set(words(c.content).words))
        if n > top:
            best, top = [c], n
        elif n == top and n:
            best.append(c)
    if not top or any(c.status == "active" for c in best):
        return None
    dead = [c for c in best if c.status == "superseded" and c.superseded_by is not None]
    return dead[0] if dead else None
