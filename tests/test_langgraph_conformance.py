"""LangGraph's BaseStore contract, as its documentation and docstrings state it, checked against
AgentMemStore on each way of reaching agentmem: in process (DuckDB), on PostgreSQL, and through
the HTTP Client against a real server (the packaged model). Every operation and every option:
put / get / delete, search (prefix, filter, query, limit, offset), list_namespaces, batch, the
async methods, `index` config and per-put `index`, TTLs and the sweeper, and the options agentmem
cannot honour, which must raise. Each test works under a namespace root of its own."""

from __future__ import annotations

import asyncio
import math
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

pytest.importorskip("langgraph")

from langgraph.store.base import GetOp, Item, ListNamespacesOp, PutOp, SearchItem, SearchOp  # noqa: E402

from agentmem import Memory  # noqa: E402
from agentmem.client import Client  # noqa: E402
from agentmem.errors import ValidationError  # noqa: E402
from agentmem.integrations.langgraph import AgentMemStore, RecalledItem  # noqa: E402
from fakes import FakeEmbedder  # noqa: E402
from servers import Server  # noqa: E402

TOKEN = "langgraph-conformance-secret-01"
WAYS = ["in-process", "postgres", pytest.param("http", marks=pytest.mark.model)]


class Letters:
    """A deterministic embedding function of our own (letter counts), for `index={"embed": ...}`:
    the tests compute the expected cosine from it."""

    dims = 26

    def __call__(self, texts: list[str]) -> list[list[float]]:
        return [self.vector(t).tolist() for t in texts]

    def vector(self, text: str) -> np.ndarray:
        v = np.zeros(self.dims)
        for c in text.lower():
            if "a" <= c <= "z":
                v[ord(c) - 97] += 1
        return v


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.fixture(scope="module")
def real_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server(tmp_path_factory.mktemp("lgc") / "data", tokens=f"lg:{TOKEN}:admin:*")
    s.start()
    yield s
    s.close()


@pytest.fixture(params=WAYS)
def memory_of(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Any]:
    """The agentmem memory behind a store: in process, on PostgreSQL, or a Client of a real server."""
    if request.param == "http":
        server: Server = request.getfixturevalue("real_server")
        with Client(server.url, token=TOKEN, timeout=60) as client:
            yield client
        return
    url = request.getfixturevalue("database_url") if request.param == "postgres" else None
    with Memory(tmp_path / "data", embedder=FakeEmbedder(), database_url=url) as mem:
        yield mem


@pytest.fixture
def store(memory_of: Any) -> AgentMemStore:
    return AgentMemStore(memory_of)


@pytest.fixture
def root() -> tuple[str]:
    """A namespace root of this test's own (the HTTP server is shared by the module's tests)."""
    return (f"t{uuid.uuid4().hex[:12]}",)


# -- put, get, delete: a key is an identity


def test_put_then_get_returns_the_item(store: AgentMemStore, root: tuple[str]) -> None:
    ns = (*root, "users", "ada")
    store.put(ns, "prefs", {"theme": "dark", "nested": {"a": [1, 2.5, None, True]}, "name": "Zürich ✓"})
    item = store.get(ns, "prefs")
    assert isinstance(item, Item) and not isinstance(item, SearchItem)
    assert (item.namespace, item.key) == (ns, "prefs")
    assert item.value == {"theme": "dark", "nested": {"a": [1, 2.5, None, True]}, "name": "Zürich ✓"}
    assert item.created_at == item.updated_at and item.created_at.tzinfo is not None
    assert store.get(ns, "missing") is None and store.get((*root, "users"), "prefs") is None


def test_every_key_keeps_its_own_item(store: AgentMemStore, root: tuple[str]) -> None:
    """Similar, even identical, values under different keys never supersede, reinforce or merge."""
    ns = (*root, "docs")
    store.put(ns, "key1", {"data": "value1"})
    store.put(ns, "key2", {"data": "value2"})
    for i in range(5):
        store.put(ns, f"doc{i}", {"content": f"test document number {i}"})
    for i in range(20):
        store.put(ns, f"same{i}", {"content": "The dev server runs on port 3000."})
    store.put(ns, "port", {"content": "The dev server is on port 4000 now."})
    assert store.get(ns, "key1").value == {"data": "value1"}  # type: ignore[union-attr]
    assert store.get(ns, "key2").value == {"data": "value2"}  # type: ignore[union-attr]
    keys = {i.key for i in store.search(ns, limit=100)}
    assert keys == {"key1", "key2", "port"} | {f"doc{i}" for i in range(5)} | {f"same{i}" for i in range(20)}
    assert all(store.get(ns, f"same{i}") is not None for i in range(20))


def test_a_put_under_the_same_key_is_a_new_version_with_history(store: AgentMemStore, root: tuple[str]) -> None:
    ns = (*root, "facts")
    store.put(ns, "port", {"content": "The dev server runs on port 3000."})
    store.put(ns, "other", {"content": "The dev server runs on port 3000."})
    first = store.get(ns, "port")
    time.sleep(0.01)
    store.put(ns, "port", {"content": "The dev server is on port 4000 now."})
    item = store.get(ns, "port")
    assert first is not None and item is not None
    assert item.value == {"content": "The dev server is on port 4000 now."}
    assert item.created_at == first.created_at and item.updated_at > first.updated_at
    assert store.get(ns, "other").value == {"content": "The dev server runs on port 3000."}  # type: ignore[union-attr]
    current = [m for m in store.memory.list_versions(projects=[".".join(ns)])[0] if m.key == "port"]
    assert len(current) == 1 and current[0].version == 2
    history = store.memory.history(current[0].id)
    assert [v.content for v in history] == ["The dev server runs on port 3000.", "The dev server is on port 4000 now."]


def test_the_same_value_again_keeps_the_item_and_moves_updated_at(store: AgentMemStore, root: tuple[str]) -> None:
    ns = (*root, "facts")
    store.put(ns, "k", {"v": 1})
    first = store.get(ns, "k")
    time.sleep(0.01)
    store.put(ns, "k", {"v": 1})
    again = store.get(ns, "k")
    assert first is not None and again is not None and again.value == {"v": 1}
    assert again.created_at == first.created_at and again.updated_at >= first.updated_at


def test_delete_removes_only_that_item(store: AgentMemStore, root: tuple[str]) -> None:
    ns = (*root, "facts")
    store.put(ns, "a", {"v": "a"})
    store.put(ns, "b", {"v": "b"})
    store.delete(ns, "a")
    store.delete(ns, "never-written")  # no error
    assert store.get(ns, "a") is None and store.get(ns, "b") is not None
    assert [i.key for i in store.search(ns)] == ["b"]
    store.put(ns, "a", {"v": "again"})  # a deleted key can be used again
    assert store.get(ns, "a").value == {"v": "again"}  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "value",
    [{"$index": False}, {"a": 1, "$ttl": 3}],
)
def test_a_value_with_a_reserved_key_is_refused_and_nothing_written(
    store: AgentMemStore, root: tuple[str], value: dict[str, Any]
) -> None:
    with pytest.raises(ValidationError, match="reserved"):
        store.put(root, "k", value)
    assert store.get(root, "k") is None


# -- search without a query: prefix, filter, pages


def fill(store: AgentMemStore, root: tuple[str]) -> None:
    store.put((*root, "users", "ada"), "a", {"user": {"access-level": "admin", "age": 36}, "score": 4.5, "tag": "x"})
    store.put((*root, "users", "bob"), "b", {"user": {"access-level": "guest", "age": 17}, "score": 2, "tag": "y"})
    store.put((*root, "users", "bob"), "c", {"user": {"access-level": "admin", "age": 50}, "score": 9, "tag": "y"})
    store.put((*root, "teams"), "t", {"tag": "x", "members": ["ada", "bob"]})


def keys(items: list[Any]) -> list[str]:
    return sorted(i.key for i in items)


def test_search_is_scoped_by_prefix_as_a_tuple_or_a_list(store: AgentMemStore, root: tuple[str]) -> None:
    fill(store, root)
    assert keys(store.search(root)) == ["a", "b", "c", "t"]
    assert keys(store.search((*root, "users"))) == ["a", "b", "c"]
    assert keys(store.search([*root, "users", "bob"])) == ["b", "c"]  # type: ignore[arg-type]
    assert keys(store.batch([SearchOp([*root, "users", "bob"])])[0]) == ["b", "c"]  # type: ignore[arg-type]
    assert store.search((*root, "user")) == []  # a prefix is whole labels, not characters
    assert all(i.score is None and i.namespace[0] == root[0] for i in store.search(root))


def test_search_filters_with_operators_nested_objects_and_dotted_paths(store: AgentMemStore, root: tuple[str]) -> None:
    fill(store, root)
    assert keys(store.search(root, filter={"tag": "y"})) == ["b", "c"]
    assert keys(store.search(root, filter={"tag": {"$eq": "x"}})) == ["a", "t"]
    assert keys(store.search(root, filter={"tag": {"$ne": "x"}})) == ["b", "c"]
    assert keys(store.search(root, filter={"score": {"$gt": 2}})) == ["a", "c"]
    assert keys(store.search(root, filter={"score": {"$gte": 2, "$lt": 9}})) == ["a", "b"]
    assert keys(store.search(root, filter={"score": {"$lte": 4.5}})) == ["a", "b"]
    assert keys(store.search(root, filter={"user": {"access-level": "admin"}})) == ["a", "c"]
    assert keys(store.search(root, filter={"user.access-level": "admin"})) == ["a", "c"]
    assert keys(store.search(root, filter={"user.age": {"$lt": 18}})) == ["b"]
    assert keys(store.search(root, filter={"members": ["ada", "bob"]})) == ["t"]
    assert store.search(root, filter={"user.nothing": "admin"}) == []
    with pytest.raises(ValidationError, match="operator"):
        store.search(root, filter={"score": {"$near": 1}})


def test_search_pages_with_limit_and_offset(store: AgentMemStore, root: tuple[str]) -> None:
    for i in range(7):
        store.put(root, f"k{i}", {"n": i})
    pages = [store.search(root, limit=3, offset=o) for o in (0, 3, 6)]
    assert [len(p) for p in pages] == [3, 3, 1]
    assert sorted(i.key for p in pages for i in p) == [f"k{i}" for i in range(7)]
    assert store.search(root, limit=0) == [] and store.search(root, offset=10) == []
    assert len(store.search(root, query="n", limit=2)) == 2


# -- search with a query: scores are similarities


def test_query_scores_are_cosine_similarities_comparable_across_queries(memory_of: Any, root: tuple[str]) -> None:
    store = AgentMemStore(memory_of)
    ns = (*root, "facts")
    texts = {
        "editor": "Ada writes her code in Helix with a light colour theme",
        "coffee": "Ada drinks her espresso without sugar every morning",
        "travel": "Ada flies to Lisbon for the conference in October",
    }
    for k, t in texts.items():
        store.put(ns, k, {"content": t})
    exact = store.search(ns, query=texts["coffee"])
    vague = store.search(ns, query="which theme does her editor use")
    assert exact[0].key == "coffee" and exact[0].score == pytest.approx(1.0, abs=1e-3)
    assert vague[0].key == "editor" and 0 < vague[0].score < exact[0].score  # type: ignore[operator]
    assert all(isinstance(i, RecalledItem) and i.recall_score is not None for i in exact)
    assert all(-1.0 <= (i.score or 0.0) <= 1.0 for i in exact + vague)


def test_an_index_config_embeds_only_its_fields_with_its_embed(memory_of: Any, root: tuple[str]) -> None:
    letters = Letters()
    store = AgentMemStore(memory_of, index={"dims": letters.dims, "embed": letters, "fields": ["title", "meta.note"]})
    ns = (*root, "docs")
    store.put(ns, "d1", {"title": "apple pie", "body": "zzzz zzzz", "meta": {"note": "kiwi"}})
    store.put(ns, "d2", {"title": "zebra", "body": "apple apple apple"})
    store.put(ns, "d3", {"title": "apple", "body": "x"}, index=False)
    store.put(ns, "d4", {"title": "qqq", "body": "apple pie"}, index=["body"])
    hits = store.search(ns, query="apple pie")
    q = letters.vector("apple pie")
    want = {
        "d1": max(cosine(q, letters.vector("apple pie")), cosine(q, letters.vector("kiwi"))),
        "d2": cosine(q, letters.vector("zebra")),  # its body is not embedded
        "d4": cosine(q, letters.vector("apple pie")),  # the put's own paths
    }
    scored = [h for h in hits if h.score is not None]
    assert {h.key: h.score for h in scored} == pytest.approx(want, abs=1e-6)
    assert [h.score for h in scored] == sorted((h.score for h in scored), reverse=True)  # type: ignore[type-var]
    assert [(h.key, h.score) for h in hits if h.score is None] == [("d3", None)]  # never embedded: last, no score
    assert hits[-1].key == "d3"
    assert [h.key for h in store.search(ns, query="apple pie", filter={"title": "zebra"})] == ["d2"]
    paged = store.search(ns, query="apple pie", limit=2, offset=1)
    assert [h.key for h in paged] == [h.key for h in hits[1:3]]


@pytest.mark.parametrize("distance", ["inner_product", "l2"])
def test_an_index_distance_type_scores_as_postgres_store_does(memory_of: Any, root: tuple[str], distance: str) -> None:
    """PostgresStore's `distance_type`: the inner product, or the negative Euclidean distance."""
    letters = Letters()
    store = AgentMemStore(memory_of, index={"dims": 26, "embed": letters, "fields": ["t"], "distance_type": distance})
    for k, t in {"near": "abcabc", "far": "xyz"}.items():
        store.put(root, k, {"t": t})
    q = letters.vector("abc")
    vectors = {"near": letters.vector("abcabc"), "far": letters.vector("xyz")}
    want = {
        k: float(q @ v) if distance == "inner_product" else -float(np.linalg.norm(q - v)) for k, v in vectors.items()
    }
    hits = store.search(root, query="abc")
    assert [h.key for h in hits] == ["near", "far"]
    assert {h.key: h.score for h in hits} == pytest.approx(want)


def test_index_false_keeps_an_item_out_of_agentmem_recall(store: AgentMemStore, root: tuple[str]) -> None:
    store.put(root, "hidden", {"content": "The staging database password rotates weekly"}, index=False)
    store.put(root, "shown", {"content": "The staging database runs PostgreSQL 16"})
    assert [i.key for i in store.search(root, query="staging database")] == ["shown"]
    assert store.get(root, "hidden") is not None
    assert {i.key for i in store.search(root)} == {"hidden", "shown"}


def test_an_index_without_embed_uses_agentmems_model_in_process(tmp_path: Any, root: tuple[str]) -> None:
    with Memory(tmp_path / "data", embedder=FakeEmbedder()) as mem:
        store = AgentMemStore(mem, index={"dims": FakeEmbedder.dim, "fields": ["text"]})
        store.put(root, "k", {"text": "we deploy on Fridays", "other": "nothing"})
        (hit,) = store.search(root, query="we deploy on Fridays")
        assert hit.score == pytest.approx(1.0, abs=1e-6)


# -- options agentmem cannot honour raise


@pytest.mark.parametrize(
    ("index", "message"),
    [
        ({"dims": 3, "embed": lambda texts: [[1.0, 0.0] for _ in texts]}, "2 dimensions"),
        ({"dims": 26, "embed": Letters(), "distance_type": "hamming"}, "distance_type"),
        ({"dims": 26, "embed": Letters(), "ann_index_config": {"kind": "hnsw"}}, "ann_index_config"),
        ({"embed": Letters()}, "dims"),
    ],
)
def test_an_index_config_agentmem_cannot_honour_raises(
    memory_of: Any, root: tuple[str], index: dict[str, Any], message: str
) -> None:
    def use() -> None:
        store = AgentMemStore(memory_of, index=index)  # type: ignore[arg-type]
        store.put(root, "k", {"text": "abc"})
        store.search(root, query="abc")

    with pytest.raises(ValidationError, match=message):
        use()


def test_index_without_embed_over_http_raises(root: tuple[str]) -> None:
    with Client("http://127.0.0.1:9", token=TOKEN) as client:
        with pytest.raises(ValidationError, match="embed"):
            AgentMemStore(client, index={"dims": 26})


def test_per_put_paths_without_an_index_config_raise_and_write_nothing(store: AgentMemStore, root: tuple[str]) -> None:
    with pytest.raises(ValidationError, match="index config"):
        store.put(root, "k", {"text": "abc"}, index=["text"])
    with pytest.raises(ValidationError, match="index"):
        store.batch([PutOp(root, "k", {"text": "abc"}, index="text")])  # type: ignore[arg-type]
    assert store.get(root, "k") is None


@pytest.mark.parametrize(
    ("ttl", "message"),
    [({"omit_expired": False}, "omit_expired"), ({"default_ttl": -1}, "default_ttl"), ({"sweep": 1}, "sweep")],
)
def test_a_ttl_config_agentmem_cannot_honour_raises(memory_of: Any, ttl: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        AgentMemStore(memory_of, ttl=ttl)  # type: ignore[arg-type]


def test_a_bad_ttl_on_put_raises(store: AgentMemStore, root: tuple[str]) -> None:
    for bad in (0, -5, "soon"):
        with pytest.raises(ValidationError, match="ttl"):
            store.put(root, "k", {"v": 1}, ttl=bad)  # type: ignore[arg-type]
    assert store.get(root, "k") is None


# -- TTL: agentmem's expiry, refreshed on read, swept


def test_an_item_expires_after_its_ttl_and_a_read_can_refresh_it(memory_of: Any, root: tuple[str]) -> None:
    store = AgentMemStore(memory_of, ttl={"refresh_on_read": True})
    ttl = 3 / 60  # minutes
    store.put(root, "kept", {"v": 1}, ttl=ttl)
    store.put(root, "lapsed", {"v": 2}, ttl=ttl)
    store.put(root, "forever", {"v": 3})
    for _ in range(2):  # at 1.5 s and 2.5 s: "kept" refreshed by the read, "lapsed" not
        time.sleep(1.5 if _ == 0 else 1.0)
        assert store.get(root, "kept") is not None
        assert store.search(root, filter={"v": 2}, refresh_ttl=False)[0].key == "lapsed"
    time.sleep(1.0)  # 3.5 s: past the TTL from the put, not from the last refresh
    assert store.get(root, "lapsed", refresh_ttl=False) is None
    assert {i.key for i in store.search(root)} == {"kept", "forever"}
    assert store.get(root, "kept", refresh_ttl=False).value == {"v": 1}  # type: ignore[union-attr]


def test_default_ttl_applies_and_refresh_on_read_false_does_not_refresh(memory_of: Any, root: tuple[str]) -> None:
    store = AgentMemStore(memory_of, ttl={"default_ttl": 1.5 / 60, "refresh_on_read": False})
    store.put(root, "k", {"v": 1})
    store.put(root, "no-ttl", {"v": 2}, ttl=None)
    time.sleep(1.0)
    assert store.get(root, "k") is not None  # read, not refreshed
    time.sleep(0.8)
    assert store.get(root, "k") is None and store.get(root, "no-ttl") is not None
    assert store.list_namespaces(prefix=root) == [root]


def test_the_sweeper_expires_items_in_agentmem_and_stops(memory_of: Any, root: tuple[str]) -> None:
    store = AgentMemStore(memory_of, ttl={"sweep_interval_minutes": 0.5 / 60})
    store.put(root, "k", {"v": 1}, ttl=1 / 60)
    store.put(root, "stays", {"v": 2})
    done = store.start_ttl_sweeper()
    try:
        deadline = time.time() + 15
        while time.time() < deadline:
            expired, _ = memory_of.list_versions(projects=[root[0]], status="expired")
            if expired:
                break
            time.sleep(0.3)
        assert [m.source_ref for m in expired] == ["k"]
    finally:
        assert store.stop_ttl_sweeper(timeout=10)
    assert done.done() and done.exception() is None
    assert [i.key for i in store.search(root)] == ["stays"]


# -- reads beside deletes


def test_reads_never_raise_while_deletes_run_beside_them(store: AgentMemStore, root: tuple[str]) -> None:
    ns = (*root, "busy")
    for i in range(6):
        store.put(ns, f"k{i}", {"content": f"note {i} about the busy namespace"})
        store.put(ns, f"k{i}", {"content": f"note {i} about the busy namespace, revised"})  # version 2
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            try:
                for i in range(6):
                    store.get(ns, f"k{i}")
                store.search(ns, query="busy namespace note")
                store.search(ns)
                store.list_namespaces(prefix=root)
            except BaseException as exc:  # noqa: BLE001 - any error is the finding
                errors.append(exc)
                return

    readers = [threading.Thread(target=reader) for _ in range(2)]
    for t in readers:
        t.start()
    try:
        for i in range(6):
            store.delete(ns, f"k{i}")
            store.put(ns, f"k{i}", {"content": f"note {i} written again"})
            store.delete(ns, f"k{i}")
    finally:
        stop.set()
        for t in readers:
            t.join(timeout=60)
    assert errors == []
    assert store.search(ns) == []


# -- namespaces, batch, async


def test_list_namespaces_with_prefix_suffix_wildcards_depth_and_pages(store: AgentMemStore, root: tuple[str]) -> None:
    r = root[0]
    for ns in [(r, "a", "x", "v1"), (r, "a", "y", "v2"), (r, "b", "x", "v1"), (r, "b")]:
        store.put(ns, "k", {"v": 1})
    assert store.list_namespaces(prefix=root) == [
        (r, "a", "x", "v1"),
        (r, "a", "y", "v2"),
        (r, "b"),
        (r, "b", "x", "v1"),
    ]
    assert store.list_namespaces(prefix=(r, "*", "x")) == [(r, "a", "x", "v1"), (r, "b", "x", "v1")]
    assert store.list_namespaces(prefix=root, suffix=("v1",)) == [(r, "a", "x", "v1"), (r, "b", "x", "v1")]
    assert store.list_namespaces(prefix=root, suffix=("*", "v2")) == [(r, "a", "y", "v2")]
    assert store.list_namespaces(prefix=root, max_depth=2) == [(r, "a"), (r, "b")]
    assert store.list_namespaces(prefix=root, limit=2, offset=1) == [(r, "a", "y", "v2"), (r, "b")]


def test_batch_answers_each_operation_in_order(store: AgentMemStore, root: tuple[str]) -> None:
    ns = (*root, "b")
    results = store.batch(
        [
            PutOp(ns, "k1", {"v": 1}),
            GetOp(ns, "k1"),
            PutOp(ns, "k1", {"v": 2}),
            SearchOp(root, filter={"v": 2}),
            ListNamespacesOp(),
            PutOp(ns, "k1", None),
            GetOp(ns, "k1"),
        ]
    )
    assert results[0] is None and results[1].value == {"v": 1}  # type: ignore[union-attr]
    assert [i.value for i in results[3]] == [{"v": 2}]  # type: ignore[union-attr]
    assert ns in results[4] and results[6] is None  # type: ignore[operator]


def test_async_methods_match_the_sync_ones(store: AgentMemStore, root: tuple[str]) -> None:
    async def run() -> tuple[Any, ...]:
        await store.aput(root, "k", {"content": "an async note"})
        got = await store.aget(root, "k")
        found = await asyncio.gather(*(store.asearch(root, query="async note") for _ in range(3)))
        spaces = await store.alist_namespaces(prefix=root)
        await store.adelete(root, "k")
        return got, found, spaces, await store.aget(root, "k")

    got, found, spaces, gone = asyncio.run(run())
    assert got.value == {"content": "an async note"} and all([i.key for i in f] == ["k"] for f in found)
    assert spaces == [root] and gone is None
    assert not math.isnan(found[0][0].score)
