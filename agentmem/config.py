"""Settings of the core engine, with the defaults a user gets when they set nothing."""

from __future__ import annotations

import msgspec

from agentmem.ranking import Weights
from agentmem.supersede import Thresholds


class Config(msgspec.Struct, frozen=True, kw_only=True):
    """Engine settings; every field has a working default."""

    thresholds: Thresholds = Thresholds()
    weights: Weights = Weights()
    max_content_chars: int = 32_000
    max_name_chars: int = 200
    shortlist: int = 20  # candidates per index for the supersession check
    recall_candidates: int = 50  # per index, at least; grows with k
    max_k: int = 1000
    access_flush_every: int = 256  # pending ids that wake the background writer early
    access_flush_seconds: float = 2.0  # how often access counts reach DuckDB, off the recall path
    vector_flush_every: int = 20_000  # changes between saves of the vector graph (the outbox covers the rest)
