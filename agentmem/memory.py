"""The Memory facade: remember, revise, recall, history, and the index upkeep behind them.

>>> with Memory("~/.local/share/agentmem", embedder=SentenceTransformerEmbedder()) as mem:  # doctest: +SKIP
...     mem.remember("We use Postgres 15", project="shop", key="db")
...     mem.remember("We moved to MySQL", project="shop", key="db").outcome
'superseded'
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from agentmem import admission, audit, embedded, lifecycle, timewindow, transfer, validate, writes
from agentmem import consolidate as consolidation
from agentmem.admission import ScanReport
from agentmem.audit import AuditEntry
from agentmem.backend import Indexes, Live
from agentmem.config import Config
from agentmem.context import Context, working_set
from agentmem.contract import MemoryAPI
from agentmem.embedded import DB_FILE
from agentmem.engine import Engine
from agentmem.errors import ValidationError
from agentmem.filters import Filter, one_of
from agentmem.kinds import STATUSES, TIERS
from agentmem.migrations import LATEST
from agentmem.operations import (
    AuditRequest,
    ConsolidateRequest,
    ContextRequest,
    DeleteRequest,
    EndSessionRequest,
    IngestConversationRequest,
    IngestPathRequest,
    ListRequest,
    PinRequest,
    RebuildRequest,
    RecallRequest,
    RestoreRequest,
    ReviseRequest,
    ScopeRequest,
    SweepRequest,
)
from agentmem.provider import Provider
from agentmem.recall import pipeline
from agentmem.recall.candidates import VectorHealth, message
from agentmem.recall.request import checked
from agentmem.records import Hit, Link, MemoryVersion, NewMemory, Recalled, RememberResult, Stats
from agentmem.retention import Retention, retention
from agentmem.store import StoreOfRecord
from indexes.docs import IndexFailure
from indexes.embed import Embedder
from indexes.onnx_embed import embedder_named
from indexes.sync import Consistency

log = logging.getLogger("agentmem")

__all__ = ["DB_FILE", "Memory"]


def _now() -> datetime:
    return datetime.now(UTC)


class Memory(MemoryAPI):
    """A versioned memory in one data directory: DuckDB of record plus BM25 and vector indexes;
    or, with `database_url`, one node of many on a PostgreSQL database (`agentmem.postgres`).

    Writes from many threads are group-committed by the engine (`agentmem.engine`); recall may
    run from many threads at once and sees every acknowledged write.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        embedder: Embedder,
        config: Config | None = None,
        clock: Callable[[], datetime] = _now,
        database_url: str | None = None,
        embedders: Callable[[str], Embedder | None] = embedder_named,
    ) -> None:
        self.path = Path(path).expanduser()
        self.path.mkdir(parents=True, exist_ok=True)
        self.config = config or Config()
        self.clock = clock
        self._vectors = VectorHealth()  # whether recall can search by vector (`degraded`)
        self.engine = Engine(self.path, embedder=embedder, config=self.config, clock=clock, database_url=database_url,
                             embedders=embedders)  # fmt: skip

    @property
    def embedder(self) -> Embedder:
        """The model that serves now: the configured one, or while every version is re-embedded
        for it (`Engine.reembedding`), the one the store was written with."""
        return self.engine.serving.embedder

    @embedder.setter
    def embedder(self, embedder: Embedder) -> None:
        """Embed recall's queries with another instance of the serving model (its own cache)."""
        self.engine.serving.query_embedder = embedder

    @property
    def store(self) -> StoreOfRecord:
        return self.engine.store

    @property
    def live(self) -> Live:
        return self.engine.live

    @property
    def indexes(self) -> Indexes:
        return self.engine.indexes

    @property
    def provider(self) -> Provider | None:
        return self.engine.provider

    # -- lifecycle ---------------------------------------------------------

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Write pending access counts, persist the indexes, release the data directory."""
        self.engine.close()

    def flush(self) -> None:
        self.engine.flush()

    def warm_up(self) -> bool:
        """Load the embedding model now (a server calls this at startup); False, and degraded, if it cannot."""
        timewindow.warm_up()
        try:
            self.embedder.embed(["warm up"])
        except IndexFailure as exc:
            self._vectors.error = message(exc)
            log.error("the embedding model did not load: %s", exc)
            return False
        self._vectors.up()
        return True

    @property
    def degraded(self) -> list[str]:
        """What recall is doing without right now (empty when all is well); clears once it works again."""
        return self._vectors.degraded

    @property
    def index_stale(self) -> bool:
        """True while an index write has failed and the outbox has not been replayed yet."""
        return self.engine.index_stale

    # -- writing -----------------------------------------------------------

    def _remember(self, new: NewMemory, *, actor: str) -> RememberResult:
        """Create, reinforce or supersede (see agentmem.writes)."""
        return writes.remember(self.engine, writes.prepared(self.engine, new, {}), actor=actor)

    def _revise(self, memory_id: int, request: ReviseRequest, *, actor: str) -> RememberResult:
        """Write a new version of a current memory; unchanged fields carry over from it."""
        return writes.revise(self.engine, memory_id, request, actor=actor)

    def _observe(self, items: list[NewMemory], *, actor: str) -> list[MemoryVersion]:
        """Raw observations in one transaction (see agentmem.writes.observe)."""
        return writes.observe(self.engine, items, actor=actor)

    # -- reading -----------------------------------------------------------

    def get(self, memory_id: int) -> MemoryVersion:
        """One version by id, whatever its status."""
        return self.engine.get(memory_id)

    def history(self, memory_id: int) -> list[MemoryVersion]:
        """Every version of the memory's lineage, oldest first, with their death records."""
        return self.store.lineage(self.get(memory_id).lineage_id)

    def histories(self, lineage_ids: Sequence[int]) -> dict[int, list[MemoryVersion]]:
        """The history of each lineage, by lineage id, in one read (a recall's hits with their past)."""
        return self.store.lineages(lineage_ids)

    def _list_versions(self, request: ListRequest) -> tuple[list[MemoryVersion], int | None]:
        """A page of versions, newest id first, and the cursor for the next page (None at the end)."""
        r = request
        validate.whole(r.limit, "limit", 1, self.config.max_k)
        statuses = r.statuses()
        if statuses is not None and (wrong := [s for s in statuses if s not in STATUSES]):
            raise ValidationError(f"unknown status {wrong[0]!r}: choose one of {', '.join(STATUSES)}")
        if r.projects is not None and not r.projects:
            return [], None
        scope = Filter(
            projects=None if r.projects is None else tuple(r.projects),
            kinds=one_of(validate.choices(r.kinds, self.config.kinds, "kind")),
            tiers=one_of(validate.choices(r.tiers, TIERS, "tier")),
            agent=validate.name(r.agent, "agent", self.config),
            statuses=statuses,
            latest_only=r.latest_only,
            before_id=None if r.before_id is None else int(r.before_id),
        )
        rows = self.store.versions(scope, order="-id", limit=r.limit + 1)
        return rows[: r.limit], (rows[r.limit - 1].id if len(rows) > r.limit else None)

    def links(self, memory_id: int) -> list[Link]:
        self.get(memory_id)
        return self.store.links(int(memory_id))

    def _search(self, request: RecallRequest) -> Recalled:
        """The k memories that best answer the query: hybrid search, then ranked by currentness
        (agentmem.recall). When two hits state one slot with different values, the newer ranks
        first and the older names it in `older_than`. With `as_of`, answers from every version
        valid then; with `include_superseded`, superseded versions rank in under their successors.
        Time named in the query, or `time_range`, boosts what falls in that window (it never
        filters); `include_history` adds each hit's older versions, read in one query."""
        found = pipeline.search(self.engine, self._vectors, self.config, checked(self.config, request), self.clock())
        if not request.include_history:
            return found
        with_past = [h.memory.lineage_id for h in found.hits if h.has_history]
        lineages = self.histories(with_past)  # one read for every hit, in the hits' order below
        return msgspec.structs.replace(found, history={str(lineage): lineages[lineage] for lineage in with_past})

    def _context(self, request: ContextRequest) -> Context:
        """The best current memories that fit the token budget (see agentmem.context)."""

        def best(k: int) -> list[Hit]:
            return self.recall(request.query, project=request.project, k=k, agent=request.agent,
                               tiers=request.tiers, kinds=request.kinds)  # fmt: skip

        return working_set(best, request, max_k=self.config.max_k)

    # -- upkeep ------------------------------------------------------------

    def _export_lines(self, request: ScopeRequest) -> Iterator[bytes]:
        """JSON Lines: a header, every version with its embedding, every link (see agentmem.transfer)."""
        return transfer.export_lines(self.engine, request)

    def import_lines(self, lines: Iterable[bytes | str]) -> int:
        """Load an export in one transaction; returns how many versions it held."""
        return transfer.import_lines(self.engine, lines)

    # -- lifecycle: retention, sweep, restore, pin, governance delete, audit ----

    def retention(self, memory_id: int) -> Retention:
        """How much the memory is still worth keeping, now: score, tier and the parts of the score."""
        m = self.get(memory_id)
        return retention(m, self.clock(), self.config.retention, self.config.kinds)

    def _sweep(self, request: SweepRequest, *, actor: str) -> lifecycle.SweepReport:
        return lifecycle.sweep(self.engine, request, actor=actor)

    def _restore(self, memory_id: int, request: RestoreRequest, *, actor: str) -> MemoryVersion:
        return lifecycle.restore(self.engine, memory_id, request, actor=actor)

    def _pin(self, memory_id: int, request: PinRequest, *, actor: str) -> MemoryVersion:
        return lifecycle.pin(self.engine, memory_id, request, actor=actor)

    def _delete(self, request: DeleteRequest, *, actor: str) -> lifecycle.DeleteReport:
        """The governance delete: erase content by ids, lineages or a filter (see agentmem.lifecycle.delete)."""
        return lifecycle.delete(self.engine, request, actor=actor)

    def _audit(self, request: AuditRequest) -> tuple[list[AuditEntry], int | None]:
        """A page of the audit log, newest first, and the cursor of the next page."""
        r = request
        validate.whole(r.limit, "limit", 1, self.config.max_k)
        return self.store.audit_page(
            projects=r.projects,
            actions=validate.choices(r.actions, audit.ACTIONS, "action"),
            since=validate.utc(r.since, "since"),
            until=validate.utc(r.until, "until"),
            memory_id=validate.memory_id(r.memory_id, "memory_id") if r.memory_id is not None else None,
            before_id=r.before_id,
            limit=r.limit,
        )

    def _consolidate(self, request: ConsolidateRequest, *, actor: str) -> list[consolidation.ConsolidationReport]:
        """Episodic, semantic and procedural consolidation over each project (see agentmem.consolidate)."""
        return consolidation.run(self.engine, request, actor=actor)

    def _end_session(self, session: str, request: EndSessionRequest, *, actor: str) -> consolidation.EpisodeResult:
        """A session is over: its observations become one episodic memory (or update it)."""
        return consolidation.end_session(self.engine, session, request, actor=actor)

    def provenance(self, memory_id: int) -> consolidation.Provenance:
        """The evidence a memory was built from (with their sessions), and the memories built on it."""
        return consolidation.provenance(self.engine, memory_id)

    @staticmethod
    def compact(path: str | Path) -> tuple[int, int]:
        """Rewrite a closed data directory's DuckDB file so erased content leaves the disk."""
        return embedded.compact(Path(path).expanduser())

    def check(self) -> Consistency:
        """Ids in each index against the latest active ids in DuckDB, and the store's own invariants."""
        return self.engine.check()

    def _rebuild(self, request: RebuildRequest, *, actor: str) -> Consistency:
        """Rebuild indexes from DuckDB (no re-embedding) while the engine stays open."""
        return self.engine.rebuild(list(request.which), actor=actor)

    def _stats(self, request: ScopeRequest) -> Stats:
        """Counts over the store and the indexes; within `projects` when given, every figure
        (index sizes and pending index changes too) counts only those projects' memories."""
        s, projects = self.store, request.projects
        scope = Filter(projects=None if projects is None else tuple(projects))
        ix = self.indexes
        if projects is None:
            (bm25, vectors), pending = ix.sizes(), ix.lag()
        else:
            mine = set(s.ids(Filter(projects=tuple(projects), current_only=True)))
            waiting = ix.pending_ids()
            bm25, vectors = ix.sizes(mine)
            pending = s.count(scope.narrow(ids=tuple(waiting))) if waiting else 0
        return Stats(
            versions=s.count(scope),
            latest_active=s.count(scope.narrow(current_only=True)),
            by_status=s.counts_by("status", scope),
            by_tier=s.counts_by("tier", scope),
            by_kind=s.counts_by("kind", scope),
            projects=len(s.counts_by("project", scope)),
            links=s.count_links(scope),
            outbox_pending=pending,
            bm25_docs=bm25,
            vector_docs=vectors,
            schema_version=LATEST,
            embedding_model=self.embedder.name,
        )

    # -- admission: conversations, notes and source trees (see agentmem.admission) --

    def _ingest_conversation(self, request: IngestConversationRequest, *, actor: str, progress: bool) -> ScanReport:
        """A session's messages (or a JSON / JSON Lines file of them) through the admission policy."""
        return admission.ingest_conversation(self.engine, request, actor=actor, progress=progress)

    def _ingest_path(self, what: str, request: IngestPathRequest, actor: str, progress: bool) -> ScanReport:
        """Notes (`file:line` provenance) or a source tree's declarations through the admission policy."""
        scan = admission.ingest_notes if what == "notes" else admission.ingest_code
        return scan(self.engine, request, actor=actor, progress=progress)
