"""The Memory facade: remember, revise, recall, history, and the index upkeep behind them.

>>> with Memory("~/.local/share/agentmem", embedder=SentenceTransformerEmbedder()) as mem:  # doctest: +SKIP
...     mem.remember("We use Postgres 15", project="shop", key="db")
...     mem.remember("We moved to MySQL", project="shop", key="db").outcome
'superseded'
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from agentmem import admission, audit, lifecycle, validate
from agentmem import consolidate as consolidation
from agentmem.admission import ScanReport
from agentmem.audit import AuditEntry
from agentmem.config import Config
from agentmem.context import Context, working_set
from agentmem.errors import IndexUnavailableError, NotFoundError, ValidationError
from agentmem.kinds import STATUSES, TIERS
from agentmem.live import LiveSet
from agentmem.migrations import LATEST
from agentmem.provider import Provider
from agentmem.recall import as_of_candidates, fuse, sql_filters
from agentmem.records import Hit, Link, MemoryVersion, NewMemory, RememberResult, Stats
from agentmem.retention import Retention, reinforcement, retention
from agentmem.store import INDEXABLE, Store, StoreSource, compact
from agentmem.supersede import NEVER_SUPERSEDED, Decision, decide, slot_of
from agentmem.text import identity, jaccard, sha256, tokens
from indexes.docs import IndexFailure
from indexes.embed import Embedder, embed_query
from indexes.sync import Consistency, IndexSet

log = logging.getLogger("agentmem")

DB_FILE = "agentmem.duckdb"


def _now() -> datetime:
    return datetime.now(UTC)


class Memory:
    """A versioned memory in one data directory: DuckDB of record plus BM25 and vector indexes.

    Writes are serialised by one lock; recall may run from many threads at once.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        embedder: Embedder,
        config: Config | None = None,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        self.path = Path(path).expanduser()
        self.path.mkdir(parents=True, exist_ok=True)
        self.embedder = embedder
        self.config = config or Config()
        self.clock = clock
        self._write = threading.RLock()
        self._access: Counter[int] = Counter()
        self._access_lock = threading.Lock()
        self._stale = False
        self._vector_error: str | None = None
        self._wake = threading.Event()
        self._closing = threading.Event()
        self.store = Store(self.path / DB_FILE)
        try:
            self.live = LiveSet(self.store.where(INDEXABLE))
            self._backfill_embeddings()
            self.indexes = IndexSet(
                self.path / "index",
                StoreSource(self.store, embedder.name),
                dim=embedder.dim,
                model=embedder.name,
                flush_every=self.config.vector_flush_every,
                lock=self._write,
            )
            self.provider = Provider(self.config.provider, self.store, self._write) if self.config.provider else None
            if self.indexes.rebuilt:
                self._audit_rebuild(list(self.indexes.rebuilt), "startup", "index missing or damaged on open", True)
        except BaseException:
            self.store.close()
            raise
        self._flusher = threading.Thread(target=self._flush_loop, name="agentmem-access", daemon=True)
        self._flusher.start()

    # -- lifecycle ---------------------------------------------------------

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Write pending access counts, persist the indexes, release the data directory."""
        self._closing.set()
        self._wake.set()
        with self._write:
            self._flush_access()
            try:
                self.indexes.close()
                if self.provider is not None:
                    self.provider.close()
            finally:
                self.store.close()

    def flush(self) -> None:
        with self._write:
            self._flush_access()
            self._sync()
            self.indexes.flush()

    def warm_up(self) -> bool:
        """Load the embedding model now (a server calls this at startup); False, and degraded, if it cannot."""
        try:
            self.embedder.embed(["warm up"])
        except IndexFailure as exc:
            self._vector_error = f"vector search unavailable, BM25 only: {exc}"
            log.error("the embedding model did not load: %s", exc)
            return False
        self._vector_error = None
        return True

    @property
    def degraded(self) -> list[str]:
        """What recall is doing without right now (empty when all is well); clears once it works again."""
        return [self._vector_error] if self._vector_error else []

    @property
    def index_stale(self) -> bool:
        """True while an index write has failed and the outbox has not been replayed yet."""
        return self._stale

    # -- writing -----------------------------------------------------------

    def remember(
        self, item: NewMemory | str | None = None, /, *, actor: str = "local", **fields: Any
    ) -> RememberResult:
        """Store a memory: create it, reinforce the same memory, or supersede the one it replaces.

        Takes a `NewMemory`, or its fields as keywords (content first or as `content=`). `actor`
        names the caller in the audit log when the memory supersedes another.
        """
        if not isinstance(item, NewMemory):
            if item is not None:
                fields["content"] = item
            try:
                item = NewMemory(**fields)
            except TypeError as exc:
                raise ValidationError(str(exc)) from None
        elif fields:
            raise ValidationError("pass either a NewMemory or keyword fields, not both")
        new = validate.new_memory(item, self.config, self.clock())
        content_hash = sha256(new.content)
        vector = self._vector_for(new.content, content_hash)
        with self._write:
            self._flush_access()
            now = self.clock()
            decision = self._decide(new, vector)
            if decision.outcome == "reinforced":
                assert decision.target is not None
                result = self._reinforce(decision, now)
            else:
                result = self._create(new, content_hash, vector, decision, now, actor)
            self._sync()
            return result

    def revise(
        self, memory_id: int, content: str, *, reason: str = "explicit", actor: str = "local", **changes: Any
    ) -> RememberResult:
        """Write a new version of a current memory; unchanged fields carry over from it."""
        reason = validate.content(reason, self.config, "reason")
        with self._write:
            old = self.get(memory_id)
            if not old.is_latest or old.status != "active":
                raise ValidationError(f"memory {memory_id} is {old.status}, not the current version; revise the latest")
            base = {f: getattr(old, f) for f in NewMemory.__struct_fields__ if hasattr(old, f)}
            base.update(source_ids=list(old.source_ids), confidence=None, valid_from=None, expires_at=old.expires_at)
            unknown = set(changes) - set(NewMemory.__struct_fields__)
            if unknown:
                raise ValidationError(f"unknown fields: {', '.join(sorted(unknown))}")
            base.update(changes, content=content)
            now = self.clock()
            if "expires_at" not in changes and old.expires_at is not None and old.expires_at <= now:
                base["expires_at"] = None  # the old version's TTL has lapsed: the new one starts without it
            new = validate.new_memory(NewMemory(**base), self.config, now)
            content_hash = sha256(new.content)
            vector = self._vector_for(new.content, content_hash)
            sim = _jaccard_text(new.content, old.content)
            decision = Decision("superseded", target=old, reason=reason, similarity=sim)
            result = self._create(new, content_hash, vector, decision, now, actor)
            self._sync()
            return result

    def observe(self, items: Sequence[NewMemory]) -> list[MemoryVersion]:
        """Record a batch of raw observations or events in one transaction: all or nothing.

        They never supersede or reinforce anything; consolidation turns them into memories later.
        """
        now = self.clock()
        checked = []
        for n, item in enumerate(items):
            try:
                new = validate.new_memory(item, self.config, now)
            except ValidationError as exc:
                raise ValidationError(f"observation {n}: {exc}") from None
            if new.kind not in NEVER_SUPERSEDED:
                raise ValidationError(f"observation {n}: kind must be observation or event, not {new.kind!r}")
            checked.append(new)
        hashes = [sha256(m.content) for m in checked]
        model = self.embedder.name
        todo = {h: m.content for h, m in zip(hashes, checked, strict=True) if not self.store.has_embedding(h, model)}
        try:
            vectors = dict(zip(todo, self.embedder.embed(list(todo.values())), strict=True)) if todo else {}
        except IndexFailure as exc:
            raise IndexUnavailableError(str(exc)) from exc
        with self._write:
            self._flush_access()
            now = self.clock()
            created = []
            with self.store.transaction() as tx:
                for new, content_hash in zip(checked, hashes, strict=True):
                    if content_hash in vectors:
                        self.store.put_embedding(tx, content_hash, self.embedder.name, vectors.pop(content_hash))
                    created.append(self._insert(tx, new, content_hash, None, now))
                self.store.enqueue(tx, [("upsert", v.id) for v in created], now)
            for v in created:
                self.live.put(v)
            self._sync()
            return created

    def _vector_for(self, content: str, content_hash: str) -> np.ndarray:
        row = (
            self.store.cursor()
            .execute(
                "SELECT vector FROM embeddings WHERE content_hash = ? AND model = ?", [content_hash, self.embedder.name]
            )
            .fetchone()
        )
        if row is not None:
            return np.asarray(row[0], dtype=np.float32)
        try:
            return self.embedder.embed([content])[0]
        except IndexFailure as exc:
            raise IndexUnavailableError(str(exc)) from exc

    def _decide(self, new: NewMemory, vector: np.ndarray) -> Decision:
        """Gather the current memories the rules look at: by key, by slot, by content, by search.

        An expired memory no longer counts: it is neither reinforced nor superseded.
        """
        live, project, now = self.live, _project(new), self.clock()

        def alive(m: MemoryVersion | None) -> MemoryVersion | None:
            return m if m is not None and (m.expires_at is None or m.expires_at > now) else None

        keyed = slotted = exact = None
        if new.kind not in NEVER_SUPERSEDED:
            if new.key is not None:
                keyed = alive(live.by_key(project, new.key))
            if new.triple is not None:
                slotted = alive(live.by_slot(project, slot_of(new.triple.subject, new.triple.predicate)))
            exact = alive(live.by_content(project, new.content))
        n = self.config.shortlist
        cosines = dict(self.indexes.search_vector(vector, n, project=new.project))
        ids = [i for i, _ in self.indexes.search_text(new.content, n, project=new.project)] + list(cosines)
        candidates = [m for i in dict.fromkeys(ids) if (m := alive(live.get(i))) is not None and m.project == project]
        return decide(
            kind=new.kind,
            content=new.content,
            key=new.key,
            slot=slot_of(new.triple.subject, new.triple.predicate) if new.triple else None,
            triple_object=new.triple.object if new.triple else None,
            keyed=keyed,
            slotted=slotted,
            exact=exact,
            candidates=candidates,
            thresholds=self.config.thresholds,
            cosines=cosines,
        )

    def _reinforce(self, decision: Decision, now: datetime) -> RememberResult:
        target = decision.target
        assert target is not None
        with self.store.transaction() as tx:
            self.store.update(tx, target.id, **reinforcement(target, now))
        refreshed = self.get(target.id)
        self.live.put(refreshed)
        return RememberResult(
            outcome="reinforced",
            memory=refreshed,
            reason=decision.reason,
            similarity=decision.similarity,
            near_duplicates=decision.near,
        )

    def _insert(
        self, tx: Any, new: NewMemory, content_hash: str, old: MemoryVersion | None, now: datetime
    ) -> MemoryVersion:
        """Insert one new version (continuing `old`'s lineage when given) inside the caller's transaction."""
        new_id = self.store.allocate_id()
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
            project=_project(new),
            agent=new.agent,
            session=new.session,
            source=new.source,
            source_ref=new.source_ref,
            source_ids=list(new.source_ids),
            salience=new.salience,
            confidence=new.confidence if new.confidence is not None else self.config.kinds[new.kind].start_confidence,
            pinned=new.pinned,
            created_at=now,
            valid_from=new.valid_from or now,
            expires_at=new.expires_at,
            last_reinforced_at=now,
            content_hash=content_hash,
        )
        slot = slot_of(new.triple.subject, new.triple.predicate) if new.triple else None
        self.store.insert_version(tx, version, sha256(identity(new.content)), slot)
        for source_id in new.source_ids:
            self.store.add_link(tx, new_id, source_id, "derived_from", now)
        return version

    def _create(
        self, new: NewMemory, content_hash: str, vector: np.ndarray, decision: Decision, now: datetime, actor: str
    ) -> RememberResult:
        old = decision.target if decision.outcome == "superseded" else None
        with self.store.transaction() as tx:
            self.store.put_embedding(tx, content_hash, self.embedder.name, vector)
            version = self._insert(tx, new, content_hash, old, now)
            if old is not None:
                # The old version leaves the indexes but keeps its history: who, when, why.
                self.store.update(
                    tx,
                    old.id,
                    is_latest=False,
                    status="superseded",
                    valid_to=max(version.valid_from, old.valid_from),
                    superseded_by=version.id,
                    superseded_at=now,
                    supersede_reason=decision.reason,
                    supersede_similarity=decision.similarity,
                )
                entry = AuditEntry.of(
                    old, "supersede", actor, now, decision.reason, by=version.id, similarity=decision.similarity
                )
                audit.write(tx, [entry])
            self.store.enqueue(tx, ([("delete", old.id)] if old else []) + [("upsert", version.id)], now)
        if old is not None:
            self.live.drop(old.id)
        self.live.put(version)
        return RememberResult(
            outcome=decision.outcome,
            memory=version,
            superseded_id=old.id if old else None,
            reason=decision.reason if old else None,
            similarity=decision.similarity if old else None,
            near_duplicates=decision.near,
        )

    def _sync(self) -> None:
        """Bring the indexes up to the outbox; a failure leaves the write safe in DuckDB."""
        try:
            self.indexes.sync()
            self._stale = False
        except Exception as exc:  # the write is committed: never fail it for an index problem
            self._stale = True
            log.warning("index update failed, will replay from the outbox: %s", exc)

    def _backfill_embeddings(self) -> None:
        """Embed current memories that have no vector for this model (first open with a new model)."""
        rows = (
            self.store.cursor()
            .execute(
                f"SELECT DISTINCT m.content_hash, m.content FROM memories m WHERE {INDEXABLE} AND NOT EXISTS "
                "(SELECT 1 FROM embeddings e WHERE e.content_hash = m.content_hash AND e.model = ?)",
                [self.embedder.name],
            )
            .fetchall()
        )
        if not rows:
            return
        log.warning("embedding %d memories for model %s", len(rows), self.embedder.name)
        batch = 256
        for start in range(0, len(rows), batch):
            chunk = rows[start : start + batch]
            vectors = self.embedder.embed([c for _, c in chunk])
            with self.store.transaction() as tx:
                for (content_hash, _), vector in zip(chunk, vectors, strict=True):
                    self.store.put_embedding(tx, content_hash, self.embedder.name, vector)

    # -- reading -----------------------------------------------------------

    def get(self, memory_id: int) -> MemoryVersion:
        if isinstance(memory_id, bool) or not 0 < int(memory_id) < 2**63:
            raise NotFoundError(f"no memory with id {memory_id}")
        found = self.store.get_many([int(memory_id)])
        if not found:
            raise NotFoundError(f"no memory with id {memory_id}")
        return found[int(memory_id)]

    def history(self, memory_id: int) -> list[MemoryVersion]:
        """Every version of the memory's lineage, oldest first, with their death records."""
        lineage = self.get(memory_id).lineage_id
        return self.store.where("lineage_id = ?", [lineage], order="version")

    def list_versions(
        self,
        *,
        projects: Sequence[str] | None = None,
        kinds: Sequence[str] = (),
        tiers: Sequence[str] = (),
        agent: str | None = None,
        status: str | None = "active",
        latest_only: bool = True,
        before_id: int | None = None,
        limit: int = 50,
    ) -> tuple[list[MemoryVersion], int | None]:
        """A page of versions, newest id first, and the cursor for the next page (None at the end)."""
        if isinstance(limit, bool) or not 1 <= limit <= self.config.max_k:
            raise ValidationError(f"limit: expected a whole number from 1 to {self.config.max_k}")
        if status is not None and status not in STATUSES:
            raise ValidationError(f"unknown status {status!r}: choose one of {', '.join(STATUSES)}")
        conds: list[str] = []
        params: list[Any] = []
        if projects is not None:
            if not projects:
                return [], None
            conds.append(f"project IN ({', '.join('?' * len(projects))})")
            params.extend(projects)
        more, more_params = sql_filters(None, validate.name(agent, "agent", self.config), tiers, kinds)
        conds += more
        params += more_params
        if status is not None:
            conds.append("status = ?")
            params.append(status)
        if latest_only:
            conds.append("is_latest")
        if before_id is not None:
            conds.append("id < ?")
            params.append(int(before_id))
        rows = self.store.where(" AND ".join(conds) or "true", params, order="id DESC", limit=limit + 1)
        return rows[:limit], (rows[limit - 1].id if len(rows) > limit else None)

    def links(self, memory_id: int) -> list[Link]:
        self.get(memory_id)
        return self.store.links(int(memory_id))

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
    ) -> list[Hit]:
        """The k memories that best answer `query`: hybrid search, then ranked by currentness.

        With `as_of`, answers from DuckDB over every version that was valid at that time.
        """
        query = validate.content(query, self.config, "query")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= self.config.max_k:
            raise ValidationError(f"k: expected a whole number from 1 to {self.config.max_k}")
        project = validate.name(project, "project", self.config)
        agent = validate.name(agent, "agent", self.config)
        tiers = [validate.choice(t, TIERS, "tier") for t in tiers]
        kinds = [validate.choice(x, self.config.kinds, "kind") for x in kinds]
        when = validate.utc(as_of, "as_of")
        if when is not None:
            filters, params = sql_filters(project, agent, tiers, kinds)
            qv = self._query_vector(query)
            if qv is not None:
                self._vector_error = None
            n = max(self.config.recall_candidates, 4 * k)
            found = as_of_candidates(self.store, self.embedder.name, query, qv, when, n, filters, params)
            return fuse(*found, now=when, k=k, weights=self.config.weights, kinds=self.config.kinds)
        if self._stale:
            with self._write:
                self._sync()
        n = max(self.config.recall_candidates, 4 * k)
        text_hits = self.indexes.search_text(
            query, n, project=project, agents=[agent] if agent else [], kinds=kinds, tiers=tiers
        )
        qv = self._query_vector(query)
        try:
            vector_hits = [] if qv is None else self.indexes.search_vector(qv, n, project=project)
            if qv is not None:
                self._vector_error = None
        except IndexFailure as exc:
            self._vector_down(exc)
            vector_hits = []
        now = self.clock()
        tier_set, kind_set = set(tiers), set(kinds)

        def keep(m: MemoryVersion) -> bool:
            return (
                (project is None or m.project == project)
                and (agent is None or m.agent == agent)
                and (not tier_set or m.tier in tier_set)
                and (not kind_set or m.kind in kind_set)
                and (m.expires_at is None or m.expires_at > now)
            )

        # Filter at read against the live set: a stale index never brings back an old version.
        ids = dict.fromkeys([i for i, _ in text_hits] + [i for i, _ in vector_hits])
        candidates = [m for i in ids if (m := self.live.get(i)) is not None and keep(m)]
        hits = fuse(
            candidates, text_hits, vector_hits, now=now, k=k, weights=self.config.weights, kinds=self.config.kinds
        )
        self._note_access([h.memory.id for h in hits])
        return hits

    def context(
        self,
        query: str,
        *,
        project: str | None = None,
        max_memories: int = 10,
        token_budget: int = 1000,
        agent: str | None = None,
        tiers: Sequence[str] = (),
        kinds: Sequence[str] = (),
    ) -> Context:
        """A prompt-ready working set: the best current memories that fit `token_budget` (see agentmem.context)."""
        return working_set(self, query, project=project, max_memories=max_memories, token_budget=token_budget,
                           agent=agent, tiers=tiers, kinds=kinds)  # fmt: skip

    def _query_vector(self, query: str) -> np.ndarray | None:
        """The query's embedding, or None while the model is down (recall then answers by words)."""
        try:
            return embed_query(self.embedder, query)
        except IndexFailure as exc:
            self._vector_down(exc)
            return None

    def _vector_down(self, exc: IndexFailure) -> None:
        """Degrade to word search, say so (`degraded`), and try the vector side again next time."""
        if self._vector_error is None:
            log.warning("recall without vector search: %s", exc)
        self._vector_error = f"vector search unavailable, BM25 only: {exc}"

    # -- access counts, batched off the recall path -------------------------

    def _note_access(self, ids: list[int]) -> None:
        with self._access_lock:
            self._access.update(ids)
            due = len(self._access) >= self.config.access_flush_every
        if due:
            self._wake.set()  # the flusher thread writes them; recall never waits on DuckDB

    def _flush_loop(self) -> None:
        while not self._closing.is_set():
            self._wake.wait(self.config.access_flush_seconds)
            self._wake.clear()
            if self._closing.is_set():
                return
            try:
                with self._write:
                    if not self._closing.is_set():
                        self._flush_access()
            except Exception:  # logged and retried on the next round; access counts are advisory
                log.exception("writing access counts failed")

    def _flush_access(self) -> None:
        with self._access_lock:
            pending, self._access = self._access, Counter()
        if not pending:
            return
        ids, counts = list(pending), list(pending.values())
        now = self.clock()
        with self.store.transaction() as tx:
            tx.execute(
                "UPDATE memories SET accesses = accesses + v.n, last_accessed_at = ? "
                "FROM (SELECT unnest(?::BIGINT[]) AS id, unnest(?::INTEGER[]) AS n) v WHERE memories.id = v.id",
                [now, ids, counts],
            )
        for memory_id, n in pending.items():
            m = self.live.get(memory_id)
            if m is not None:
                self.live.put(msgspec.structs.replace(m, accesses=m.accesses + n, last_accessed_at=now))

    # -- upkeep ------------------------------------------------------------

    def export_lines(self, projects: Sequence[str] | None = None) -> Iterator[bytes]:
        """JSON Lines: a header, every version with its embedding, every link (see agentmem.transfer)."""
        from agentmem.transfer import export_lines

        return export_lines(self, projects)

    def import_lines(self, lines: Iterable[bytes | str]) -> int:
        """Load an export in one transaction; returns how many versions it held."""
        from agentmem.transfer import import_lines

        return import_lines(self, lines)

    # -- lifecycle: retention, sweep, restore, pin, governance delete, audit ----

    def retention(self, memory_id: int) -> Retention:
        """How much the memory is still worth keeping, now: score, tier and the parts of the score."""
        m = self.get(memory_id)
        return retention(m, self.clock(), self.config.retention, self.config.kinds)

    def sweep(
        self,
        *,
        dry_run: bool = False,
        limit: int | None = None,
        projects: Sequence[str] | None = None,
        threshold: float | None = None,
        actor: str = "local",
    ) -> lifecycle.SweepReport:
        """Archive what fell below the retention threshold and what expired (see agentmem.lifecycle)."""
        return lifecycle.sweep(self, dry_run=dry_run, limit=limit, projects=projects, threshold=threshold, actor=actor)

    def restore(self, memory_id: int, *, actor: str = "local", ttl_days: float | None = None) -> MemoryVersion:
        """Put an archived or expired memory back into recall."""
        return lifecycle.restore(self, memory_id, actor=actor, ttl_days=ttl_days)

    def pin(self, memory_id: int, pinned: bool = True, *, actor: str = "local") -> MemoryVersion:
        """Exempt a memory from the sweep (or, with pinned=False, no longer)."""
        return lifecycle.pin(self, memory_id, pinned, actor=actor)

    def delete(self, *, reason: str, **how: Any) -> lifecycle.DeleteReport:
        """The governance delete: erase content by ids, lineages or a filter (see agentmem.lifecycle.delete)."""
        return lifecycle.delete(self, reason=reason, **how)

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
        """A page of the audit log, newest first, and the cursor of the next page."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= self.config.max_k:
            raise ValidationError(f"limit: expected a whole number from 1 to {self.config.max_k}")
        actions = [validate.choice(a, audit.ACTIONS, "action") for a in actions]
        start, end = validate.utc(since, "since"), validate.utc(until, "until")
        return audit.query(
            self.store.cursor(),
            projects=projects,
            actions=actions,
            since=start,
            until=end,
            memory_id=validate.memory_id(memory_id, "memory_id") if memory_id is not None else None,
            before_id=before_id,
            limit=limit,
        )

    def consolidate(
        self,
        projects: Sequence[str] | None = None,
        *,
        passes: Sequence[str] = consolidation.PASSES,
        actor: str = "local",
    ) -> list[consolidation.ConsolidationReport]:
        """Episodic, semantic and procedural consolidation over each project (see agentmem.consolidate)."""
        return consolidation.run(self, projects, passes=passes, actor=actor)

    def end_session(self, session: str, *, project: str, actor: str = "local") -> consolidation.EpisodeResult:
        """A session is over: its observations become one episodic memory (or update it)."""
        session = validate.name(session, "session", self.config, required=True)  # type: ignore[assignment]
        project = validate.name(project, "project", self.config, required=True)  # type: ignore[assignment]
        return consolidation.episode(self, project, session, actor=actor)

    def provenance(self, memory_id: int) -> consolidation.Provenance:
        """The evidence a memory was built from (with their sessions), and the memories built on it."""
        return consolidation.provenance(self, memory_id)

    @staticmethod
    def compact(path: str | Path) -> tuple[int, int]:
        """Rewrite a closed data directory's DuckDB file so erased content leaves the disk."""
        return compact(Path(path).expanduser() / DB_FILE)

    def check(self) -> Consistency:
        """Ids in each index against the latest active ids in DuckDB."""
        with self._write:
            return self.indexes.check()

    def rebuild(self, which: Sequence[str] = ("bm25", "vectors"), *, actor: str = "local") -> Consistency:
        """Rebuild indexes from DuckDB (no re-embedding) while the engine stays open."""
        try:
            self.indexes.rebuild(which)
        except ValueError as exc:
            raise ValidationError(str(exc)) from None
        report = self.check()
        self._audit_rebuild(list(which), actor, "requested", report.ok)
        return report

    def _audit_rebuild(self, which: list[str], actor: str, reason: str, ok: bool) -> None:
        entry = AuditEntry(
            created_at=self.clock(),
            action="rebuild",
            actor=actor,
            affected=len(self.live),
            reason=reason,
            details={"indexes": which, "ok": ok},
        )
        with self._write, self.store.transaction() as tx:
            audit.write(tx, [entry])

    def stats(self, projects: Sequence[str] | None = None) -> Stats:
        """Counts over the store (within `projects` when given) and the indexes."""
        s = self.store
        where, params = (
            ("true", [])
            if projects is None
            else (f"project IN ({', '.join('?' * len(projects))})" if projects else "false", list(projects))
        )
        return Stats(
            versions=int(s.scalar(f"SELECT count(*) FROM memories WHERE {where}", params)),
            latest_active=int(s.scalar(f"SELECT count(*) FROM memories WHERE {where} AND {INDEXABLE}", params)),
            by_status=s.counts("status", where, params),
            by_tier=s.counts("tier", where, params),
            by_kind=s.counts("kind", where, params),
            projects=int(s.scalar(f"SELECT count(DISTINCT project) FROM memories WHERE {where}", params)),
            links=int(
                s.scalar(f"SELECT count(*) FROM links WHERE src_id IN (SELECT id FROM memories WHERE {where})", params)
            ),
            outbox_pending=self.indexes.lag(),
            bm25_docs=self.indexes.bm25.count(),
            vector_docs=self.indexes.vectors.count(),
            schema_version=LATEST,
            embedding_model=self.embedder.name,
        )

    # -- admission: conversations, notes and source trees (see agentmem.admission) --

    def ingest_conversation(
        self, conversation: str | Path | Sequence[Any], *, project: str | None, **options: Any
    ) -> ScanReport:
        """A session's messages (a JSON / JSON Lines file, or a list of messages) through the admission
        policy into memories. Options: session, include_assistant, dry_run, agent, actor, progress,
        use_provider (the configured provider proposes claims too; the same policy judges them)."""
        return admission.ingest_conversation(self, conversation, project=project, **options)

    def ingest_notes(self, path: str | Path, *, project: str | None, **options: Any) -> ScanReport:
        """A directory of Markdown notes through the admission policy (`file:line` provenance)."""
        return admission.ingest_notes(self, path, project=project, **options)

    def ingest_code(self, path: str | Path, *, project: str | None, **options: Any) -> ScanReport:
        """A source tree's declarations and their documentation through the admission policy."""
        return admission.ingest_code(self, path, project=project, **options)


def _project(new: NewMemory) -> str:
    if new.project is None:  # validate.new_memory guarantees a project; this keeps the types honest
        raise ValidationError("project is required")
    return new.project


def _jaccard_text(a: str, b: str) -> float:
    return round(jaccard(set(tokens(a)), set(tokens(b))), 4)
