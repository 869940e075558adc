"""The rules that decide whether a new memory is new, repeats a current one, or replaces one.

In order: the same explicit key, then the same triple slot (subject + predicate), then the
same normalised content (reinforce), then the best Jaccard match above the supersede
threshold. Events and observations never supersede and are never superseded.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from agentmem.records import MemoryVersion, NearDuplicate, Outcome
from agentmem.text import jaccard, normalise, tokens

NEVER_SUPERSEDED = frozenset({"event", "observation"})


class Thresholds(msgspec.Struct, frozen=True):
    """Jaccard thresholds on normalised tokens: at or above `supersede` replaces, at or above `hint` is named."""

    supersede: float = 0.7
    hint: float = 0.4
    max_hints: int = 5

    def __post_init__(self) -> None:
        if not 0.0 < self.hint <= self.supersede <= 1.0:
            raise ValueError("thresholds need 0 < hint <= supersede <= 1")


class Decision(msgspec.Struct, frozen=True):
    outcome: Outcome
    target: MemoryVersion | None = None
    reason: str | None = None
    similarity: float | None = None
    near: list[NearDuplicate] = []


def slot_of(subject: str, predicate: str) -> str:
    """The triple slot: a new object for the same subject and predicate replaces the old one."""
    return f"{normalise(subject)}|{normalise(predicate)}"


def decide(
    *,
    kind: str,
    content: str,
    key: str | None = None,
    slot: str | None = None,
    triple_object: str | None,
    keyed: MemoryVersion | None,
    slotted: MemoryVersion | None,
    exact: MemoryVersion | None,
    candidates: Sequence[MemoryVersion],
    thresholds: Thresholds,
) -> Decision:
    """Apply the rules to current memories of the same project found by key, slot, content and search."""
    new_tokens = set(tokens(content))

    def other_slot(c: MemoryVersion) -> bool:
        """Two memories filed under different keys (or triple slots) are different facts."""
        c_slot = slot_of(c.triple.subject, c.triple.predicate) if c.triple else None
        return bool((key and c.key and c.key != key) or (slot and c_slot and c_slot != slot))

    candidates = [c for c in candidates if not other_slot(c)]
    scored = sorted(
        ((jaccard(new_tokens, set(tokens(c.content))), c) for c in candidates),
        key=lambda sc: (-sc[0], -sc[1].id),
    )

    def hints(skip: int | None) -> list[NearDuplicate]:
        return [
            NearDuplicate(id=c.id, similarity=round(s, 4), content=c.content)
            for s, c in scored
            if c.id != skip and thresholds.hint <= s < thresholds.supersede
        ][: thresholds.max_hints]

    if kind in NEVER_SUPERSEDED:
        return Decision("created", near=hints(None))
    norm = normalise(content)
    for target, reason in ((keyed, "key"), (slotted, "triple")):
        if target is None or target.kind in NEVER_SUPERSEDED:
            continue
        same = normalise(target.content) == norm or (
            reason == "triple"
            and triple_object is not None
            and target.triple is not None
            and normalise(target.triple.object) == normalise(triple_object)
        )
        if same:
            return Decision("reinforced", target=target, reason=reason, similarity=1.0)
        sim = round(jaccard(new_tokens, set(tokens(target.content))), 4)
        return Decision("superseded", target=target, reason=reason, similarity=sim, near=hints(target.id))
    if exact is not None and exact.kind not in NEVER_SUPERSEDED and not other_slot(exact):
        return Decision("reinforced", target=exact, reason="same content", similarity=1.0)
    for sim, cand in scored:
        if cand.kind in NEVER_SUPERSEDED or sim < thresholds.supersede:
            continue
        return Decision("superseded", target=cand, reason="similarity", similarity=round(sim, 4), near=hints(cand.id))
    return Decision("created", near=hints(None))
