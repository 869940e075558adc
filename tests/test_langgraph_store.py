"""agentmem as a LangGraph BaseStore, what agentmem adds to LangGraph's contract (the contract itself
is tests/test_langgraph_conformance.py): namespaces agentmem cannot keep, keys against agentmem's
own supersession, kind and tier, how a value is kept as memory text; then a real LangGraph graph
and the README's agent, each writing a fact and its replacement and recalling."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langgraph")

from langgraph.store.base import BaseStore, InvalidNamespaceError  # noqa: E402
from litestar.testing import TestClient  # noqa: E402

from agentmem import Memory  # noqa: E402
from agentmem.integrations.langgraph import AgentMemStore  # noqa: E402
from agentmem.integrations.langgraph_values import Stored, content_of, stored_of  # noqa: E402
from api.app import create_app  # noqa: E402
from api.settings import load  # noqa: E402
from servers import app_client  # noqa: E402

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


def test_a_put_never_meets_a_memory_filed_under_another_key_or_none(memory: Memory) -> None:
    """A key is an identity: agentmem's supersession by similarity never crosses it, either way."""
    store = AgentMemStore(memory)
    memory.remember("The dev server runs on port 3000.", project="shop")  # no key: written elsewhere
    store.put(("shop",), "port", {"content": "The dev server is on port 4000 now."})
    memory.remember("The dev server is on port 5000 now.", project="shop")  # no key: replaces only the keyless one
    memory.remember("The dev server is on port 4000 now.", project="shop")  # the item's text, no key: not the item
    current = {m.key: m for m in memory.list_versions(projects=["shop"])[0]}
    assert set(current) == {None, "port"}
    assert [v.content for v in memory.history(current[None].id)] == [
        "The dev server runs on port 3000.",
        "The dev server is on port 5000 now.",
        "The dev server is on port 4000 now.",
    ]
    assert (current["port"].version, current["port"].reinforcements) == (1, 0)
    assert store.get(("shop",), "port").value == {"content": "The dev server is on port 4000 now."}  # type: ignore[union-attr]


def test_the_same_value_again_reinforces(memory: Memory) -> None:
    store = AgentMemStore(memory, agent="assistant")
    store.put(ADA, "coffee", FACTS["coffee"])
    store.put(ADA, "coffee", FACTS["coffee"])
    (m,) = memory.list_versions(projects=["memories.ada"])[0]
    assert (m.reinforcements, m.version, m.agent, m.key, m.source_ref) == (1, 1, "assistant", "coffee", "coffee")


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
@pytest.mark.parametrize(("index", "ttl"), [(None, None), (False, None), (["a.b", "c[*]"], 2.5)])
def test_values_round_trip_through_memory_text(value: dict[str, Any], index: Any, ttl: float | None) -> None:
    assert stored_of(content_of(value, index, ttl)) == Stored(value, index, ttl)


def test_a_plain_text_value_is_the_memory_text_itself() -> None:
    assert content_of({"content": "We use Postgres 16"}) == "We use Postgres 16"
    assert stored_of("a memory written elsewhere") == Stored({"content": "a memory written elsewhere"})


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
        for text in state["said"]:  # the same topic, so the same key: the later put replaces the item
            runtime.store.put(("memories", state["user"]), "dev-server-port", {"content": text})
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

    def save_fact(topic: str, fact: str, runtime: ToolRuntime) -> str:
        """Remember a durable fact about the user's project; a new fact on a topic replaces the old one."""
        assert runtime.store is not None
        runtime.store.put(("memories", "ada"), topic, {"content": fact})
        return "saved"

    def search_facts(query: str, runtime: ToolRuntime) -> list[str]:
        """The user's current facts that best answer the query."""
        assert runtime.store is not None
        return [i.value["content"] for i in runtime.store.search(("memories", "ada"), query=query, limit=5)]

    def call(n: int, tool: str, **args: str) -> AIMessage:
        return AIMessage(content="", tool_calls=[{"name": tool, "args": args, "id": f"call-{n}"}])

    script = [
        call(1, "save_fact", topic="dev-server-port", fact="The dev server runs on port 3000."),
        call(2, "save_fact", topic="dev-server-port", fact="The dev server is on port 4000 now."),
        call(3, "search_facts", query="dev server port"),
        AIMessage(content="It is on port 4000."),
    ]
    agent = create_agent(Scripted(messages=iter(script)), tools=[save_fact, search_facts], store=AgentMemStore(memory))
    out = agent.invoke({"messages": [{"role": "user", "content": "the dev server moved; where is it now?"}]})
    found = [m.content for m in out["messages"] if isinstance(m, ToolMessage) and m.name == "search_facts"]
    assert found == ['["The dev server is on port 4000 now."]']
