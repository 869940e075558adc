"""Kinds of memory, tiers and statuses, and what each kind means for decay and confidence."""

from __future__ import annotations

import math

import msgspec


class KindSpec(msgspec.Struct, frozen=True):
    """How a kind ages: its half-life in days (None: never decays) and its starting confidence."""

    half_life_days: float | None
    start_confidence: float


KINDS: dict[str, KindSpec] = {
    "identity": KindSpec(3 * 365.0, 0.9),
    "preference": KindSpec(180.0, 0.8),
    "decision": KindSpec(180.0, 0.8),
    "config": KindSpec(30.0, 0.8),
    "fact": KindSpec(365.0, 0.7),
    "lesson": KindSpec(365.0, 0.75),
    "procedure": KindSpec(365.0, 0.75),
    "observation": KindSpec(7.0, 0.5),
    "event": KindSpec(None, 0.9),
}

TIERS = ("working", "episodic", "semantic", "procedural")
STATUSES = ("active", "superseded", "archived", "expired", "deleted")
SOURCES = ("api", "cli", "conversation", "note", "code", "consolidation", "import")
LINK_KINDS = ("derived_from", "evidence", "supersedes")


def decay_factor(kind: str, days: float, kinds: dict[str, KindSpec] = KINDS) -> float:
    """exp(-lambda * days), with lambda = ln 2 / half-life; 1.0 for kinds that never decay."""
    half_life = kinds[kind].half_life_days
    if half_life is None or days <= 0:
        return 1.0
    return math.exp(-math.log(2) / half_life * days)
