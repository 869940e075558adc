"""agentmem as a LangGraph BaseStore: LangGraph's store contract (put, get, search, delete, list
namespaces), checked side by side with LangGraph's own InMemoryStore, in process, through the HTTP
routes, and over a real server socket; then a real LangGraph graph that writes a fact, its
replacement, and recalls."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("langgraph")

from langgraph.store.base import BaseStore, InvalidNamespaceError  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402
from litestar.testing import TestClient  # noqa: E402

from agentmem import Memory  # noqa: E402
from agentmem.client import Client  # noqa: E402
from agentmem.integrations.langgraph import AgentMemStore, content_of, decode  # noqa: E402
from api.app import create_app  # noqa: E402
from api.settings import load  # noqa: E402
from fakes import DIM, FakeEmbedder  # noqa: E402
from servers import Server, app_client  # noqa: E402

try:  # the README's agent example; at module level, where the tools' annotations are resolved
    from langchain.tools import ToolRuntime
except ImportError:  # pragma: no cover
    ToolRuntime = None  # type: ignore[assignment,misc]

TOKEN = "langgraph-test-secret-000001"
TOKENS = f"lg:{TOKEN}:admin:*"

ADA, BOB = ("memories", "ada"), ("memories", "bob")
FACTS = {
    "editor": {"content": "Ada writes her code in Helix with a light colour theme"},
    "coffee": {"content": "Ada drinks her espresso without sugar every morning"},
    "travel": {"content": "Ada flies to Lisbon for the conference in October"},
}


@pytest.fixture(scope="module")
def real_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One real `agentmem serve` (the packaged model) for the socket tests of this module."""
    s = Server(tmp_path_factory.mktemp("lg") / "data", tokens=TOKENS)
    s.start()
    yield s
    s.close()


@pytest.fixture(
    params=[
        "langgraph-inmemory",
        "in-process",
        "http-routes",
        pytest.param("server-socket", marks=[pytest.mark.model, pytest.mark.slow]),
    ]
)
def store(request: pytest.FixtureRequest, memory: Memory) -> Iterator[BaseStore]:
    """LangGraph's own InMemoryStore (the reference every case must also pass) and agentmem's store
    over each way of reaching agentmem."""
    if request.param == "langgraph-inmemory":
        fake = FakeEmbedder()
        yield InMemoryStore(index={"dims": DIM, "embed": lambda texts: fake.embed(texts).tolist()})
    elif request.param == "in-process":
        yield AgentMemStore(memory, agent="assistant")
    elif request.param == "http-routes":
        with TestClient(create_app(load(env={"AGENTMEM_TOKENS": TOKENS}), mem=memory)) as app:
            with app_client(app, TOKEN) as client:
                yield AgentMemStore(client)
    else:
        server: Server = request.getfixturevalue("real_server")
        with Client(server.url, token=TOKEN, timeout=60) as client:
            # the server outlives each test: give each one namespaces of its own
            yield _Prefixed(AgentMemStore(client), request.node.name)


class _Prefixed(BaseStore):
    """A store whose namespaces all sit under one root label (keeps tests on one server apart)."""

    def __init__(self, inner: BaseStore, root: str) -> None:
        self.inner = inner
        self.root = "".join(c if c.isalnum() else "-" for c in root)

    def batch(self, ops: Any) -> list[Any]:
        from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp

        out_ops: list[Any] = []
        for op in ops:
            if isinstance(op, GetOp | PutOp):
                out_ops.append(op._replace(namespace=(self.root, *op.namespace)))
            elif isinstance(op, SearchOp):
                out_ops.append(op._replace(namespace_prefix=(self.root, *op.namespace_prefix)))
            else:
                conditions = [c for c in op.match_conditions or () if c.match_type != "prefix"]
                prefixes = [c for c in op.match_conditions or () if c.match_type == "prefix"]
                path = prefixes[0].path if prefixes else ()
                conditions.append(MatchCondition(match_type="prefix", path=(self.root, *path)))
                depth = None if op.max_depth is None else op.max_depth + 1
                out_ops.append(ListNamespacesOp(tuple(conditions), depth, op.limit, op.offset))
        results = self.inner.batch(out_ops)
        fixed: list[Any] = []
        for op, result in zip(out_ops, results, strict=True):
            if isinstance(op, ListNamespacesOp):
                fixed.append([ns[1:] for ns in result])
            elif isinstance(op, GetOp) and result is not None:
                result.namespace = result.namespace[1:]
                fixed.append(result)
            elif isinstance(op, SearchOp):
                for item in result:
                    item.namespace = item.namespace[1:]
                fixed.append(result)
            else:
                fixed.append(result)
        return fixed

    async def abatch(self, ops: Any) -> list[Any]:
        return await asyncio.to_thread(self.batch, list(ops))


def fill(store: BaseStore) -> None:
    for key, value in FACTS.items():
        store.put(ADA, key, value)
    store.put(BOB, "editor", {"content": "Bob edits everything in Emacs"})
    store.put(("projects", "shop", "infra"), "db", {"engine": "postgres", "version": 16, "kind": "config"})


# -- LangGraph's contract


def test_put_then_get_returns_the_value_with_its_namespace_and_key(store: BaseStore) -> None:
    fill(store)
    item = store.get(ADA, "coffee")
    assert item is not None
    assert (item.namespace, item.key, item.value) == (ADA, "coffee", FACTS["coffee"])
    assert item.created_at <= item.updated_at
    assert store.get(BOB, "coffee") is None and store.get(ADA, "missing") is None
    structured = store.get(("projects", "shop", "infra"), "db")
    assert structured is not None and structured.value == {"engine": "postgres", "version": 16, "kind": "config"}


def test_put_under_the_same_key_replaces_the_value(store: BaseStore) -> None:
    fill(store)
    first = store.get(ADA, "travel")
    store.put(ADA, "travel", {"content": "Ada takes the night train to Vienna in November"})
    item = store.get(ADA, "travel")
    assert first is not None and item is not None
    assert item.value == {"content": "Ada takes the night train to Vienna in November"}
    assert item.updated_at >= first.updated_at
    assert store.get(ADA, "editor") is not None  # other keys untouched


def test_delete_removes_only_that_item(store: BaseStore) -> None:
    fill(store)
    store.delete(ADA, "coffee")
    assert store.get(ADA, "coffee") is None
    assert store.get(ADA, "editor") is not None and store.get(BOB, "editor") is not None
    assert "coffee" not in {i.key for i in store.search(ADA)}
    store.delete(ADA, "never-written")  # deleting what is not there is no error


def test_search_with_a_query_ranks_the_relevant_item_first(store: BaseStore) -> None:
    fill(store)
    hits = store.search(ADA, query="which editor does Ada write code in?", limit=3)
    assert hits[0].key == "editor" and hits[0].namespace == ADA
    assert all(h.namespace == ADA for h in hits)
    assert hits[0].score is not None


def test_search_is_scoped_by_namespace_prefix(store: BaseStore) -> None:
    fill(store)
    assert {(i.namespace, i.key) for i in store.search(ADA)} == {(ADA, k) for k in FACTS}
    under = {(i.namespace, i.key) for i in store.search(("memories",), limit=10)}
    assert under == {(ADA, k) for k in FACTS} | {(BOB, "editor")}
    assert len(store.search((), limit=10)) == 5
    assert store.search(("nobody",)) == []


def test_search_pages_with_limit_and_offset(store: BaseStore) -> None:
    fill(store)
    first, rest = store.search(ADA, limit=2), store.search(ADA, limit=10, offset=2)
    assert len(first) == 2 and len(rest) == 1
    assert {i.key for i in first + rest} == set(FACTS)
    assert store.search(ADA, limit=0) == [] and store.search(ADA, query="espresso", limit=0) == []


def test_search_filters_on_value_fields(store: BaseStore) -> None:
    fill(store)
    infra = ("projects",)
    assert [i.key for i in store.search(infra, filter={"engine": "postgres"})] == ["db"]
    assert [i.key for i in store.search(infra, filter={"version": {"$gte": 16}})] == ["db"]
    assert store.search(infra, filter={"version": {"$lt": 16}}) == []
    assert store.search(infra, filter={"engine": "mysql"}) == []


def test_list_namespaces_with_prefix_suffix_and_depth(store: BaseStore) -> None:
    fill(store)
    assert store.list_namespaces() == sorted([ADA, BOB, ("projects", "shop", "infra")])
    assert store.list_namespaces(prefix=("memories",)) == [ADA, BOB]
    assert store.list_namespaces(suffix=("bob",)) == [BOB]
    assert store.list_namespaces(prefix=("*", "shop")) == [("projects", "shop", "infra")]
    assert store.list_namespaces(max_depth=1) == [("memories",), ("projects",)]
    assert store.list_namespaces(limit=1, offset=1) == [BOB]


def test_batch_answers_each_operation_with_its_result(store: BaseStore) -> None:
    from langgraph.store.base import GetOp, ListNamespacesOp, PutOp, SearchOp

    assert store.batch([PutOp(ADA, "editor", FACTS["editor"]), PutOp(BOB, "editor", {"content": "Emacs"})]) == [
        None,
        None,
    ]
    results = store.batch([GetOp(ADA, "editor"), SearchOp(ADA, limit=5), ListNamespacesOp(), GetOp(ADA, "nothing")])
    assert results[0].value == FACTS["editor"]  # type: ignore[union-attr]
    assert [i.key for i in results[1]] == ["editor"]  # type: ignore[union-attr]
    assert results[2] == [ADA, BOB] and results[3] is None


def test_async_methods_match_the_sync_ones(store: BaseStore) -> None:
    async def run() -> tuple[Any, ...]:
        await store.aput(ADA, "coffee", FACTS["coffee"])
        got = await store.aget(ADA, "coffee")
        found = await store.asearch(ADA, query="espresso")
        spaces = await store.alist_namespaces()
        await store.adelete(ADA, "coffee")
        return got, found, spaces, await store.aget(ADA, "coffee")

    got, found, spaces, gone = asyncio.run(run())
    assert got.value == FACTS["coffee"] and [i.key for i in found] == ["coffee"]
    assert spaces == [ADA] and gone is None


@pytest.mark.parametrize("namespace", [("a.b",), ("",), ("langgraph", "x")])
def test_invalid_namespaces_are_refused(store: BaseStore, namespace: tuple[str, ...]) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.put(namespace, "k", {"content": "x"})


# -- what agentmem adds


@pytest.mark.parametrize("label", ["bob ", " bob", "bob\t", "bob\u3000", "bo\x85b", "bo\u2028b"])
@pytest.mark.parametrize("way", ["in-process", "http-routes"])
def test_namespaces_that_differ_only_by_blanks_are_refused(memory: Memory, way: str, label: str) -> None:
    """Issue 34, finding 5: project names are trimmed, so ("users", "bob ") would write into
    ("users", "bob")'s project; every operation on such a label is refused, and nothing written."""
    with TestClient(create_app(load(env={"AGENTMEM_TOKENS": TOKENS}), mem=memory)) as app:
        store: BaseStore = AgentMemStore(memory) if way == "in-process" else AgentMemStore(app_client(app, TOKEN))
        store.put(("users", "bob"), "editor", {"content": "Bob edits in Emacs"})
        before = memory.stats().versions
        for op in (
            lambda: store.put(("users", label), "editor", {"content": "Bob edits in Vim"}),
            lambda: store.get(("users", label), "editor"),
            lambda: store.search(("users", label), query="editor"),
            lambda: store.delete(("users", label), "editor"),
            lambda: store.list_namespaces(prefix=("users", label)),
        ):
            with pytest.raises(InvalidNamespaceError, match="namespace label"):
                op()
        assert memory.stats().versions == before
        assert [i.value for i in store.search(("users", "bob"), query="editor")] == [{"content": "Bob edits in Emacs"}]


def test_a_replacement_under_another_key_supersedes_the_old_fact(memory: Memory) -> None:
    store = AgentMemStore(memory)
    store.put(("shop",), "port-1", {"content": "The dev server runs on port 3000."})
    store.put(("shop",), "port-2", {"content": "The dev server is on port 4000 now."})
    assert store.get(("shop",), "port-1") is None  # replaced: no longer current
    assert [i.value["content"] for i in store.search(("shop",), query="dev server port")] == [
        "The dev server is on port 4000 now."
    ]
    (current,) = memory.recall("dev server port", project="shop")
    assert [v.content for v in memory.history(current.memory.id)] == [
        "The dev server runs on port 3000.",
        "The dev server is on port 4000 now.",
    ]


def test_the_same_value_again_reinforces(memory: Memory) -> None:
    store = AgentMemStore(memory, agent="assistant")
    store.put(ADA, "coffee", FACTS["coffee"])
    store.put(ADA, "coffee", FACTS["coffee"])
    (m,) = memory.list_versions(projects=["memories.ada"])[0]
    assert (m.reinforcements, m.version, m.agent, m.source_ref) == (1, 1, "assistant", "coffee")


def test_kind_and_tier_in_a_value_become_the_memorys(memory: Memory) -> None:
    store = AgentMemStore(memory)
    store.put(ADA, "tone", {"content": "Ada prefers short answers", "kind": "preference"})
    store.put(ADA, "editor", FACTS["editor"])
    (m,) = memory.list_versions(projects=["memories.ada"], kinds=["preference"])[0]
    assert m.source_ref == "tone"
    assert [i.key for i in store.search(ADA, query="Ada", filter={"kind": "preference"})] == ["tone"]
    assert [i.key for i in store.search(ADA, filter={"kind": "fact"})] == ["editor"]


@pytest.mark.parametrize(
    "value",
    [
        {"content": "plain text"},
        {"content": '{"looks": "like json"}'},
        {"content": "  padded  "},
        {"content": ""},
        {"content": "text", "tags": ["a", "b"]},
        {"nested": {"deep": [1, 2.5, None, True]}, "unicode": "Zürich ✓"},
    ],
)
def test_values_round_trip_through_memory_text(value: dict[str, Any]) -> None:
    assert decode(content_of(value)) == value


# -- a real graph


def test_a_langgraph_graph_writes_a_fact_then_its_replacement_then_recalls(memory: Memory) -> None:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph
    from langgraph.runtime import Runtime

    class State(TypedDict):
        user: str
        said: list[str]
        recalled: list[str]

    def remember(state: State, runtime: Runtime[None]) -> dict[str, Any]:
        assert runtime.store is not None
        for n, text in enumerate(state["said"]):
            runtime.store.put(("memories", state["user"]), f"note-{n}", {"content": text})
        return {}

    def recall(state: State, runtime: Runtime[None]) -> dict[str, Any]:
        assert runtime.store is not None
        hits = runtime.store.search(("memories", state["user"]), query="dev server port", limit=3)
        return {"recalled": [h.value["content"] for h in hits]}

    graph = StateGraph(State)
    graph.add_node("remember", remember)
    graph.add_node("recall", recall)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "recall")
    graph.add_edge("recall", END)
    app = graph.compile(store=AgentMemStore(memory))

    said = ["The dev server runs on port 3000.", "The dev server is on port 4000 now."]
    out = app.invoke({"user": "ada", "said": said, "recalled": []})
    assert out["recalled"] == ["The dev server is on port 4000 now."]


def test_the_readme_agent_writes_a_fact_and_its_replacement_and_recalls(memory: Memory) -> None:
    """The README's example: LangChain's create_agent (create_react_agent's successor) with
    store=AgentMemStore, its tools reaching the store through ToolRuntime; a scripted chat model."""
    if ToolRuntime is None:
        pytest.skip("langchain is not installed")
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, ToolMessage

    class Scripted(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Scripted:  # type: ignore[override]
            return self  # the script already says which tool to call

    def save_fact(fact: str, runtime: ToolRuntime) -> str:
        """Remember a durable fact about the user's project."""
        assert runtime.store is not None
        runtime.store.put(("memories", "ada"), f"fact-{abs(hash(fact))}", {"content": fact})
        return "saved"

    def search_facts(query: str, runtime: ToolRuntime) -> list[str]:
        """The user's current facts that best answer the query."""
        assert runtime.store is not None
        return [i.value["content"] for i in runtime.store.search(("memories", "ada"), query=query, limit=5)]

    def call(n: int, tool: str, **args: str) -> AIMessage:
        return AIMessage(content="", tool_calls=[{"name": tool, "args": args, "id": f"call-{n}"}])

    script = [
        call(1, "save_fact", fact="The dev server runs on port 3000."),
        call(2, "save_fact", fact="The dev server is on port 4000 now."),
        call(3, "search_facts", query="dev server port"),
        AIMessage(content="It is on port 4000."),
    ]
    agent = create_agent(Scripted(messages=iter(script)), tools=[save_fact, search_facts], store=AgentMemStore(memory))
    out = agent.invoke({"messages": [{"role": "user", "content": "the dev server moved; where is it now?"}]})
    found = [m.content for m in out["messages"] if isinstance(m, ToolMessage) and m.name == "search_facts"]
    assert found == ['["The dev server is on port 4000 now."]']
