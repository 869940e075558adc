"""A LangGraph `BaseStore` whose items are agentmem memories, in process or over HTTP.

>>> from agentmem import Memory                                              # doctest: +SKIP
>>> from indexes import default_embedder                                    # doctest: +SKIP
>>> store = AgentMemStore(Memory("data", embedder=default_embedder()))  # doctest: +SKIP
>>> store.put(("memories", "ada"), "db", {"content": "We use Postgres 16"})  # doctest: +SKIP
>>> store.search(("memories", "ada"), query="which database?")[0].value    # doctest: +SKIP
{'content': 'We use Postgres 16'}

How LangGraph's terms map onto agentmem's:

- A namespace is a project: its labels joined by "." (LangGraph forbids "." inside a label, so
  the name is unambiguous): ("memories", "ada") is the project "memories.ada". A label with
  blanks at either end, control characters or line separators is refused (InvalidNamespaceError):
  project names are trimmed, so ("users", "bob ") would share ("users", "bob")'s project.
- A key is an identity: the item is the memory filed under that agentmem `key`. A put replaces
  only that key's item, as a new version of its memory (the history keeps the old ones); the same
  value again reinforces it. Another key's item is never superseded, reinforced or merged.
- A value is kept as the memory's text (`agentmem.integrations.langgraph_values`). A string
  "kind" or "tier" in a value becomes the memory's kind or tier (they must be agentmem's).
- `search` with a query: without `index=`, agentmem's recall (BM25 + vectors, ranked by
  currentness) over the memory texts; with `index=` (LangGraph's IndexConfig), the items under
  the prefix ranked by the store's own vector space (`langgraph_index`). Either way an item's
  `score` is the cosine similarity of the query with its indexed text, and agentmem's fused
  recall score is its `recall_score` (None when recall did not rank it). `index=False` on a put
  keeps the item out of query searches. Without a query, search lists the newest items first.
- `ttl` (minutes), and `ttl=TTLConfig(default_ttl, refresh_on_read, sweep_interval_minutes)`,
  are agentmem's expiry: an expired item reads as missing at once, `start_ttl_sweeper` runs
  agentmem's sweep (the item's status becomes "expired"; its versions stay in the history), and
  a read that refreshes a TTL reinforces the memory with a new expiry.
- `delete` is agentmem's governance delete of the memory's lineage (over HTTP: an admin token).
- `list_namespaces` lists the projects that hold current, unexpired memories.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    validate_op_namespace,
)

from agentmem import MemoryAPI, MemoryVersion, NotFoundError, ValidationError
from agentmem.integrations.langgraph_index import VectorSpace
from agentmem.integrations.langgraph_values import Stored, content_of, matches, stored_of

PUSHED_DOWN = ("kind", "tier")  # value fields that become the memory's own
PAGE = 1000  # the largest page list_versions and recall give (Config.max_k)
SEP = "."
BREAKS = ("Cc", "Zl", "Zp")  # what a project name may not hold: controls and line separators (as validate.name)
TTL_KEYS = frozenset({"default_ttl", "refresh_on_read", "sweep_interval_minutes", "omit_expired"})
MINUTES_A_DAY = 1440.0


class RecalledItem(SearchItem):
    """A search result: LangGraph's SearchItem (`score`: cosine similarity of the query with the
    indexed text) and `recall_score`, agentmem's fused recall score (relevance x currentness)."""

    __slots__ = ("recall_score",)

    def __init__(self, *args: Any, recall_score: float | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.recall_score = recall_score

    def dict(self) -> dict[str, Any]:
        return {**super().dict(), "recall_score": self.recall_score}


class AgentMemStore(BaseStore):
    """LangGraph's long-term memory store, kept by agentmem (see the module docstring for the mapping).

    `memory` is anything that satisfies `agentmem.MemoryAPI`: `agentmem.Memory` in process, or
    `agentmem.client.Client` for a running service. The store does not close it. `index` is
    LangGraph's IndexConfig (its `embed` defaults to agentmem's own model, in process); `ttl`
    its TTLConfig. An option agentmem cannot honour is a ValidationError, never ignored.
    """

    supports_ttl = True

    def __init__(
        self,
        memory: MemoryAPI,
        *,
        agent: str | None = None,
        delete_reason: str = "deleted through LangGraph",
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        self.memory = memory
        self.agent = agent
        self.delete_reason = delete_reason
        self.clock: Callable[[], datetime] = getattr(memory, "clock", None) or (lambda: datetime.now(UTC))
        fallback = _embed_function(memory)
        self.index_config = index  # as LangGraph's stores keep it
        self.index = None if index is None else VectorSpace(index, fallback)
        self.embeddings = None if self.index is None else self.index.embeddings
        self.ttl_config: TTLConfig = _ttl_config(ttl)
        self._sweeper: tuple[threading.Event, concurrent.futures.Future[None]] | None = None

    # -- BaseStore's two abstract methods; get/put/search/delete/list_namespaces come from it

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order; a put is visible to the operations after it."""
        results: list[Result] = []
        for op in ops:
            if isinstance(op, SearchOp) and isinstance(op.namespace_prefix, list):
                op = SearchOp(tuple(op.namespace_prefix), *op[1:])  # LangGraph's search() passes a list through
            validate_op_namespace(op)
            check_labels(op)
            if isinstance(op, GetOp):
                results.append(self.get_item(op))
            elif isinstance(op, SearchOp):
                results.append(self.search_items(op))
            elif isinstance(op, PutOp):
                self.put_item(op)
                results.append(None)
            elif isinstance(op, ListNamespacesOp):
                results.append(self.namespaces(op))
            else:
                raise TypeError(f"unknown store operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """`batch` in a worker thread: agentmem's core is synchronous (and so is its HTTP client)."""
        return await asyncio.to_thread(self.batch, list(ops))

    # -- the operations

    def get_item(self, op: GetOp) -> Item | None:
        found = self._current(project_of(op.namespace), op.key)
        if found is None:
            return None
        m, stored = found
        if op.refresh_ttl:
            m = self._refresh(m, stored)
        created, updated = self._times(m)
        return Item(value=stored.value, key=key_of(m), namespace=namespace_of(m.project), created_at=created,
                    updated_at=updated)  # fmt: skip

    def put_item(self, op: PutOp) -> None:
        project = project_of(op.namespace)
        if op.value is None:
            found = self._current(project, op.key, alive=False)
            if found is not None:
                self.memory.delete(reason=self.delete_reason, lineages=[found[0].lineage_id])
            return
        paths = isinstance(op.index, list) and all(isinstance(p, str) for p in op.index)
        if op.index not in (None, False) and not paths:
            raise ValidationError(f"index: expected False, None or a list of paths, got {op.index!r}")
        if isinstance(op.index, list) and self.index is None:
            raise ValidationError("index=[paths] needs the store's index config (AgentMemStore(..., index={...})): "
                                  "without it agentmem embeds the whole value")  # fmt: skip
        if op.ttl is not None and (isinstance(op.ttl, bool) or not isinstance(op.ttl, int | float) or op.ttl <= 0):
            raise ValidationError(f"ttl: expected a positive number of minutes, got {op.ttl!r}")
        self._write(project, op.key, Stored(dict(op.value), op.index, None if op.ttl is None else float(op.ttl)))

    def search_items(self, op: SearchOp) -> list[SearchItem]:
        if op.limit <= 0:
            return []
        prefix = op.namespace_prefix
        projects = [p for p in self._projects() if namespace_of(p)[: len(prefix)] == prefix]
        if not projects:
            return []
        wanted = op.offset + op.limit
        if op.query and self.index is None:
            found = self._recalled(op, projects, wanted)
        else:
            listed = [(m, s) for m, s in self._listed(projects, op) if wanted_by(op.filter, m, s)]
            found = self._ranked(op.query, listed) if op.query else [(m, s, None, None) for m, s in listed]
        page = found[op.offset : wanted]
        return [
            self._item(self._refresh(m, s) if op.refresh_ttl else m, s, score, recall_score)
            for m, s, score, recall_score in page
        ]

    def namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found = {namespace_of(p) for p in self._projects()}
        found = {ns for ns in found if all(namespace_matches(c, ns) for c in op.match_conditions or ())}
        if op.max_depth is not None:
            found = {ns[: op.max_depth] for ns in found}
        return sorted(found)[op.offset : op.offset + op.limit]

    # -- TTL: agentmem's sweep, on a thread

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> concurrent.futures.Future[None]:
        """Run agentmem's sweep every `sweep_interval_minutes` (default: the TTL config's, else 5)
        until `stop_ttl_sweeper`: expired items get the status "expired" (nothing is archived for
        low retention: threshold 0). Returns a future that is done once the sweeper stops."""
        if self._sweeper is not None:
            return self._sweeper[1]
        minutes = sweep_interval_minutes or self.ttl_config.get("sweep_interval_minutes") or 5
        stop, done = threading.Event(), concurrent.futures.Future[None]()

        def run() -> None:
            try:
                while not stop.wait(minutes * 60):
                    self.sweep_expired()
                done.set_result(None)
            except BaseException as exc:  # the future says why it stopped
                done.set_exception(exc)

        threading.Thread(target=run, name="agentmem-langgraph-ttl", daemon=True).start()
        self._sweeper = (stop, done)
        return done

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper; whether it stopped within `timeout` seconds (True if none ran)."""
        if self._sweeper is None:
            return True
        stop, done = self._sweeper
        stop.set()
        try:
            done.exception(timeout=timeout)
        except concurrent.futures.TimeoutError:
            return False
        self._sweeper = None
        return True

    def sweep_expired(self) -> int:
        """One sweep of expired memories now (the sweeper's round); how many expired."""
        return self.memory.sweep(threshold=0.0).expired

    # -- writing agentmem

    def _write(self, project: str, key: str, stored: Stored) -> MemoryVersion:
        """remember() under the key: created, a new version of that key's memory, or reinforced."""
        fields = {f: stored.value[f] for f in PUSHED_DOWN if isinstance(stored.value.get(f), str)}
        ttl_days = None if stored.ttl is None else stored.ttl / MINUTES_A_DAY
        content = content_of(stored.value, stored.index, stored.ttl)
        return self.memory.remember(content=content, project=project, agent=self.agent, key=key, source_ref=key,
                                    ttl_days=ttl_days, **fields).memory  # fmt: skip

    def _refresh(self, m: MemoryVersion, stored: Stored) -> MemoryVersion:
        """A read's TTL refresh: the item said again, with its TTL starting now."""
        if stored.ttl is None or not self.ttl_config.get("refresh_on_read", True):
            return m
        try:
            return self._write(m.project, key_of(m), stored)
        except (NotFoundError, ValidationError):  # deleted or replaced meanwhile: the read stands
            return m

    # -- reading agentmem

    def _recalled(
        self, op: SearchOp, projects: list[str], wanted: int
    ) -> list[tuple[MemoryVersion, Stored, float | None, float | None]]:
        """agentmem's recall over each project, in its order; index=False items left out."""
        assert op.query is not None
        k = min(PAGE, wanted * 5 if op.filter else wanted + 10)
        hits = [h for p in projects for h in self.memory.recall(op.query, project=p, k=k)]
        hits.sort(key=lambda h: -h.score)  # stable: each project's own order stays
        out: list[tuple[MemoryVersion, Stored, float | None, float | None]] = []
        for h in hits:
            stored = stored_of(h.memory.content)
            if stored.index is False or not wanted_by(op.filter, h.memory, stored):
                continue
            out.append((h.memory, stored, h.parts.cosine, h.score))
        return out

    def _ranked(
        self, query: str, listed: list[tuple[MemoryVersion, Stored]]
    ) -> list[tuple[MemoryVersion, Stored, float | None, float | None]]:
        """The listed items by cosine in the store's vector space, best first; unscored ones after."""
        assert self.index is not None
        scores = self.index.scores(query, [self.index.texts(s.value, s.index) for _, s in listed])
        fused = self._recall_scores(query, {m.project for m, _ in listed})
        ranked = [(m, s, score, fused.get(m.id)) for (m, s), score in zip(listed, scores, strict=True)]
        scored = sorted((r for r in ranked if r[2] is not None), key=lambda r: -(r[2] or 0.0))
        return scored + [r for r in ranked if r[2] is None]

    def _recall_scores(self, query: str, projects: set[str]) -> dict[int, float]:
        return {h.memory.id: h.score for p in sorted(projects) for h in self.memory.recall(query, project=p, k=PAGE)}

    def _listed(self, projects: list[str], op: SearchOp) -> Iterator[tuple[MemoryVersion, Stored]]:
        """Current, unexpired items of the projects, newest first; narrowed by kind and tier first."""
        pushed = {f: [v] for f, v in (op.filter or {}).items() if f in PUSHED_DOWN and isinstance(v, str)}
        for m in self._versions(projects, kinds=pushed.get("kind", ()), tiers=pushed.get("tier", ())):
            if self._alive(m):
                yield m, stored_of(m.content)

    def _versions(
        self, projects: list[str] | None, kinds: Iterable[str] = (), tiers: Iterable[str] = ()
    ) -> Iterator[MemoryVersion]:
        """Current versions, newest first, page by page."""
        cursor: int | None = None
        while True:
            page, cursor = self.memory.list_versions(
                projects=projects, kinds=list(kinds), tiers=list(tiers), before_id=cursor, limit=PAGE
            )
            yield from page
            if cursor is None:
                return

    def _alive(self, m: MemoryVersion) -> bool:
        return m.expires_at is None or m.expires_at > self.clock()

    def _projects(self) -> set[str]:
        # MemoryAPI has no list of projects yet, so this reads the current versions' scopes.
        return {m.project for m in self._versions(None) if self._alive(m)}

    def _current(self, project: str, key: str, *, alive: bool = True) -> tuple[MemoryVersion, Stored] | None:
        for m in self._versions([project]):
            if key_of(m) == key and (not alive or self._alive(m)):
                return m, stored_of(m.content)
        return None

    def _item(self, m: MemoryVersion, stored: Stored, score: float | None, recall_score: float | None) -> RecalledItem:
        created, updated = self._times(m)
        return RecalledItem(namespace_of(m.project), key_of(m), stored.value, created, updated, score,
                            recall_score=recall_score)  # fmt: skip

    def _times(self, m: MemoryVersion) -> tuple[datetime, datetime]:
        """An item's created_at and updated_at. It was created with the oldest version filed under
        its key (a delete running beside this read may have erased them: then with this one), and
        updated by its newest version or reinforcement."""
        created = m.created_at
        if m.version > 1:
            try:
                created = min((v.created_at for v in self.memory.history(m.id) if key_of(v) == key_of(m)),
                              default=created)  # fmt: skip
            except NotFoundError:
                pass
        return created, max(m.created_at, m.last_reinforced_at)


# -- the mapping, as plain functions (tested on their own)


def wanted_by(conditions: dict[str, Any] | None, m: MemoryVersion, stored: Stored) -> bool:
    """Whether an item passes a search filter: "kind" and "tier" compare with the memory's own
    (a string in a value became them), every other key with the value."""
    if not conditions:
        return True
    pushed = {f: v for f, v in conditions.items() if f in PUSHED_DOWN and isinstance(v, str)}
    rest = {f: v for f, v in conditions.items() if f not in pushed}
    return all(getattr(m, f) == v for f, v in pushed.items()) and matches(stored.value, rest)


def _embed_function(memory: MemoryAPI) -> Callable[[list[str]], list[list[float]]] | None:
    """agentmem's own model as a LangGraph embedding function, when the memory is in process."""
    embedder = getattr(memory, "embedder", None)
    if embedder is None:
        return None
    return lambda texts: embedder.embed(texts).tolist()  # type: ignore[no-any-return]


def _ttl_config(ttl: TTLConfig | None) -> TTLConfig:
    """LangGraph's TTLConfig, checked: agentmem always leaves expired items out of reads."""
    config = TTLConfig(**(ttl or {}))
    unknown = sorted(set(config) - TTL_KEYS)
    if unknown:
        raise ValidationError(f"ttl: agentmem's LangGraph store does not support {', '.join(unknown)}")
    if config.get("omit_expired") is False:
        raise ValidationError("ttl: omit_expired=False is not supported: agentmem never returns an expired memory")
    default = config.get("default_ttl")
    if default is not None and (isinstance(default, bool) or not isinstance(default, int | float) or default <= 0):
        raise ValidationError(f"ttl: default_ttl must be a positive number of minutes, got {default!r}")
    return config


def check_labels(op: Op) -> None:
    """InvalidNamespaceError for a label agentmem cannot keep as it is in a project name: blank at
    either end (names are trimmed, so two namespaces would share one project), or holding a
    control character or line separator."""
    if isinstance(op, GetOp | PutOp):
        labels: Iterable[str] = op.namespace
    elif isinstance(op, SearchOp):
        labels = op.namespace_prefix
    elif isinstance(op, ListNamespacesOp):
        labels = [label for c in op.match_conditions or () for label in c.path]
    else:
        return
    for label in labels:
        if label != label.strip():
            raise InvalidNamespaceError(
                f"namespace label {label!r} has blanks at an end: agentmem trims project names, so it "
                f"would share a project with {label.strip()!r}"
            )
        if any(unicodedata.category(c) in BREAKS for c in label):
            raise InvalidNamespaceError(f"namespace label {label!r}: control characters and line separators "
                                        "are not allowed in a project name")  # fmt: skip


def project_of(namespace: tuple[str, ...]) -> str:
    return SEP.join(namespace)


def namespace_of(project: str) -> tuple[str, ...]:
    return tuple(project.split(SEP))


def key_of(m: MemoryVersion) -> str:
    """The item key: the memory's key (earlier versions of the store filed it as source_ref), or
    the lineage for memories written elsewhere."""
    return m.key or m.source_ref or f"memory-{m.lineage_id}"


def namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """A prefix or suffix condition, where "*" matches any one label."""
    path = condition.path
    if len(namespace) < len(path):
        return False
    labels = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path) :]
    return all(p in ("*", label) for p, label in zip(path, labels, strict=True))


__all__ = ["AgentMemStore", "RecalledItem"]
