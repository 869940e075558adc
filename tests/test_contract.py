"""One contract, two implementations: Memory in process and Client over HTTP agree on every
MemoryAPI method, in signature and in what a caller sees."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from agentmem import Memory, MemoryAPI, NewMemory, NotFoundError, ValidationError
from agentmem.client import Client
from api.app import create_app
from api.settings import load
from servers import app_client
from tests.test_api import ENV, TOKENS

OPERATIONS = {
    "remember", "revise", "observe", "recall", "search", "context", "get", "history", "list_versions", "provenance",
    "stats", "check", "rebuild", "export_lines", "import_lines", "retention", "sweep", "restore", "pin",
    "delete", "audit", "consolidate", "end_session", "ingest_conversation", "ingest_notes", "ingest_code",
    "close",
}  # fmt: skip
APP_ENV = {**ENV, "AGENTMEM_SWEEP_EVERY_MINUTES": "0", "AGENTMEM_CONSOLIDATE_EVERY_MINUTES": "0"}


def protocol_methods() -> list[str]:
    return sorted(n for n, v in vars(MemoryAPI).items() if callable(v) and not n.startswith("_"))


def shape(fn: Any) -> list[tuple[str, str, str, str]]:
    """Each parameter's name, kind, default and annotation (evaluated, then written out), and the return's."""
    sig = inspect.signature(fn, eval_str=True)
    params = [
        (p.name, p.kind.name, repr(p.default), inspect.formatannotation(p.annotation))
        for p in sig.parameters.values()
    ]
    return [*params, ("return", "", "", inspect.formatannotation(sig.return_annotation))]


def test_the_protocol_covers_the_public_operations() -> None:
    assert set(protocol_methods()) == OPERATIONS


@pytest.mark.parametrize("impl", [Memory, Client], ids=["Memory", "Client"])
@pytest.mark.parametrize("name", protocol_methods())
def test_signatures_are_the_protocols(impl: type, name: str) -> None:
    assert shape(getattr(impl, name)) == shape(getattr(MemoryAPI, name))


def test_the_client_offers_nothing_outside_the_contract() -> None:
    public = {n for n, v in vars(Client).items() if callable(v) and not n.startswith("_")}
    assert public - OPERATIONS == {"health"}


# -- the same calls through both, over the real HTTP path -------------------------------------


@pytest.fixture
def app(memory: Memory) -> Iterator[TestClient]:  # type: ignore[type-arg]
    with TestClient(create_app(load(env=APP_ENV), mem=memory)) as c:
        yield c


def remote(app: TestClient, who: str = "admin") -> Client:  # type: ignore[type-arg]
    return app_client(app, TOKENS[who])


@pytest.fixture(params=["memory", "client"])
def api(request: pytest.FixtureRequest, memory: Memory, app: TestClient) -> MemoryAPI:  # type: ignore[type-arg]
    """Memory itself, or a Client with an all-projects admin token over the same Memory."""
    return memory if request.param == "memory" else remote(app)


def test_observe_returns_the_created_versions(api: MemoryAPI, memory: Memory) -> None:
    items = [
        NewMemory(content="ran pytest: 3 failed", project="shop", kind="observation", session="s1", title="pytest"),
        NewMemory(content="deploy started", project="shop", kind="event", tier="working", source="mcp"),
    ]
    created = api.observe(items)
    assert created == [memory.get(v.id) for v in created]
    assert [(v.kind, v.tier, v.title, v.session, v.source) for v in created] == [
        ("observation", "semantic", "pytest", "s1", "api"),
        ("event", "working", None, None, "mcp"),
    ]


def test_observations_reply_keeps_ids_beside_the_versions(app: TestClient) -> None:  # type: ignore[type-arg]
    body = {"observations": [{"content": "ran pytest", "project": "shop"}]}
    r = app.post("/v1/observations", json=body, headers={"Authorization": f"Bearer {TOKENS['write']}"})
    assert r.status_code == 201
    reply = r.json()
    assert reply["ids"] == [m["id"] for m in reply["memories"]] and reply["memories"][0]["tier"] == "working"


def test_an_observation_field_http_cannot_carry_is_refused(app: TestClient, memory: Memory) -> None:  # type: ignore[type-arg]
    item = NewMemory(content="ran pytest", project="shop", kind="observation", key="tests.status")
    with pytest.raises(ValidationError, match="observation 0: key cannot be sent"):
        remote(app).observe([item])
    assert memory.stats().versions == 0


def test_rebuild_rebuilds_what_was_asked(api: MemoryAPI, memory: Memory) -> None:
    memory.remember("The API listens on port 8080", project="shop")
    assert api.rebuild(["bm25"]).ok
    entries, _ = memory.audit(actions=["rebuild"])
    assert entries[0].details["indexes"] == ["bm25"]
    with pytest.raises(ValidationError):
        api.rebuild(["tantivy"])


def test_rebuild_over_http_records_the_token(app: TestClient, memory: Memory) -> None:  # type: ignore[type-arg]
    remote(app).rebuild(["vectors"])
    entries, _ = memory.audit(actions=["rebuild"])
    assert (entries[0].actor, entries[0].details["indexes"]) == ("a", ["vectors"])


@pytest.mark.parametrize("method", ["ingest_conversation", "ingest_notes", "ingest_code"])
def test_an_unknown_ingest_option_is_an_error(api: MemoryAPI, memory: Memory, tmp_path: Path, method: str) -> None:
    (tmp_path / "chat.jsonl").write_text('{"role": "user", "content": "I live in Oslo.", "id": "a"}\n')
    source = tmp_path / "chat.jsonl" if method == "ingest_conversation" else tmp_path
    with pytest.raises(TypeError, match="transcript"):
        getattr(api, method)(source, project="shop", transcript="x")
    assert memory.stats().versions == 0


def test_ingest_conversation_takes_the_same_options(api: MemoryAPI, tmp_path: Path) -> None:
    f = tmp_path / "chat.jsonl"
    f.write_text('{"role": "user", "content": "My favorite editor is vim.", "id": "a"}\n')
    dry = api.ingest_conversation(f, project="shop", session="s-9", dry_run=True, progress=True, actor="me")
    assert (dry.dry_run, dry.admitted, dry.outcomes) == (True, 1, {})
    done = api.ingest_conversation(f, project="shop", session="s-9")
    assert done.outcomes == {"created": 1} and done.admitted_items[0].ref == "s-9#a"


def test_list_versions_and_stats_filter_by_project(api: MemoryAPI, memory: Memory) -> None:
    memory.remember("The shop runs on Postgres", project="shop")
    memory.remember("The lab runs on DuckDB", project="lab")
    items, _ = api.list_versions(projects=["lab"])
    assert [m.content for m in items] == ["The lab runs on DuckDB"]
    assert api.list_versions(projects=[]) == ([], None)
    assert api.stats(["lab"]).versions == 1 and api.stats().versions == 2
    memory.sweep(threshold=1.0)  # everything fades: archived
    assert api.list_versions(projects=["lab"])[0] == []
    archived, _ = api.list_versions(projects=["lab"], status=None)
    assert [m.status for m in archived] == ["archived"]


def test_context_is_built_once_for_both(api: MemoryAPI, memory: Memory) -> None:
    for who, what in [("Alice", "invoices"), ("Bob", "refunds"), ("Carol", "retries")]:
        memory.remember(f"{who} owns the billing queue for {what}", project="shop")
    ctx = api.context("billing queue", project="shop", max_memories=2, token_budget=100)
    assert ctx == memory.context("billing queue", project="shop", max_memories=2, token_budget=100)
    assert len(ctx.memory_ids) == 2 and ctx.dropped == 1 and ctx.text.startswith("Relevant memories:")
    for bad in ({"max_memories": 0}, {"token_budget": 15}, {"max_memories": True}):
        with pytest.raises(ValidationError):
            api.context("billing queue", project="shop", **bad)


def test_delete_scope_narrows_what_may_go(api: MemoryAPI, memory: Memory) -> None:
    kept = memory.remember("The shop runs on Postgres", project="shop").memory
    with pytest.raises(NotFoundError):
        api.delete(reason="test: out of scope", ids=[kept.id], scope=["lab"], actor="me")
    assert memory.get(kept.id).status == "active"
    assert api.delete(reason="test: in scope", ids=[kept.id], scope=["shop"]).ids == [kept.id]


def test_remember_refuses_what_it_cannot_use(api: MemoryAPI) -> None:
    with pytest.raises(ValidationError, match="not both"):
        api.remember(NewMemory(content="x", project="shop"), key="k")
    with pytest.raises(ValidationError):
        api.remember("x", project="shop", colour="blue")
    assert api.remember("We use Postgres", project="shop", actor="me").outcome == "created"


def test_search_includes_history_for_both(api: MemoryAPI, memory: Memory) -> None:
    """`include_history` was once HTTP's alone (issue 37); it is an argument of search everywhere."""
    old = memory.remember("The API listens on port 8080", project="shop", key="api.port").memory
    new = memory.remember("The API listens on port 9090", project="shop", key="api.port").memory
    plain = api.search("API port", project="shop")
    found = api.search("API port", project="shop", include_history=True)
    assert plain.history == {}
    assert [v.id for v in found.history[str(new.lineage_id)]] == [old.id, new.id]


def test_pin_sweep_and_restore_take_the_same_arguments(api: MemoryAPI, memory: Memory) -> None:
    m = memory.remember("The shop runs on Postgres", project="shop").memory
    assert api.pin(m.id).pinned and not api.pin(m.id, False).pinned
    report = api.sweep(dry_run=True, projects=["shop"], threshold=1.0)
    assert report.dry_run and [i.id for i in report.items] == [m.id]
    api.sweep(projects=["shop"], threshold=1.0)
    assert api.restore(m.id, ttl_days=2).status == "active"
