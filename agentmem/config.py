"""Settings of the core engine, with the defaults a user gets when they set nothing."""

from __future__ import annotations

import msgspec

from agentmem.kinds import KINDS, KindSpec
from agentmem.ranking import Weights
from agentmem.retention import RetentionPolicy
from agentmem.supersede import Thresholds


class Config(msgspec.Struct, frozen=True, kw_only=True):
    """Engine settings; every field has a working default."""

    thresholds: Thresholds = Thresholds()
    weights: Weights = Weights()
    kinds: dict[str, KindSpec] = msgspec.field(default_factory=lambda: dict(KINDS))
    retention: RetentionPolicy = RetentionPolicy()
    sweep_max: int = 10_000  # most memories one sweep archives (lowest retention first)
    purge_index_files: bool = True  # after a governance delete, rebuild BM25 so no segment keeps the text
    max_content_chars: int = 32_000
    max_name_chars: int = 200
    shortlist: int = 20  # candidates per index for the supersession check
    recall_candidates: int = 50  # per index, at least; grows with k
    max_k: int = 1000
    access_flush_every: int = 256  # pending ids that wake the background writer early
    access_flush_seconds: float = 2.0  # how often access counts reach DuckDB, off the recall path
    vector_flush_every: int = 20_000  # changes between saves of the vector graph (the outbox covers the rest)

    def __post_init__(self) -> None:
        if "fact" not in self.kinds:
            raise ValueError("kinds must keep 'fact' (unknown kinds age like facts)")
        if self.sweep_max < 1:
            raise ValueError("sweep_max must be at least 1")
