"""Kinds of memory, tiers and statuses, and what each kind means for decay and confidence."""

from __future__ import annotations

import math

import msgspec


class KindSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How a kind ages: its half-life in days (None: never decays) and its starting confidence.
    `moment`: what it records happened at its time (an event, an observation), rather than holding
    from its time until it is replaced (a fact, a preference): how a time window reads it."""

    half_life_days: float | None
    start_confidence: float
    moment: bool = False

    def __post_init__(self) -> None:
        if self.half_life_days is not None and not 0 < self.half_life_days <= 1_000_000:
            raise ValueError(f"half_life_days must be > 0 (or null: never decays), not {self.half_life_days}")
        if not 0.0 < self.start_confidence <= 1.0:
            raise ValueError(f"start_confidence must be in (0, 1], not {self.start_confidence}")


KINDS: dict[str, KindSpec] = {
    "identity": KindSpec(3 * 365.0, 0.9),
    "preference": KindSpec(180.0, 0.8),
    "decision": KindSpec(180.0, 0.8),
    "config": KindSpec(30.0, 0.8),
    "fact": KindSpec(365.0, 0.7),
    "lesson": KindSpec(365.0, 0.75),
    "procedure": KindSpec(365.0, 0.75),
    "claim": KindSpec(180.0, 0.6),  # a sentence of an observed turn (agentmem.claims): said, not curated
    "observation": KindSpec(7.0, 0.5, moment=True),
    "event": KindSpec(None, 0.9, moment=True),
}

TIERS = ("working", "episodic", "semantic", "procedural")
STATUSES = ("active", "superseded", "archived", "expired", "deleted")
SOURCES = ("api", "cli", "conversation", "note", "code", "consolidation", "import", "mcp")


def with_overrides(overrides: dict[str, KindSpec]) -> dict[str, KindSpec]:
    """The built-in kinds with some replaced or added (a kind name is lower-case letters and _)."""
    for name in overrides:
        if not name or not name.replace("_", "a").isalpha() or not name.islower() or len(name) > 40:
            raise ValueError(f"kind names are lower-case letters and underscores, not {name!r}")
    return {**KINDS, **overrides}


def decay_rate(spec: KindSpec) -> float:
    """lambda = ln 2 / half-life, per day; 0.0 for a kind that never decays."""
    return 0.0 if spec.half_life_days is None else math.log(2) / spec.half_life_days


def decay_factor(kind: str, days: float, kinds: dict[str, KindSpec] = KINDS) -> float:
    """exp(-lambda * days) (`decay_rate`); 1.0 for kinds that never decay."""
    return decayed(decay_rate(kinds[kind]), days)


def decayed(rate: float, days: float) -> float:
    """exp(-rate * days), and 1.0 for no rate or no time passed."""
    return math.exp(-rate * days) if rate and days > 0 else 1.0
