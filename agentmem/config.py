"""Settings of the core engine, with the defaults a user gets when they set nothing."""

from __future__ import annotations

import msgspec

from agentmem.kinds import KINDS, KindSpec
from agentmem.provider import ProviderConfig
from agentmem.ranking import Weights
from agentmem.retention import RetentionPolicy
from agentmem.supersede import Thresholds


class ConsolidationSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Thresholds of the three passes."""

    min_sessions: int = 2  # distinct sessions that must support a semantic memory or a procedure
    # cosine at which two pieces of evidence say the same thing (with MiniLM, 0.8 still joins
    # "the upload test is flaky" with "the download test is flaky")
    similarity: float = 0.85
    archive_after: int = 2  # reinforcements of a semantic memory after which its children are archived
    min_steps: int = 3
    max_steps: int = 6
    max_pool: int = 10_000  # most recent current evidence clustered in one semantic pass

    def __post_init__(self) -> None:
        if self.min_sessions < 1 or self.archive_after < 1:
            raise ValueError("min_sessions and archive_after must be at least 1")
        if not 0.0 < self.similarity <= 1.0:
            raise ValueError("similarity must be in (0, 1]")
        if not 2 <= self.min_steps <= self.max_steps <= 20:
            raise ValueError("steps need 2 <= min_steps <= max_steps <= 20")
        if self.max_pool < 2:
            raise ValueError("max_pool must be at least 2")


class ClaimRules(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Which sentences of an observed turn become claims (see agentmem.claims); `enabled=False`
    keeps turns whole only, as before claims."""

    enabled: bool = True
    min_words: int = 2
    max_words: int = 60
    max_per_turn: int = 12

    def __post_init__(self) -> None:
        if not 1 <= self.min_words <= self.max_words:
            raise ValueError("claims need 1 <= min_words <= max_words")
        if self.max_per_turn < 1:
            raise ValueError("claims.max_per_turn must be at least 1")


class Config(msgspec.Struct, frozen=True, kw_only=True):
    """Engine settings; every field has a working default."""

    thresholds: Thresholds = Thresholds()
    weights: Weights = Weights()
    kinds: dict[str, KindSpec] = msgspec.field(default_factory=lambda: dict(KINDS))
    retention: RetentionPolicy = RetentionPolicy()
    sweep_max: int = 10_000  # most memories one sweep archives (lowest retention first)
    consolidation: ConsolidationSettings = ConsolidationSettings()
    provider: ProviderConfig | None = None  # an OpenAI-compatible endpoint that words abstractions
    purge_index_files: bool = True  # after a governance delete, rebuild BM25 so no segment keeps the text
    max_content_chars: int = 32_000
    max_name_chars: int = 200
    shortlist: int = 20  # nearest current memories (by vector) the supersession check reads
    recall_candidates: int = 50  # per index, at least; grows with k
    claims: ClaimRules = ClaimRules()  # which sentences of an observed turn become claims (agentmem.claims)
    slot_window: int = 10  # the best hits compared for the same slot stated twice (agentmem.slots); 0: off
    slot_query_words: int = 2  # query words two sentences must share to answer it as one slot
    max_k: int = 1000
    access_flush_every: int = 256  # pending ids that wake the background writer early
    access_flush_seconds: float = 2.0  # how often access counts reach DuckDB, off the recall path
    text_commit_every: int = 256  # changes waiting in the BM25 writer that make the writer commit it
    text_commit_seconds: float = 0.5  # quiet time after which waiting BM25 changes are committed
    vector_flush_every: int = 20_000  # changes between saves of the vector graph (the outbox covers the rest)
    # DuckDB's worker threads (the embedded store): one runs each small statement on the caller's
    # thread, ~12% off a write (docs/design/benchmark-notes.md); more can speed a large scan on many cores
    store_threads: int = 1
    # PostgreSQL: how long one statement waits for a lock, and how long a batch is run again
    # (with jittered backoff) after a deadlock or lock timeout before its callers hear the conflict
    lock_timeout_seconds: float = 5.0
    retry_deadline_seconds: float = 20.0  # with the last lock wait, under the client's 30 s timeout

    def __post_init__(self) -> None:
        if "fact" not in self.kinds:
            raise ValueError("kinds must keep 'fact' (unknown kinds age like facts)")
        if self.slot_window < 0 or self.slot_query_words < 1:
            raise ValueError("slot_window must be at least 0 and slot_query_words at least 1")
        if self.sweep_max < 1:
            raise ValueError("sweep_max must be at least 1")
        if self.store_threads < 1:
            raise ValueError("store_threads must be at least 1")
        if not 0 < self.lock_timeout_seconds <= self.retry_deadline_seconds:
            raise ValueError("lock_timeout_seconds must be more than 0 and at most retry_deadline_seconds")
