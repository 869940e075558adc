"""Running a scan: candidates from a source, the policy's verdicts, the remember path, one audit record.

Every scan, completed or failed, dry run or not, writes one `ingest` audit entry: its source and
target, start and end, status, how many candidates were admitted and rejected (by reason), how
many files or messages were skipped (by reason) and what remember() did (created, reinforced,
superseded). Never the text of a message, and for a failure only the error's class name.
Admitted candidates go through `Memory.remember`, so repeats reinforce and changes supersede.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import msgspec
from tqdm import tqdm

from agentmem import claims, validate, writes
from agentmem.admission import code, conversation, files, notes
from agentmem.admission.conversation import Message
from agentmem.admission.extract import Candidate
from agentmem.audit import AuditEntry
from agentmem.errors import ValidationError
from agentmem.filters import Filter
from agentmem.operations import IngestConversationRequest, IngestPathRequest
from agentmem.ports import Port
from agentmem.records import NewMemory
from agentmem.text import sha256

log = logging.getLogger("agentmem")

MAX_LISTED = 1000  # items a report lists in full; counts are always exact
Source = Literal["conversation", "note", "code"]


class ScanItem(msgspec.Struct, frozen=True, kw_only=True):
    """One candidate: admitted (with what remember() did) or rejected (with the reason)."""

    text: str
    ref: str
    reason: str | None = None
    claim: str | None = None
    kind: str | None = None
    outcome: str | None = None  # created | reinforced | superseded | unchanged; None on a dry run or rejected
    memory_id: int | None = None


class ScanReport(msgspec.Struct, frozen=True, kw_only=True):
    """What one scan read, admitted and rejected (and, on a dry run, would have admitted)."""

    source: Source
    target: str
    project: str
    dry_run: bool
    status: Literal["completed", "failed"]
    started_at: datetime
    ended_at: datetime
    units: int  # messages or files read
    candidates: int
    admitted: int
    rejected: int
    rejected_by_reason: dict[str, int]
    skipped: dict[str, int]  # messages or files not read, by reason
    outcomes: dict[str, int]
    admitted_items: list[ScanItem]
    rejected_items: list[ScanItem]
    items_truncated: bool
    error: str | None = None
    audit_id: int | None = None
    # conversations: each turn kept whole (created; unchanged on a re-scan; invalid when the store
    # refuses it), and how many of its sentences became claims; on a dry run, what would be
    turns: dict[str, int] = {}
    claims: int = 0


class Scan:
    """The running state of one scan; `offer` each candidate, then `finish`."""

    def __init__(
        self, port: Port, source: Source, target: str, project: str, *, dry_run: bool, actor: str, agent: str | None
    ) -> None:
        self.port, self.source, self.target, self.project = port, source, target, project
        self.dry_run, self.actor, self.agent = dry_run, actor, agent
        self.started = port.clock()
        self.units = 0
        self.skipped: Counter[str] = Counter()
        self.rejected: Counter[str] = Counter()
        self.outcomes: Counter[str] = Counter()
        self.admitted = 0
        self.admitted_items: list[ScanItem] = []
        self.rejected_items: list[ScanItem] = []
        self.truncated = False
        self.turns: Counter[str] = Counter()
        self.claims = 0

    def _list(self, into: list[ScanItem], item: ScanItem) -> None:
        if len(into) < MAX_LISTED:
            into.append(item)
        else:
            self.truncated = True

    def turn(self, m: Message, *, session: str, ref: str, typed: Collection[str]) -> int | None:
        """Keep a message whole as a turn, as `observe()` does: an observation, its sentences that
        state something claims derived from it in the same write unit; but not the sentences in
        `typed` (admitted as typed memories, which are derived from the turn instead). The turn's
        id; None on a dry run, or when the store refuses it (too long, say): its candidates still go ahead."""
        new = NewMemory(
            content=m.content,
            project=self.project,
            kind=claims.TURN,
            tier="working",
            agent=self.agent,
            session=session,
            source=self.source,
            source_ref=ref,
            salience=0.3,
            valid_from=m.time,
        )
        try:
            checked = writes.prepared(self.port, new, {})
        except ValidationError:
            self.turns["invalid"] += 1
            return None
        said = claims.of_turn(checked.content, self.port.config.claims) if self.port.config.claims.enabled else []
        seen = self._seen(checked.content, ref, claims.TURN)
        if seen is not None:  # this message, scanned before: its turn and claims are there
            self.turns["unchanged"] += 1
            return seen
        self.turns["created"] += 1
        self.claims += sum(s not in typed for s in said)
        if self.dry_run:
            return None
        [kept] = writes.observe(self.port, [checked], actor=self.actor, not_claims=[typed])
        return kept.id

    def offer(
        self, c: Candidate, *, session: str | None = None, time: datetime | None = None, turn: int | None = None
    ) -> None:
        """Reject it with its reason, or admit it through remember() (not on a dry run), derived
        from its `turn` when there is one."""
        item = ScanItem(text=c.text[:2000], ref=c.ref, reason=c.reason, claim=c.claim, kind=c.kind)
        if c.reason is not None or c.kind is None:
            self.rejected[c.reason or "no_claim"] += 1
            self._list(self.rejected_items, item)
            return
        kind = c.kind if c.kind in self.port.config.kinds else "fact"
        seen = self._seen(c.text, c.ref, kind)
        if seen is not None:  # the same statement from the same place, scanned before: nothing new
            self.outcomes["unchanged"] += 1
            item = msgspec.structs.replace(item, outcome="unchanged", memory_id=seen)
        else:
            new = NewMemory(
                content=c.text,
                project=self.project,
                kind=kind,
                title=c.title,
                triple=c.triple,
                agent=self.agent,
                session=session,
                source=self.source,
                source_ref=c.ref,
                source_ids=[turn] if turn is not None else [],
                valid_from=time,
            )
            try:  # a dry run checks exactly what a real run checks; only the write is left out
                checked = writes.prepared(self.port, new, {})
                result = None if self.dry_run else writes.remember(self.port, checked, actor=self.actor)
            except ValidationError:
                self.rejected["invalid"] += 1
                self._list(self.rejected_items, msgspec.structs.replace(item, reason="invalid"))
                return
            if result is not None:
                self.outcomes[result.outcome] += 1
                item = msgspec.structs.replace(item, outcome=result.outcome, memory_id=result.memory.id)
        self.admitted += 1
        self._list(self.admitted_items, item)

    def _seen(self, text: str, ref: str, kind: str) -> int | None:
        """The version of this kind that already holds this exact text from this exact place (a re-scan), if any."""
        digest = sha256(text.strip())
        same = Filter(projects=(self.project,), kinds=(kind,), source=self.source, source_ref=ref, content_hash=digest)
        found = self.port.store.ids(same, order="-id", limit=1)
        return found[0] if found else None

    def finish(self, status: Literal["completed", "failed"], error: str | None = None) -> ScanReport:
        """The report, after writing the scan's audit entry."""
        ended = self.port.clock()
        report = ScanReport(
            source=self.source,
            target=self.target,
            project=self.project,
            dry_run=self.dry_run,
            status=status,
            started_at=self.started,
            ended_at=ended,
            units=self.units,
            candidates=self.admitted + sum(self.rejected.values()),
            admitted=self.admitted,
            rejected=sum(self.rejected.values()),
            rejected_by_reason=dict(sorted(self.rejected.items())),
            skipped=dict(sorted(self.skipped.items())),
            outcomes=dict(sorted(self.outcomes.items())),
            admitted_items=self.admitted_items,
            rejected_items=self.rejected_items,
            items_truncated=self.truncated,
            error=error,
            turns=dict(sorted(self.turns.items())),
            claims=self.claims,
        )
        entry = AuditEntry(
            created_at=ended,
            action="ingest",
            actor=self.actor,
            project=self.project,
            affected=self.admitted if not self.dry_run else 0,
            reason=status,
            details={
                "source": self.source,
                "target": self.target,
                "status": status,
                "dry_run": self.dry_run,
                "started": self.started.isoformat(),
                "ended": ended.isoformat(),
                "units": self.units,
                "admitted": self.admitted,
                "rejected": report.rejected,
                "rejected_by_reason": report.rejected_by_reason,
                "skipped": report.skipped,
                "outcomes": report.outcomes,
                **({"turns": report.turns, "claims": report.claims} if self.source == "conversation" else {}),
                **({"error": error} if error else {}),
            },
        )
        return msgspec.structs.replace(report, audit_id=self.port.record([entry])[0])


def run(
    port: Port,
    source: Source,
    target: str,
    project: str | None,
    body: Callable[[Scan], None],
    *,
    dry_run: bool,
    actor: str,
    agent: str | None,
) -> ScanReport:
    """Run `body` as one scan: a failure half-way is recorded as a failed scan, then raised."""
    checked = validate.name(project, "project", port.config, required=True)
    assert checked is not None
    scan = Scan(
        port,
        source,
        target[-200:],
        checked,
        dry_run=dry_run,
        actor=actor,
        agent=validate.name(agent, "agent", port.config),
    )
    try:
        body(scan)
    except BaseException as exc:
        try:
            scan.finish("failed", type(exc).__name__)  # the class only: never a provider's error text
        except Exception:  # recording the failure must not hide the failure itself
            log.exception("could not record the failed %s scan", source)
        raise
    return scan.finish("completed")


def _bar(items: Iterable[Any], progress: bool, desc: str, total: int | None = None) -> Iterable[Any]:
    return tqdm(items, desc=desc, total=total, unit="", disable=None if progress else True, leave=False)


def ingest_conversation(
    port: Port, request: IngestConversationRequest, *, actor: str = "local", progress: bool = False
) -> ScanReport:
    """A conversation (its messages, or in process a file of them) through the policy; admitted
    candidates are remembered. With `use_provider` and a provider configured, it proposes claims too
    (see conversation.candidates)."""
    conv: str | Path | Sequence[Message | dict[str, Any]] = request.messages
    use_provider, include_assistant = request.use_provider, request.include_assistant
    if use_provider and port.provider is None:
        raise ValidationError("use_provider: no provider is configured ([provider] in the server's config)")
    session = validate.name(request.session, "session", port.config)  # "" is refused, as remember refuses it
    target = str(conv) if isinstance(conv, str | Path) else (session or "messages")

    def body(scan: Scan) -> None:
        if isinstance(conv, str | Path):
            parsed = conversation.load(conv)
        else:
            raws = [msgspec.to_builtins(m) if isinstance(m, Message) else m for m in conv]
            msgs = [conversation.message(r, n) for n, r in enumerate(raws)]
            parsed = conversation.Conversation(
                session=None,
                messages=[m for m in msgs if isinstance(m, Message)],
                skipped=dict(Counter(m for m in msgs if isinstance(m, str))),
            )
        scan.skipped.update(parsed.skipped)
        named = session if session is not None else parsed.session
        sid = validate.name("session" if named is None else named, "session", port.config) or "session"
        scan.units = len(parsed.messages) + sum(parsed.skipped.values())
        bar = _bar(parsed.messages, progress, "messages")
        provider = port.provider if use_provider else None
        said = conversation.turns(
            bar, sid, include_assistant=include_assistant, skipped=scan.skipped, provider=provider
        )
        for m, ref, found in said:
            typed = {c.text for c in found if c.admitted and c.kind is not None}
            turn = scan.turn(m, session=sid, ref=ref, typed=typed)
            for c in found:
                scan.offer(c, session=sid, time=m.time, turn=turn)

    return run(port, "conversation", target, request.project, body, dry_run=request.dry_run, actor=actor,
               agent=request.agent)  # fmt: skip


def ingest_notes(
    port: Port,
    request: IngestPathRequest,
    *,
    actor: str = "local",
    progress: bool = False,
    max_bytes: int = files.MAX_FILE_BYTES,
) -> ScanReport:
    """A directory of Markdown notes through the policy, each admitted memory keeping `file:line`."""
    path = request.path

    def body(scan: Scan) -> None:
        for rel, text in _bar(files.walk(path, notes.SUFFIXES, scan.skipped, max_bytes=max_bytes), progress, "notes"):
            scan.units += 1
            for c in notes.candidates(rel, text):
                scan.offer(c)

    validate.path(path)
    return run(port, "note", str(path), request.project, body, dry_run=request.dry_run, actor=actor,
               agent=request.agent)  # fmt: skip


def ingest_code(
    port: Port,
    request: IngestPathRequest,
    *,
    actor: str = "local",
    progress: bool = False,
    max_bytes: int = files.MAX_FILE_BYTES,
) -> ScanReport:
    """A source tree's declarations and documentation through the policy, with `file:line`."""
    path = request.path

    def body(scan: Scan) -> None:
        for rel, text in _bar(files.walk(path, code.SUFFIXES, scan.skipped, max_bytes=max_bytes), progress, "files"):
            decls = code.declarations(rel, text)
            if decls is None:
                scan.skipped["unparseable"] += 1
                continue
            scan.units += 1
            for c in code.candidates(rel, decls):
                scan.offer(c)

    validate.path(path)
    return run(port, "code", str(path), request.project, body, dry_run=request.dry_run, actor=actor,
               agent=request.agent)  # fmt: skip
