"""MemoryAPI: the one contract of the in-process `Memory` and the HTTP `agentmem.client.Client`.

The CLI and the MCP server are written against it, so either can stand behind them. Both classes
subclass it: an operation declared in `agentmem.operations` has its keyword method here, written
once, which builds the request and hands it to the class's `_<operation>`. mypy checks that both
satisfy it (they subclass it), tests/test_contract.py that their signatures are the Protocol's and
tests/test_operations.py that each keyword method takes its request's fields.

`actor` names the caller in the audit log. In process the caller says who it is; over HTTP the
service records the token's name instead (a caller cannot claim another identity), so the Client
accepts `actor` and does not send it.

>>> def remember_port(mem: MemoryAPI) -> int:  # doctest: +SKIP
...     return mem.remember("We're on 4000 now", project="shop", key="api.port").memory.id
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path, PurePath
from typing import Any, Protocol

from agentmem.admission.scan import ScanReport
from agentmem.audit import AuditEntry
from agentmem.consolidate import PASSES, ConsolidationReport, EpisodeResult, Provenance
from agentmem.context import Context
from agentmem.lifecycle import DeleteReport, SweepReport
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
from agentmem.records import Hit, MemoryVersion, NewMemory, Recalled, RememberResult, Stats, TimeRange, Triple
from agentmem.retention import Retention
from agentmem.validate import as_new_memory
from indexes.sync import Consistency


class MemoryAPI(Protocol):
    """What a memory offers its callers, in process or over HTTP (see `agentmem.Memory` for each method)."""

    # -- writing
    def remember(
        self, item: NewMemory | str | None = None, /, *, actor: str = "local", **fields: Any
    ) -> RememberResult:
        """Store a memory: create it, reinforce the same memory, or supersede the one it replaces.

        Takes a `NewMemory`, or its fields as keywords (content first or as `content=`). `actor`
        names the caller in the audit log when the memory supersedes another.
        """
        return self._remember(as_new_memory(item, fields), actor=actor)

    def revise(
        self,
        memory_id: int,
        content: str,
        *,
        reason: str = "explicit",
        kind: str | None = None,
        tier: str | None = None,
        title: str | None = None,
        key: str | None = None,
        triple: Triple | None = None,
        salience: float | None = None,
        pinned: bool | None = None,
        expires_at: datetime | str | None = None,
        actor: str = "local",
    ) -> RememberResult:
        """Write a new version of a current memory; fields left out carry over (see `ReviseRequest`)."""
        return self._revise(memory_id, ReviseRequest(**_given(locals(), "memory_id")), actor=actor)

    def observe(self, items: Sequence[NewMemory], *, actor: str = "local") -> list[MemoryVersion]:
        """Record a batch of raw observations or events in one transaction: all or nothing (see
        `ObserveRequest`: over HTTP each item is an `Observation`).

        They never supersede or reinforce anything; consolidation turns them into memories later.
        Each sentence of an observation that states something becomes a claim of its own (kind
        `claim`, derived from the observation), created, reinforced or superseding like a
        remembered memory (see agentmem.claims; `Config.claims`). Returns the observations.
        """
        return self._observe(list(items), actor=actor)

    # -- reading
    def recall(
        self,
        query: str,
        *,
        project: str | None = None,
        k: int = 10,
        agent: str | None = None,
        tiers: Sequence[str] = (),
        kinds: Sequence[str] = (),
        as_of: datetime | str | None = None,
        include_superseded: bool = False,
        time_range: TimeRange | dict[str, Any] | str | None = None,
    ) -> list[Hit]:
        """`search`'s hits alone (arguments: `RecallRequest`)."""
        return self.search(**_given(locals())).hits

    def search(
        self,
        query: str,
        *,
        project: str | None = None,
        k: int = 10,
        agent: str | None = None,
        tiers: Sequence[str] = (),
        kinds: Sequence[str] = (),
        as_of: datetime | str | None = None,
        include_history: bool = False,
        include_superseded: bool = False,
        time_range: TimeRange | dict[str, Any] | str | None = None,
    ) -> Recalled:
        """Recall, with the time window it understood and what it did without (see `RecallRequest`)."""
        return self._search(RecallRequest(**_given(locals())))

    def context(
        self,
        query: str,
        *,
        project: str | None = None,
        agent: str | None = None,
        tiers: Sequence[str] = (),
        kinds: Sequence[str] = (),
        max_memories: int = 10,
        token_budget: int = 1000,
    ) -> Context:
        """A prompt-ready working set (see `ContextRequest`)."""
        return self._context(ContextRequest(**_given(locals())))

    def get(self, memory_id: int) -> MemoryVersion: ...
    def history(self, memory_id: int) -> list[MemoryVersion]: ...
    def list_versions(
        self,
        *,
        projects: Sequence[str] | None = None,
        kinds: Sequence[str] = (),
        tiers: Sequence[str] = (),
        agent: str | None = None,
        status: str | Sequence[str] | None = ("active",),
        latest_only: bool = True,
        before_id: int | None = None,
        limit: int = 50,
    ) -> tuple[list[MemoryVersion], int | None]:
        """A page of versions, newest first, and the next page's cursor (see `ListRequest`)."""
        return self._list_versions(ListRequest(**_given(locals())))

    def provenance(self, memory_id: int) -> Provenance: ...

    # -- upkeep
    def stats(self, projects: Sequence[str] | None = None) -> Stats:
        """Counts over the store and the indexes; within `projects` when given (see `ScopeRequest`)."""
        return self._stats(ScopeRequest(**_given(locals())))

    def check(self) -> Consistency: ...
    def rebuild(self, which: Sequence[str] = ("bm25", "vectors"), *, actor: str = "local") -> Consistency:
        """Rebuild indexes from the store of record while recall keeps serving (see `RebuildRequest`)."""
        return self._rebuild(RebuildRequest(**_given(locals())), actor=actor)

    def export_lines(self, projects: Sequence[str] | None = None) -> Iterator[bytes]:
        """JSON Lines: a header, every version with its embedding, every link (see `ScopeRequest`)."""
        return self._export_lines(ScopeRequest(**_given(locals())))

    def import_lines(self, lines: Iterable[bytes | str]) -> int: ...

    # -- lifecycle
    def retention(self, memory_id: int) -> Retention: ...
    def sweep(
        self,
        *,
        dry_run: bool = False,
        limit: int | None = None,
        projects: Sequence[str] | None = None,
        threshold: float | None = None,
        actor: str = "local",
    ) -> SweepReport:
        """Archive what fell below the retention threshold and what expired (see `SweepRequest`)."""
        return self._sweep(SweepRequest(**_given(locals())), actor=actor)

    def restore(self, memory_id: int, *, actor: str = "local", ttl_days: float | None = None) -> MemoryVersion:
        """Put an archived or expired memory back into recall (see `RestoreRequest`)."""
        return self._restore(memory_id, RestoreRequest(ttl_days=ttl_days), actor=actor)

    def pin(self, memory_id: int, pinned: bool = True, *, actor: str = "local") -> MemoryVersion:
        """Exempt a memory from the sweep, or no longer (see `PinRequest`)."""
        return self._pin(memory_id, PinRequest(pinned=pinned), actor=actor)

    def delete(
        self,
        *,
        reason: str,
        ids: Sequence[int] = (),
        lineages: Sequence[int] = (),
        project: str | None = None,
        kinds: Sequence[str] = (),
        created_from: datetime | str | None = None,
        created_to: datetime | str | None = None,
        scope: Sequence[str] | None = None,
        dry_run: bool = False,
        actor: str = "local",
    ) -> DeleteReport:
        """The governance delete: erase content by ids, lineages or a filter (see `DeleteRequest`)."""
        return self._delete(DeleteRequest(**_given(locals())), actor=actor)

    def audit(
        self,
        *,
        projects: Sequence[str] | None = None,
        actions: Sequence[str] = (),
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        memory_id: int | None = None,
        before_id: int | None = None,
        limit: int = 50,
    ) -> tuple[list[AuditEntry], int | None]:
        """A page of the audit log, newest first, and the next page's cursor (see `AuditRequest`)."""
        return self._audit(AuditRequest(**_given(locals())))

    # -- consolidation
    def consolidate(
        self, projects: Sequence[str] | None = None, *, passes: Sequence[str] = PASSES, actor: str = "local"
    ) -> list[ConsolidationReport]:
        """Episodic, semantic and procedural consolidation over each project (see `ConsolidateRequest`)."""
        return self._consolidate(ConsolidateRequest(**_given(locals())), actor=actor)

    def end_session(self, session: str, *, project: str | None = None, actor: str = "local") -> EpisodeResult:
        """A session is over: its observations become one episodic memory (see `EndSessionRequest`)."""
        return self._end_session(session, EndSessionRequest(**_given(locals(), "session")), actor=actor)

    # -- admission
    def ingest_conversation(
        self,
        messages: str | Path | Sequence[Any],
        *,
        project: str | None = None,
        session: str | None = None,
        include_assistant: bool = False,
        dry_run: bool = False,
        agent: str | None = None,
        use_provider: bool = False,
        actor: str = "local",
        progress: bool = False,
    ) -> ScanReport:
        """A session's messages, or a JSON / JSON Lines file of them, through the admission policy
        (see `IngestConversationRequest`); `progress` shows a bar in process."""
        request = IngestConversationRequest(**_given(locals(), "progress"))
        return self._ingest_conversation(request, actor=actor, progress=progress)

    def ingest_notes(
        self,
        path: str | Path,
        *,
        project: str | None = None,
        dry_run: bool = False,
        agent: str | None = None,
        actor: str = "local",
        progress: bool = False,
    ) -> ScanReport:
        """A directory of Markdown notes through the admission policy (see `IngestPathRequest`);
        `progress` shows a bar in process."""
        return self._ingest_path("notes", IngestPathRequest(**_given(locals(), "progress")), actor, progress)

    def ingest_code(
        self,
        path: str | Path,
        *,
        project: str | None = None,
        dry_run: bool = False,
        agent: str | None = None,
        actor: str = "local",
        progress: bool = False,
    ) -> ScanReport:
        """A source tree's declarations and documentation through the admission policy (see
        `IngestPathRequest`); `progress` shows a bar in process."""
        return self._ingest_path("code", IngestPathRequest(**_given(locals(), "progress")), actor, progress)

    def close(self) -> None: ...

    # -- what Memory and Client each do with an operation's request (the keyword methods above build it)
    def _remember(self, new: NewMemory, *, actor: str) -> RememberResult: ...
    def _observe(self, items: list[NewMemory], *, actor: str) -> list[MemoryVersion]: ...
    def _search(self, request: RecallRequest) -> Recalled: ...
    def _context(self, request: ContextRequest) -> Context: ...
    def _pin(self, memory_id: int, request: PinRequest, *, actor: str) -> MemoryVersion: ...
    def _sweep(self, request: SweepRequest, *, actor: str) -> SweepReport: ...
    def _restore(self, memory_id: int, request: RestoreRequest, *, actor: str) -> MemoryVersion: ...
    def _revise(self, memory_id: int, request: ReviseRequest, *, actor: str) -> RememberResult: ...
    def _delete(self, request: DeleteRequest, *, actor: str) -> DeleteReport: ...
    def _consolidate(self, request: ConsolidateRequest, *, actor: str) -> list[ConsolidationReport]: ...
    def _end_session(self, session: str, request: EndSessionRequest, *, actor: str) -> EpisodeResult: ...
    def _rebuild(self, request: RebuildRequest, *, actor: str) -> Consistency: ...
    def _stats(self, request: ScopeRequest) -> Stats: ...
    def _list_versions(self, request: ListRequest) -> tuple[list[MemoryVersion], int | None]: ...
    def _audit(self, request: AuditRequest) -> tuple[list[AuditEntry], int | None]: ...
    def _export_lines(self, request: ScopeRequest) -> Iterator[bytes]: ...
    def _ingest_conversation(self, request: IngestConversationRequest, *, actor: str, progress: bool) -> ScanReport: ...
    def _ingest_path(self, what: str, request: IngestPathRequest, actor: str, progress: bool) -> ScanReport: ...


def _given(arguments: dict[str, Any], *path: str) -> dict[str, Any]:
    """A keyword method's arguments as its request's fields (lists for sequences; not self, not actor,
    not the id `path` names, which the HTTP path carries)."""
    left_out = ("self", "actor", "request", *path)
    plain = {k: str(v) if isinstance(v, PurePath) else v for k, v in arguments.items() if k not in left_out}
    return {k: list(v) if isinstance(v, tuple) else v for k, v in plain.items()}
