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
  spaces (or other blanks) at either end, or with control characters or line separators, is
  refused (InvalidNamespaceError): project names are trimmed, so ("users", "bob ") would share
  ("users", "bob")'s project. Supersession and
  reinforcement never cross projects, so one user's facts never replace another's. A store made
  with `agent=` records that agent on every memory it writes.
- An item's key is its memory's `source_ref`; the item is that memory's current version.
- `put` is `remember`, so a new text reinforces or supersedes a current memory of the same
  namespace whatever its key: the replaced item then reads as missing (its versions stay in the
  history). A `put` under a key that holds a different value writes a new version of that memory
  (`revise`); the same value again reinforces it.
- A value `{"content": text}` is stored as the text itself; any other value as its JSON text. A
  string "kind" or "tier" in a value becomes the memory's kind or tier (they must be agentmem's).
- `search` with a query is `recall` (BM25 + vectors over current versions, ranked by
  currentness); without one it lists the newest items first. A filter on "kind" or "tier" narrows
  by the memory's kind and tier; other filter keys are compared with the value as LangGraph's
  `InMemoryStore` compares them.
- `delete` is agentmem's governance delete of the memory's lineage (over HTTP: an admin token).
- `list_namespaces` lists the projects that hold current memories.

Not supported: TTLs (`supports_ttl` is False) and `index=` on put (agentmem indexes every memory).
"""

from __future__ import annotations

import asyncio
import json
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)

from agentmem import MemoryAPI, MemoryVersion

TEXT = "content"  # the value field that holds a memory's text
PUSHED_DOWN = ("kind", "tier")  # filter keys answered by the memory's own fields
PAGE = 1000  # the largest page list_versions and recall give (Config.max_k)
SEP = "."
BREAKS = ("Cc", "Zl", "Zp")  # what a project name may not hold: controls and line separators (as validate.name)


class AgentMemStore(BaseStore):
    """LangGraph's long-term memory store, kept by agentmem (see the module docstring for the mapping).

    `memory` is anything that satisfies `agentmem.MemoryAPI`: `agentmem.Memory` in process, or
    `agentmem.client.Client` for a running service. The store does not close it.
    """

    supports_ttl = False

    def __init__(
        self, memory: MemoryAPI, *, agent: str | None = None, delete_reason: str = "deleted through LangGraph"
    ) -> None:
        self.memory = memory
        self.agent = agent
        self.delete_reason = delete_reason

    # -- BaseStore's two abstract methods; get/put/search/delete/list_namespaces come from it

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the operations in order; a put is visible to the get that follows it."""
        results: list[Result] = []
        for op in ops:
            validate_op_namespace(op)
            check_labels(op)
            if isinstance(op, GetOp):
                results.append(self.get_item(op.namespace, op.key))
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

    def get_item(self, namespace: tuple[str, ...], key: str) -> Item | None:
        found = self._current(project_of(namespace), key)
        return None if found is None else self._item(found)

    def put_item(self, op: PutOp) -> None:
        project = project_of(op.namespace)
        old = self._current(project, op.key)
        if op.value is None:
            if old is not None:
                self.memory.delete(reason=self.delete_reason, lineages=[old.lineage_id])
            return
        if op.ttl is not None:
            raise NotImplementedError("agentmem's LangGraph store does not support TTLs; set ttl=None")
        content = content_of(op.value)
        fields = {f: op.value[f] for f in PUSHED_DOWN if isinstance(op.value.get(f), str)}
        if old is not None and (old.content != content or any(getattr(old, f) != v for f, v in fields.items())):
            self.memory.revise(old.id, content, reason="put under the same key", **fields)
        else:
            self.memory.remember(content=content, project=project, agent=self.agent, source_ref=op.key, **fields)

    def search_items(self, op: SearchOp) -> list[SearchItem]:
        if op.limit <= 0:
            return []
        projects = [p for p in self._projects() if namespace_of(p)[: len(op.namespace_prefix)] == op.namespace_prefix]
        if not projects:
            return []
        pushed = {f: [v] for f, v in (op.filter or {}).items() if f in PUSHED_DOWN and isinstance(v, str)}
        rest = {f: v for f, v in (op.filter or {}).items() if f not in pushed}
        wanted = op.offset + op.limit
        scored: list[tuple[float | None, MemoryVersion]]
        if op.query:
            k = min(PAGE, wanted * 5 if rest else wanted)
            scored = [
                (h.score, h.memory)
                for p in projects
                for h in self.memory.recall(
                    op.query, project=p, k=k, kinds=pushed.get("kind", ()), tiers=pushed.get("tier", ())
                )
            ]
            scored.sort(key=lambda sm: -(sm[0] or 0.0))
        else:
            listed = self._versions(projects, kinds=pushed.get("kind", ()), tiers=pushed.get("tier", ()))
            scored = [(None, m) for m in listed]
        out: list[SearchItem] = []
        for score, m in scored:
            if rest and not matches(decode(m.content), rest):
                continue
            out.append(self._item(m, score))
            if len(out) >= wanted:
                break
        return out[op.offset :]

    def namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found = {namespace_of(p) for p in self._projects()}
        found = {ns for ns in found if all(namespace_matches(c, ns) for c in op.match_conditions or ())}
        if op.max_depth is not None:
            found = {ns[: op.max_depth] for ns in found}
        return sorted(found)[op.offset : op.offset + op.limit]

    # -- reading agentmem

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

    def _projects(self) -> set[str]:
        # MemoryAPI has no list of projects yet, so this reads the current versions' scopes.
        return {m.project for m in self._versions(None)}

    def _current(self, project: str, key: str) -> MemoryVersion | None:
        return next((m for m in self._versions([project]) if key_of(m) == key), None)

    def _item(self, m: MemoryVersion, score: float | None = None) -> SearchItem:
        created = m.created_at
        if m.version > 1:  # the item began with the oldest version filed under the same key
            created = min(v.created_at for v in self.memory.history(m.id) if key_of(v) == key_of(m))
        return SearchItem(
            namespace=namespace_of(m.project),
            key=key_of(m),
            value=decode(m.content),
            created_at=created,
            updated_at=m.created_at,
            score=score,
        )


# -- the mapping, as plain functions (tested on their own)


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
    """The item key: what the store wrote as source_ref, or the lineage for memories written elsewhere."""
    return m.source_ref if m.source_ref is not None else f"memory-{m.lineage_id}"


def content_of(value: Mapping[str, Any]) -> str:
    """The memory text of a value: `{"content": text}` is its text; anything else its JSON."""
    text = value.get(TEXT)
    if set(value) == {TEXT} and isinstance(text, str) and text and text == text.strip() and not _json_object(text):
        return text
    return json.dumps(dict(value), ensure_ascii=False, sort_keys=True)


def decode(content: str) -> dict[str, Any]:
    """The value of a memory text: the inverse of `content_of`."""
    obj = _json_object(content)
    return obj if obj is not None else {TEXT: content}


def _json_object(text: str) -> dict[str, Any] | None:
    if not text.startswith("{"):
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def matches(value: Mapping[str, Any], conditions: Mapping[str, Any]) -> bool:
    """LangGraph's filter semantics: equal values, nested dicts, and $eq/$ne/$gt/$gte/$lt/$lte."""
    return all(_compare(value.get(k), v) for k, v in conditions.items())


def _compare(have: Any, want: Any) -> bool:
    if isinstance(want, dict):
        if any(k.startswith("$") for k in want):
            return all(_operator(have, op, arg) for op, arg in want.items())
        return isinstance(have, dict) and matches(have, want)
    return bool(have == want)


def _operator(have: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return bool(have == arg)
    if op == "$ne":
        return bool(have != arg)
    if have is None:
        return False
    compare = {"$gt": float.__gt__, "$gte": float.__ge__, "$lt": float.__lt__, "$lte": float.__le__}.get(op)
    if compare is None:
        raise ValueError(f"unsupported filter operator {op!r}")
    return bool(compare(float(have), float(arg)))


def namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """A prefix or suffix condition, where "*" matches any one label."""
    path = condition.path
    if len(namespace) < len(path):
        return False
    labels = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path) :]
    return all(p in ("*", label) for p, label in zip(path, labels, strict=True))


__all__ = ["AgentMemStore"]
