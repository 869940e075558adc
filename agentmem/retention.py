"""How much a memory is still worth keeping: its retention score and tier, computed at read.

retention = decay x (w_c x confidence + w_s x salience) + w_a x access, where decay is the
kind's exp(-lambda x days since the last reinforcement) and access is bounded in [0, 1):

    access = (1 - exp(-accesses / saturation)) x 2 ** (-days since the last access / half-life)

so one fresh access adds at most w_a x (1 - exp(-1 / saturation)), never enough to keep a
neglected memory alive on its own (a sum of 1 / days-since-access has no such bound).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

import msgspec

from agentmem.kinds import KINDS, KindSpec, decay_factor, decay_rate, decayed
from agentmem.records import MemoryVersion

DAY = 86400.0
RetentionTier = Literal["hot", "warm", "cold", "evictable"]


class RetentionPolicy(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Weights of the retention score, the tier boundaries and the sweep's archive threshold."""

    confidence: float = 0.55
    salience: float = 0.25
    access: float = 0.2
    access_saturation: float = 5.0  # accesses at which the access term reaches 1 - 1/e
    access_half_life_days: float = 14.0
    hot: float = 0.5
    warm: float = 0.25
    cold: float = 0.1  # below this a memory is evictable
    archive_below: float = 0.1

    def __post_init__(self) -> None:
        weights = (self.confidence, self.salience, self.access)
        if any(w < 0 for w in weights) or not math.isclose(sum(weights), 1.0, abs_tol=1e-6):
            raise ValueError("retention weights (confidence, salience, access) must be >= 0 and sum to 1")
        if self.access_saturation <= 0 or self.access_half_life_days <= 0:
            raise ValueError("access_saturation and access_half_life_days must be > 0")
        if not 0.0 < self.cold <= self.warm <= self.hot <= 1.0:
            raise ValueError("retention tiers need 0 < cold <= warm <= hot <= 1")
        if not 0.0 <= self.archive_below <= 1.0:
            raise ValueError("archive_below must be from 0 to 1")


class Retention(msgspec.Struct, frozen=True, kw_only=True):
    """A memory's retention score, its tier, and the parts the score was made of."""

    id: int
    score: float
    tier: RetentionTier
    decay: float
    effective_confidence: float
    access: float
    pinned: bool
    expired: bool


def days_between(a: datetime, b: datetime) -> float:
    return max(0.0, (b - a).total_seconds() / DAY)


def decay_of(m: MemoryVersion, now: datetime, kinds: dict[str, KindSpec] = KINDS) -> float:
    """exp(-lambda(kind) x days since the last reinforcement); an unknown kind ages like a fact."""
    kind = m.kind if m.kind in kinds else "fact"
    return decay_factor(kind, days_between(m.last_reinforced_at, now), kinds)


def effective_confidence(m: MemoryVersion, now: datetime, kinds: dict[str, KindSpec] = KINDS) -> float:
    """confidence x decay: what recall ranks by and what retention starts from."""
    return m.confidence * decay_of(m, now, kinds)


def effective_confidences(
    versions: Sequence[MemoryVersion], now: datetime, kinds: dict[str, KindSpec] = KINDS
) -> list[float]:
    """`effective_confidence` of each version, each kind's rate worked out once (recall's pool)."""
    rates = {name: decay_rate(spec) for name, spec in kinds.items()}
    fact = rates["fact"]
    return [m.confidence * decayed(rates.get(m.kind, fact), days_between(m.last_reinforced_at, now)) for m in versions]


def reinforced(confidence: float) -> float:
    """Confidence after one more reinforcement: a third of the way to 1, capped at 0.99."""
    return min(0.99, confidence + 0.3 * (1.0 - confidence))


def reinforcement(m: MemoryVersion, now: datetime) -> dict[str, Any]:
    """The fields one more reinforcement of `m` at `now` sets: confidence up, count up, clock restarted."""
    return {"confidence": reinforced(m.confidence), "reinforcements": m.reinforcements + 1, "last_reinforced_at": now}


def access_term(m: MemoryVersion, now: datetime, policy: RetentionPolicy) -> float:
    if not m.accesses or m.last_accessed_at is None:
        return 0.0
    volume = 1.0 - math.exp(-m.accesses / policy.access_saturation)
    freshness = 0.5 ** (days_between(m.last_accessed_at, now) / policy.access_half_life_days)
    return volume * freshness


def tier_of(score: float, policy: RetentionPolicy) -> RetentionTier:
    if score >= policy.hot:
        return "hot"
    if score >= policy.warm:
        return "warm"
    if score >= policy.cold:
        return "cold"
    return "evictable"


def score_of(m: MemoryVersion, now: datetime, policy: RetentionPolicy, kinds: dict[str, KindSpec] = KINDS) -> float:
    """The retention score alone (what the sweep compares with its threshold)."""
    decay = decay_of(m, now, kinds)
    base = decay * (policy.confidence * m.confidence + policy.salience * m.salience)
    return base + policy.access * access_term(m, now, policy) if m.accesses else base


def retention(
    m: MemoryVersion, now: datetime, policy: RetentionPolicy, kinds: dict[str, KindSpec] = KINDS
) -> Retention:
    decay = decay_of(m, now, kinds)
    access = access_term(m, now, policy)
    score = score_of(m, now, policy, kinds)
    return Retention(
        id=m.id,
        score=round(score, 6),
        tier=tier_of(score, policy),
        decay=round(decay, 6),
        effective_confidence=round(m.confidence * decay, 6),
        access=round(access, 6),
        pinned=m.pinned,
        expired=m.expires_at is not None and m.expires_at <= now,
    )
