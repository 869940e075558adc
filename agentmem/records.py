"""Typed records shared by the core, the CLI and the API: versions, requests, hits and replies."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import msgspec

MAX_ID = 2**53  # ids stay exact in JSON numbers everywhere

Outcome = Literal["created", "reinforced", "superseded"]


def _about(text: str) -> msgspec.Meta:
    """A field's description (the OpenAPI schema, the MCP tool, docs/reference/operations.md)."""
    return msgspec.Meta(description=text)


_SET_BY_HOST = msgspec.Meta(extra={"mcp": False})  # who and where: the MCP server fills it in


class Triple(msgspec.Struct, frozen=True):
    """A structured claim; (subject, predicate) is the slot a new object supersedes."""

    subject: str
    predicate: str
    object: str


class MemoryVersion(msgspec.Struct, frozen=True, kw_only=True):
    """One version of one memory, exactly as stored (the embedding stays in the store)."""

    id: int
    lineage_id: int
    version: int
    parent_id: int | None
    is_latest: bool
    status: str
    content: str
    title: str | None = None
    triple: Triple | None = None
    key: str | None = None
    tier: str
    kind: str
    project: str
    agent: str | None = None
    session: str | None = None
    source: str
    source_ref: str | None = None
    source_ids: list[int] = []
    salience: float
    confidence: float
    reinforcements: int = 0
    accesses: int = 0
    pinned: bool = False
    created_at: datetime
    valid_from: datetime
    valid_to: datetime | None = None
    expires_at: datetime | None = None
    last_reinforced_at: datetime
    last_accessed_at: datetime | None = None
    superseded_by: int | None = None
    superseded_at: datetime | None = None
    supersede_reason: str | None = None
    supersede_similarity: float | None = None
    content_hash: str = ""
    archived_at: datetime | None = None
    deleted_at: datetime | None = None
    status_reason: str | None = None


class NewMemory(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What a caller asks to remember (the remember operation's arguments); everything but content
    and project has a default. `_SET_BY_HOST` fields are the MCP server's to fill, not a tool argument's."""

    content: Annotated[str, _about("the memory, as one self-contained sentence")]
    project: Annotated[str | None, _about("the project it belongs to")] = None
    kind: Annotated[
        str, _about("fact, preference, decision, config, identity, lesson, procedure, event or observation")
    ] = "fact"
    tier: Annotated[str, _about("working, episodic, semantic or procedural")] = "semantic"
    title: Annotated[str | None, _about("a short title")] = None
    key: Annotated[
        str | None,
        _about(
            "a stable slot such as 'db.engine' or 'user.editor': remembering the same key again supersedes the "
            "old value (kept in history); use one for anything that may change"
        ),
    ] = None
    triple: Annotated[
        Triple | None, _about("a (subject, predicate, object) claim: a new object for the same two supersedes")
    ] = None
    agent: Annotated[str | None, _SET_BY_HOST, _about("the agent that learned it")] = None
    session: Annotated[str | None, _SET_BY_HOST, _about("the session it was learned in")] = None
    source: Annotated[str, _SET_BY_HOST, _about("what recorded it: api, cli, mcp, ...")] = "api"
    source_ref: Annotated[str | None, _SET_BY_HOST, _about("where in the source, e.g. file:line")] = None
    source_ids: Annotated[list[int], _SET_BY_HOST, _about("the memories it was derived from (its evidence)")] = []
    salience: Annotated[float, _about("how much it matters, 0 to 1")] = 0.5
    confidence: Annotated[float | None, _about("how sure, 0 to 1 (default from its kind)")] = None
    valid_from: Annotated[datetime | None, _about("since when it holds (ISO 8601; default now)")] = None
    expires_at: Annotated[datetime | None, _about("when it expires (ISO 8601)")] = None
    ttl_days: Annotated[float | None, _about("expire after this many days")] = None
    pinned: Annotated[bool, _about("never archived by the sweep")] = False


class Message(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One message of a session: who said what, when, under which id (agentmem.admission.conversation)."""

    role: str
    content: str
    time: datetime | None = None
    id: str | None = None
    name: str | None = None
    type: str | None = None


class NearDuplicate(msgspec.Struct, frozen=True):
    """A current memory similar enough to mention, not enough to replace."""

    id: int
    similarity: float
    content: str


class RememberResult(msgspec.Struct, frozen=True, kw_only=True):
    """What remember() did: created, reinforced, or superseded (with the old id and why). A new
    version continues the lineage of `superseded_id`; `also_superseded` are other current memories
    it retired, each asking its question with another answer (reason "new answer")."""

    outcome: Outcome
    memory: MemoryVersion
    superseded_id: int | None = None
    reason: str | None = None
    similarity: float | None = None
    near_duplicates: list[NearDuplicate] = []
    also_superseded: list[int] = []


class ScoreParts(msgspec.Struct, frozen=True, kw_only=True):
    """Why a hit ranked where it did."""

    bm25_rank: int | None = None
    vector_rank: int | None = None
    bm25: float | None = None
    cosine: float | None = None
    relevance: float
    effective_confidence: float
    recency: float
    salience: float
    time_fit: float | None = None  # how well valid_from falls in the recall's time window (1 = inside)
    asked: bool | None = None  # true: a question and its answer, asking the query's own question


class Hit(msgspec.Struct, frozen=True, kw_only=True):
    """One recalled memory with its score; `has_history` says older versions exist.

    `older_than` names a hit of the same reply that states the same slot with another value and
    is newer: this one is the older statement, ranked under it (see agentmem.slots); on an observed
    turn, it may name the claim that replaced the turn's answer (agentmem.claims). A claim hit
    carries `stated_in`, the turn it was said in. A hit that
    is itself a superseded version (asked for with `include_superseded`) is not current: its
    `memory` carries the death record (`superseded_by`, `superseded_at`, `supersede_reason`).
    """

    memory: MemoryVersion
    score: float
    parts: ScoreParts
    has_history: bool
    older_than: int | None = None
    older_reason: str | None = None  # what said `older_than`: "pair model", "same question", "claim superseded"
    stated_in: MemoryVersion | None = None  # a claim's turn: the observation it was said in (agentmem.claims)


LinkKind = Literal["derived_from"]  # src was built from dst (its evidence)


class Link(msgspec.Struct, frozen=True):
    """A typed edge between two versions: a memory derived from its evidence."""

    src_id: int
    dst_id: int
    kind: LinkKind
    created_at: datetime


class Stats(msgspec.Struct, frozen=True, kw_only=True):
    """Counts over the store and the indexes."""

    versions: int
    latest_active: int
    by_status: dict[str, int]
    by_tier: dict[str, int]
    by_kind: dict[str, int]
    projects: int
    links: int
    outbox_pending: int
    bm25_docs: int
    vector_docs: int
    schema_version: int
    embedding_model: str


class Reembedding(msgspec.Struct, kw_only=True):
    """A change of embedding model under way: distinct texts given a vector of `model` so far
    (`done`) of those that had none when it began (`total`); `error` if it stopped (the old
    model goes on serving; the next open starts again where it stopped)."""

    model: str
    done: int
    total: int
    error: str | None = None


class TimeRange(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An explicit window over `valid_from` for recall: [start, end), either side may be left open."""

    start: datetime | None = None
    end: datetime | None = None


class TimeWindow(msgspec.Struct, frozen=True, kw_only=True):
    """The window a recall understood, [start, end) in UTC with either side open (None), the words it
    came from (`expression`), and whether they were in the query or an explicit `time_range`."""

    start: datetime | None
    end: datetime | None
    source: Literal["query", "time_range"]
    expression: str | None = None


class Recalled(msgspec.Struct, frozen=True, kw_only=True):
    """What one recall found: the hits, the time window it understood (None: no time named), and what
    it did without (`degraded`, e.g. BM25 alone while the model is down); with `include_history`, each
    hit's older versions by lineage id."""

    hits: list[Hit]
    history: dict[str, list[MemoryVersion]] = {}
    degraded: list[str] = []
    window: TimeWindow | None = None
