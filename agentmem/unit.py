"""The write unit: every change to memories is collected in one `Write`, then committed at once.

A unit reads through itself: a version it inserted, updated or retired is seen as it will be
after the commit, so a later change in the same batch (a burst of writes to one key) decides
against the earlier one. Key and slot uniqueness, one current memory per key and per triple
slot in a project, is enforced here, so no path can break it. Nothing touches DuckDB until
the engine commits the unit: in one transaction with its outbox entries and audit entries;
the live set and the indexes follow once, after the commit.

>>> with engine.write() as w:                       # doctest: +SKIP
...     v = w.insert(new, content_hash=h, vector=vec)
...     w.retire([(old, "archived", "retention")])
...     w.audit([entry])
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import msgspec
import numpy as np

from agentmem.audit import AuditEntry
from agentmem.currentness.analysis import Analysis
from agentmem.errors import ConflictError, ValidationError
from agentmem.live import LiveSet
from agentmem.records import Link, MemoryVersion, NewMemory
from agentmem.supersede import NEVER_SUPERSEDED
from agentmem.text import slot_of
from indexes.docs import OutboxOp

# What a governance delete blanks on every erased version (the tombstone keeps ids, times, reason).
ERASED: dict[str, Any] = {
    "status": "deleted", "content": "", "title": None, "subject": None, "predicate": None, "object": None,
    "key": None, "slot": None, "source_ref": None, "content_hash": "", "norm_hash": "", "archived_at": None,
    "analysis": None,
}  # fmt: skip


class Current(Protocol):
    """The current versions a write unit decides against."""

    def get(self, memory_id: int) -> MemoryVersion | None: ...

    def many(self, ids: Iterable[int]) -> dict[int, MemoryVersion]:
        """The current versions among `ids`, by id: `get` for many at once."""
        ...

    def by_key(self, project: str, key: str) -> MemoryVersion | None: ...

    def by_slot(self, project: str, slot: str) -> MemoryVersion | None: ...

    def by_content(self, project: str, content: str) -> MemoryVersion | None: ...

    def hold(self, project: str, keys: Sequence[str], slots: Sequence[str]) -> None:
        """Read the holders of many keys and triple slots at once, ahead of `by_key` / `by_slot`."""


@dataclass
class Erasure:
    """Versions whose content a governance delete removes, and the hashes whose vectors may go."""

    ids: list[int]
    hashes: list[str]
    fields: dict[str, Any]
    lineages: list[tuple[str, int]] = field(default_factory=list)  # (project, lineage id) of the victims
    known: set[int] = field(default_factory=set)  # every version of those lineages the delete read


_MISSING = object()
Mark = tuple[int, int, int, int, int]  # lengths of a unit's journal and lists (`Changes.mark`)


@dataclass
class Changes:
    """Everything a unit will write. Lists only grow; a change to a dict or set is journaled with
    what it replaced, so one failed job of a batch is undone in the time it took (`mark`, `undo`)."""

    embeddings: dict[str, np.ndarray] = field(default_factory=dict)
    inserts: dict[int, MemoryVersion] = field(default_factory=dict)
    updates: dict[int, dict[str, Any]] = field(default_factory=dict)
    erasures: list[Erasure] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    outbox: list[tuple[OutboxOp, int]] = field(default_factory=list)
    audits: list[AuditEntry] = field(default_factory=list)
    added: dict[int, MemoryVersion] = field(default_factory=dict)  # id -> version as it will be
    gone: set[int] = field(default_factory=set)  # current versions this unit changes or removes
    # stored versions this unit updates, as it read them (project, status, is_latest): a shared
    # store refuses the commit (and the writer retries) if another node changed one meanwhile
    read: dict[int, tuple[str, str, bool]] = field(default_factory=dict)
    journal: list[tuple[Any, Any, Any]] = field(default_factory=list)  # (dict or set, key, old value)

    def put(self, table: dict[Any, Any], key: Any, value: Any) -> None:
        self.journal.append((table, key, table.get(key, _MISSING)))
        table[key] = value

    def pop(self, table: dict[Any, Any], key: Any) -> None:
        if key in table:
            self.journal.append((table, key, table.pop(key)))

    def add(self, members: set[Any], key: Any) -> None:
        if key not in members:
            self.journal.append((members, key, _MISSING))
            members.add(key)

    def mark(self) -> Mark:
        return len(self.journal), len(self.erasures), len(self.links), len(self.outbox), len(self.audits)

    def undo(self, mark: Mark) -> set[int]:
        """Back to `mark`; returns the ids whose `added` entry changed."""
        at, erasures, links, outbox, audits = mark
        touched = set()
        for table, key, old in reversed(self.journal[at:]):
            if table is self.added:
                touched.add(key)
            if isinstance(table, set):
                table.discard(key)
            elif old is _MISSING:
                table.pop(key, None)
            else:
                table[key] = old
        del self.journal[at:], self.erasures[erasures:], self.links[links:], self.outbox[outbox:]
        del self.audits[audits:]
        return touched


_TIME_FIELDS = [f.name for f in msgspec.structs.fields(MemoryVersion) if "datetime" in str(f.type)]


def _utc(v: MemoryVersion) -> MemoryVersion:
    """The version with every time in UTC, as DuckDB gives it back (a naive time is read as UTC)."""
    changed = {}
    for name in _TIME_FIELDS:
        t = getattr(v, name)
        if t is not None and t.tzinfo is not UTC:
            changed[name] = t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)
    return msgspec.structs.replace(v, **changed) if changed else v


class Write:
    """One unit of change. Get one from `Engine.write()` (alone) or as a job's argument (batched)."""

    def __init__(self, live: Current, allocate: Any, now: datetime, start_confidence: Any, session: Any = None) -> None:
        self.now = now
        self.session = session  # the store's transaction this unit decides in (a shared store), or None
        self._live = live
        self._allocate = allocate
        self._start_confidence = start_confidence
        self.changes = Changes()
        self._added = LiveSet()
        self.audit_ids: list[int] = []  # filled in by the commit, in the order of `audit()` calls
        self.analyses: dict[int, Analysis] = {}  # filled in by the commit: its new current versions'
        self.vectors: dict[str, np.ndarray] = {}  # by content hash: what the new versions index

    # -- reading through the unit ----------------------------------------------------

    def get(self, memory_id: int) -> MemoryVersion | None:
        """The current version with this id as it will be after the commit (None if not current)."""
        if memory_id in self.changes.added:
            return self._added.get(memory_id)
        if memory_id in self.changes.gone:
            return None
        return self._live.get(memory_id)

    def many(self, ids: Iterable[int]) -> dict[int, MemoryVersion]:
        """`get` for many ids at once (one read of what the unit did not change)."""
        ids = list(dict.fromkeys(ids))
        changes = self.changes
        mine = {i: v for i in ids if i in changes.added and (v := self._added.get(i)) is not None}
        rest = [i for i in ids if i not in changes.added and i not in changes.gone]
        return mine | self._live.many(rest) if rest else mine

    def _base(self, v: MemoryVersion | None) -> MemoryVersion | None:
        return v if v is not None and v.id not in self.changes.gone else None

    def by_key(self, project: str, key: str) -> MemoryVersion | None:
        return self._added.by_key(project, key) or self._base(self._live.by_key(project, key))

    def by_slot(self, project: str, slot: str) -> MemoryVersion | None:
        return self._added.by_slot(project, slot) or self._base(self._live.by_slot(project, slot))

    def by_content(self, project: str, content: str) -> MemoryVersion | None:
        return self._added.by_content(project, content) or self._base(self._live.by_content(project, content))

    def pending(self, project: str) -> list[MemoryVersion]:
        """Current versions this unit inserted in `project` (not yet in any index)."""
        return [v for i, v in self.changes.inserts.items() if v.project == project and self._added.get(i) is not None]

    def vector(self, content_hash: str) -> np.ndarray | None:
        return self.vectors.get(content_hash)

    # -- changing ----------------------------------------------------------------------

    def embedding(self, content_hash: str, vector: np.ndarray, *, stored: bool = False) -> None:
        """The vector of a content hash, written to the store unless it is `stored` there already."""
        self.vectors.setdefault(content_hash, vector)
        if not stored:
            if content_hash not in self.changes.embeddings:
                self.changes.put(self.changes.embeddings, content_hash, vector)

    def insert(self, new: NewMemory, *, content_hash: str, replaces: MemoryVersion | None = None) -> MemoryVersion:
        """A new current version (continuing `replaces`'s lineage, which this makes no longer
        current: see `supersede`). Refused with ConflictError if another current memory holds its
        key or triple slot."""
        if new.project is None:
            raise ValidationError("project is required")
        new_id = self._allocate()
        old = replaces
        version = MemoryVersion(
            id=new_id,
            lineage_id=old.lineage_id if old else new_id,
            version=old.version + 1 if old else 1,
            parent_id=old.id if old else None,
            is_latest=True,
            status="active",
            content=new.content,
            title=new.title,
            triple=new.triple,
            key=new.key,
            tier=new.tier,
            kind=new.kind,
            project=new.project,
            agent=new.agent,
            session=new.session,
            source=new.source,
            source_ref=new.source_ref,
            source_ids=list(new.source_ids),
            salience=new.salience,
            confidence=new.confidence if new.confidence is not None else self._start_confidence(new.kind),
            pinned=new.pinned,
            created_at=self.now,
            valid_from=new.valid_from or self.now,
            expires_at=new.expires_at,
            last_reinforced_at=self.now,
            content_hash=content_hash,
        )
        self._claim(version, replacing=old)
        c = self.changes
        c.put(c.inserts, new_id, version)
        c.outbox.append(("upsert", new_id))
        c.links.extend(Link(new_id, source_id, "derived_from", self.now) for source_id in new.source_ids)
        self._put(version)
        return version

    def supersede(self, old: MemoryVersion, by: MemoryVersion, reason: str | None, similarity: float | None) -> None:
        """`old` leaves recall and both indexes, keeping its death record: who, when, why."""
        self.update(
            old,
            is_latest=False,
            status="superseded",
            valid_to=max(by.valid_from, old.valid_from),
            superseded_by=by.id,
            superseded_at=self.now,
            supersede_reason=reason,
            supersede_similarity=similarity,
        )
        self.changes.outbox.append(("delete", old.id))

    def update(self, v: MemoryVersion, *, reindex: bool = False, **fields: Any) -> MemoryVersion:
        """Set fields on a version; returns it as it will be. `reindex`: its document changes (a
        restored memory comes back into the indexes)."""
        changed = msgspec.structs.replace(v, **fields)
        if changed.is_latest and changed.status == "active" and not (v.is_latest and v.status == "active"):
            self._claim(changed, replacing=None)
        c = self.changes
        if v.id in c.inserts:
            c.put(c.inserts, v.id, changed)
        else:
            if v.id not in c.updates:
                c.put(c.read, v.id, (v.project, v.status, v.is_latest))
            c.put(c.updates, v.id, {**c.updates.get(v.id, {}), **fields})
        self._put(changed)
        if reindex:
            c.outbox.append(("upsert", v.id))
        return changed

    def retire(self, victims: Sequence[tuple[MemoryVersion, str, str]]) -> None:
        """Move current versions to (status, status_reason), e.g. ("archived", "retention"); both
        indexes drop them."""
        for m, status, reason in victims:
            self.update(m, status=status, archived_at=self.now, status_reason=reason)
            self.changes.outbox.append(("delete", m.id))

    def erase(
        self, victims: Sequence[MemoryVersion], reason: str, survivors: Sequence[int], known: Sequence[int] = ()
    ) -> None:
        """The governance delete of `victims`: content, title, key, triple and vector are erased, a
        tombstone stays; `survivors` (current versions of the same lineages) are indexed again,
        since their documents carry words of the versions they replaced. `known`: the other
        versions of those lineages the delete read (a shared store checks none was added since)."""
        c = self.changes
        ids = [v.id for v in victims]
        c.erasures.append(
            Erasure(ids, sorted({v.content_hash for v in victims}), {**ERASED, "deleted_at": self.now,
                                                                      "status_reason": reason},
                    sorted({(v.project, v.lineage_id) for v in victims}), {*ids, *known})
        )  # fmt: skip
        for v in victims:
            c.add(c.gone, v.id)
            c.pop(c.added, v.id)
            self._added.drop(v.id)
        c.outbox.extend([("purge", i) for i in ids] + [("upsert", i) for i in survivors if i not in set(ids)])

    def load(self, versions: Sequence[MemoryVersion], links: Sequence[Link], vectors: dict[str, np.ndarray]) -> None:
        """Versions exactly as given, with ids, lineages and statuses of their own (an import);
        their current ones must not take a key or slot a current memory holds."""
        c = self.changes
        claims: dict[str, tuple[set[str], set[str]]] = {}
        for v in versions:  # what the current ones claim, read in one go per project
            if v.is_latest and v.status == "active" and v.kind not in NEVER_SUPERSEDED:
                keys, slots = claims.setdefault(v.project, (set(), set()))
                if v.key is not None:
                    keys.add(v.key)
                if v.triple is not None:
                    slots.add(slot_of(v.triple.subject, v.triple.predicate))
        for project, (keys, slots) in sorted(claims.items()):
            self._live.hold(project, sorted(keys), sorted(slots))
        for v in versions:
            v = _utc(v)
            current = v.is_latest and v.status == "active"
            if current:
                self._claim(v, replacing=None)
            c.put(c.inserts, v.id, v)
            self._put(v)
            if current:
                c.outbox.append(("upsert", v.id))
        c.links.extend(links)
        for content_hash, vector in vectors.items():
            self.embedding(content_hash, vector)

    def link(self, src: int, dst: int) -> None:
        """`src` was derived from `dst`."""
        self.changes.links.append(Link(src, dst, "derived_from", self.now))

    def audit(self, entries: Sequence[AuditEntry]) -> None:
        self.changes.audits.extend(entries)

    # -- inside -------------------------------------------------------------------------

    def _put(self, v: MemoryVersion) -> None:
        c = self.changes
        c.add(c.gone, v.id)
        c.put(c.added, v.id, v)
        self._added.put(v)  # drops it instead when it is no longer current

    def _claim(self, v: MemoryVersion, replacing: MemoryVersion | None) -> None:
        """One current memory per key and per triple slot in a project."""
        if v.kind in NEVER_SUPERSEDED:
            return
        held = []
        if v.key is not None:
            held.append(("key", v.key, self.by_key(v.project, v.key)))
        if v.triple is not None:
            slot = slot_of(v.triple.subject, v.triple.predicate)
            held.append(("triple slot", f"{v.triple.subject} / {v.triple.predicate}", self.by_slot(v.project, slot)))
        for what, value, other in held:
            if other is None or (other.expires_at is not None and other.expires_at <= self.now):
                continue  # an expired memory holds nothing: it is neither reinforced nor superseded
            if other.id != v.id and (replacing is None or other.id != replacing.id):
                raise ConflictError(
                    f"memory {other.id} holds the {what} {value!r} in project {v.project!r}: revise or delete it first"
                )

    def mark(self) -> Mark:
        """Where the changes are now (`reset` returns to it: one failed job of a batch)."""
        return self.changes.mark()

    def reset(self, mark: Mark) -> None:
        for memory_id in self.changes.undo(mark):
            v = self.changes.added.get(memory_id)
            if v is None:
                self._added.drop(memory_id)
            else:
                self._added.put(v)

    @property
    def broken(self) -> bool:
        """Whether the store's transaction of this unit is gone (a database error in a job)."""
        return self.session is not None and bool(getattr(self.session, "done", False))

    @property
    def empty(self) -> bool:
        c = self.changes
        return not (c.inserts or c.updates or c.erasures or c.links or c.outbox or c.audits or c.embeddings)
