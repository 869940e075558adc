"""The HTTP API through Litestar's TestClient: routes, errors, and the auth matrix."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient
from prometheus_client.parser import text_string_to_metric_families

from agentmem import Memory
from api.app import create_app
from api.settings import load

BACKENDS = ("duckdb", "postgres")  # tests taking `memory` run on both (see conftest.py)

TOKENS = {
    "read": "reader-secret-0000000001",
    "write": "writer-secret-0000000002",
    "admin": "admin-secret-00000000003",
    "wrong": "other-project-secret-0004",
}
ENV = {
    "AGENTMEM_TOKENS": ";".join(
        [
            f"r:{TOKENS['read']}:read:shop",
            f"w:{TOKENS['write']}:write:shop",
            f"a:{TOKENS['admin']}:admin:*",
            f"o:{TOKENS['wrong']}:write:other",
        ]
    ),
    "AGENTMEM_MAX_BODY_BYTES": "20000",
    "AGENTMEM_INGEST_ROOTS": f"{Path(__file__).parent.parent / 'api' / 'routes'}=shop",
}


def auth(who: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[who]}"} if who else {}


@pytest.fixture
def client(memory: Memory) -> Iterator[TestClient]:  # type: ignore[type-arg]
    with TestClient(create_app(load(env=ENV), mem=memory)) as c:
        yield c


def remember(client: TestClient, content: str, who: str = "write", **fields: Any) -> Any:  # type: ignore[type-arg]
    r = client.post("/v1/memories", json={"content": content, **fields}, headers=auth(who))
    assert r.status_code in (200, 201), r.text
    return r.json()


def test_remember_reinforce_supersede(client: TestClient) -> None:  # type: ignore[type-arg]
    r = client.post(
        "/v1/memories", json={"content": "The API listens on port 8080", "key": "port"}, headers=auth("write")
    )
    assert r.status_code == 201 and r.json()["outcome"] == "created" and r.json()["memory"]["project"] == "shop"
    r = client.post(
        "/v1/memories", json={"content": "the API listens on port 8080", "key": "port"}, headers=auth("write")
    )
    assert r.status_code == 200 and r.json()["outcome"] == "reinforced"
    r = client.post("/v1/memories", json={"content": "We're on 4000 now", "key": "port"}, headers=auth("write"))
    body = r.json()
    assert r.status_code == 201 and body["outcome"] == "superseded" and body["superseded_id"] == 1
    assert body["reason"] == "key"
    hist = client.get(f"/v1/memories/{body['memory']['id']}/history", headers=auth("read")).json()
    assert [v["status"] for v in hist] == ["superseded", "active"] and hist[0]["superseded_by"] == body["memory"]["id"]
    hits = client.post("/v1/recall", json={"query": "API port", "include_history": True}, headers=auth("read")).json()
    assert [h["memory"]["content"] for h in hits["hits"]] == ["We're on 4000 now"]
    assert [v["id"] for v in hits["history"][str(hits["hits"][0]["memory"]["lineage_id"])]] == [1, 2]


def test_near_duplicates_listed(client: TestClient) -> None:  # type: ignore[type-arg]
    remember(client, "The deploy pipeline runs on GitHub Actions every night")
    body = remember(client, "The test pipeline runs on Jenkins every hour")
    assert body["outcome"] == "created" and body["near_duplicates"][0]["id"] == 1


def test_context_fits_budget(client: TestClient) -> None:  # type: ignore[type-arg]
    owners = ["Alice", "Bob", "Carol", "Dan", "Eve", "Frank", "Grace", "Heidi"]
    things = ["invoices", "refunds", "retries", "exports", "audits", "alerts", "ledgers", "payouts"]
    for who, what in zip(owners, things, strict=True):
        remember(client, f"{who} owns the billing queue for {what}")
    r = client.post(
        "/v1/context", json={"query": "billing queue", "max_memories": 5, "token_budget": 60}, headers=auth("read")
    )
    ctx = r.json()
    assert r.status_code == 200 and 1 <= len(ctx["memory_ids"]) <= 5 and ctx["tokens"] <= 60
    assert ctx["text"].startswith("Relevant memories:") and ctx["dropped"] >= 3


def test_list_with_cursor(client: TestClient) -> None:  # type: ignore[type-arg]
    for i in range(7):
        remember(
            client, f"Distinct fact {i} about the {['red', 'blue', 'green', 'tan', 'gold', 'pink', 'gray'][i]} team"
        )
    seen, cursor = [], None
    while True:
        params: dict[str, Any] = {"limit": 3, **({"cursor": cursor} if cursor else {})}
        page = client.get("/v1/memories", params=params, headers=auth("read")).json()
        seen += [m["id"] for m in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [7, 6, 5, 4, 3, 2, 1]


def test_observations_batch_all_or_nothing(client: TestClient, memory: Memory) -> None:  # type: ignore[type-arg]
    good = {"content": "ran pytest: 3 failed", "tool": "pytest", "session": "s1"}
    r = client.post("/v1/observations", json={"observations": [good, good]}, headers=auth("write"))
    assert r.status_code == 201 and len(r.json()["ids"]) == 2
    before = memory.stats().versions
    r = client.post("/v1/observations", json={"observations": [good, {"content": ""}]}, headers=auth("write"))
    assert r.status_code == 400 and "observation 1" in r.json()["error"]["message"]
    assert memory.stats().versions == before
    assert memory.get(r_ids := 1).tier == "working" and r_ids == 1


def test_export_import_over_http(client: TestClient, tmp_path, embedder) -> None:  # type: ignore[no-untyped-def]
    remember(client, "The API listens on port 8080", key="port")
    remember(client, "We're on 4000 now", key="port")
    remember(client, "A fact of another project", who="wrong")
    r = client.get("/v1/export", headers=auth("read"))
    lines = r.text.splitlines()
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
    rows = [json.loads(x) for x in lines[1:]]
    assert {x["memory"]["project"] for x in rows if "memory" in x} == {"shop"}  # never another project's
    assert all(x["audit"]["project"] == "shop" for x in rows if "audit" in x)
    with Memory(tmp_path / "other", embedder=embedder) as other:
        with TestClient(create_app(load(env=ENV), mem=other)) as c2:
            r = c2.post("/v1/import", content="\n".join(lines).encode(), headers=auth("write"))
            assert r.status_code == 201 and r.json() == {"imported": 2}
            assert c2.post("/v1/check", headers=auth("admin")).json()["indexes"][0]["missing"] == []
            r = c2.post("/v1/import", content="\n".join(lines).encode(), headers=auth("write"))
            assert r.status_code == 409 and r.json()["error"]["code"] == "conflict"
            r = c2.post("/v1/import", content="\n".join(lines).encode(), headers=auth("wrong"))
            assert r.status_code == 403


def test_online_rebuild_is_audited_as_its_token(client: TestClient) -> None:  # type: ignore[type-arg]
    import time

    for i in range(5):
        remember(client, f"rebuild fact {i} for the {i}th shard")
    r = client.post("/v1/rebuild", headers=auth("admin"))
    assert r.status_code == 202 and r.json()["state"] in ("running", "done")
    deadline = time.time() + 120  # generous: CI machines are shared and slow at times
    while time.time() < deadline:
        status = client.get("/v1/rebuild", headers=auth("admin")).json()
        if status["state"] != "running":
            break
        time.sleep(0.05)
    assert status["state"] == "done", status
    assert client.get("/ready").json()["ready"] is True
    audit = client.get("/v1/audit", params={"action": "rebuild"}, headers=auth("admin")).json()["items"]
    assert [(e["action"], e["actor"]) for e in audit] == [("rebuild", "a")]  # the admin token's name, not "local"
    assert client.post("/v1/recall", json={"query": "rebuild fact shard"}, headers=auth("read")).json()["hits"]


def test_metrics(client: TestClient) -> None:  # type: ignore[type-arg]
    remember(client, "one")
    client.post("/v1/recall", json={"query": "one"}, headers=auth("read"))
    text = client.get("/metrics", headers=auth("admin")).text  # of every project: the whole service's
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(text) for s in family.samples}  # fmt: skip
    assert samples[("agentmem_requests_total", (("method", "POST"), ("route", "/v1/memories"), ("status", "201")))] == 1
    assert samples[("agentmem_request_seconds_count", (("method", "POST"), ("route", "/v1/recall")))] == 1
    assert (
        samples[("agentmem_request_seconds_bucket", (("le", "+Inf"), ("method", "POST"), ("route", "/v1/recall")))] == 1
    )
    assert samples[("agentmem_bm25_documents", ())] == 1 and samples[("agentmem_outbox_lag", ())] == 0
    assert "# TYPE agentmem_request_seconds histogram" in text


def test_openapi_lists_every_route(client: TestClient) -> None:  # type: ignore[type-arg]
    spec = client.get("/docs/openapi.json").json()
    routes = {(m.upper(), p) for p, ops in spec["paths"].items() for m in ops}
    app_routes = {
        (m, r.path_format if hasattr(r, "path_format") else r.path)
        for r in client.app.routes
        for m in getattr(r, "methods", [])
        if m not in ("HEAD", "OPTIONS")
    }
    ours = {x for x in app_routes if not x[1].startswith("/docs")}
    assert ours <= routes
    assert client.get("/docs/").status_code == 200


# -- bad input ---------------------------------------------------------------------------------

BAD = [
    ("invalid JSON", "POST", "/v1/memories", b"{nope", 400, "invalid_input"),
    ("wrong type", "POST", "/v1/memories", {"content": ["a"]}, 400, "invalid_input"),
    ("unknown field", "POST", "/v1/memories", {"content": "a", "colour": "red"}, 400, "invalid_input"),
    ("empty content", "POST", "/v1/memories", {"content": " "}, 400, "invalid_input"),
    ("unknown kind", "POST", "/v1/memories", {"content": "a", "kind": "gossip"}, 400, "invalid_input"),
    ("oversize body", "POST", "/v1/memories", {"content": "x" * 30000}, 413, "too_large"),
    ("k out of range", "POST", "/v1/recall", {"query": "a", "k": 0}, 400, "invalid_input"),
    ("k huge", "POST", "/v1/recall", {"query": "a", "k": 10**12}, 400, "invalid_input"),
    ("budget out of range", "POST", "/v1/context", {"query": "a", "token_budget": 1}, 400, "invalid_input"),
    ("bad as_of", "POST", "/v1/recall", {"query": "a", "as_of": "soon"}, 400, "invalid_input"),
    ("unknown id", "GET", "/v1/memories/424242", None, 404, "not_found"),
    ("unknown id history", "GET", "/v1/memories/424242/history", None, 404, "not_found"),
    ("other project named", "POST", "/v1/recall", {"query": "a", "project": "other"}, 403, "forbidden"),
    (
        "nested JSON",
        "POST",
        "/v1/memories",
        {"content": "a", "triple": {"subject": {"a": {"b": [[[1]]]}}}},
        400,
        "invalid_input",
    ),
    ("NUL byte", "POST", "/v1/memories", {"content": "a\u0000b"}, 400, "invalid_input"),
    ("empty batch", "POST", "/v1/observations", {"observations": []}, 400, "invalid_input"),
]


@pytest.mark.parametrize(("method", "path", "body", "status", "code"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_gets_a_clear_error_and_writes_nothing(client, memory, method, path, body, status, code) -> None:  # type: ignore[no-untyped-def]
    before = memory.stats()
    kw: dict[str, Any] = {"content": body} if isinstance(body, bytes) else ({"json": body} if body is not None else {})
    if isinstance(body, bytes):
        kw["headers"] = {**auth("write"), "content-type": "application/json"}
    else:
        kw["headers"] = auth("write")
    r = client.request(method, path, **kw)
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert err["code"] == code and err["message"]
    assert memory.stats() == before


def test_no_token_is_401(client: TestClient) -> None:  # type: ignore[type-arg]
    r = client.post("/v1/recall", json={"query": "a"})
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
    r = client.post("/v1/recall", json={"query": "a"}, headers={"Authorization": "Bearer not-a-real-token-at-all"})
    assert r.status_code == 401


# -- isolation ---------------------------------------------------------------------------------


def test_search_never_crosses_projects_whatever_the_body_says(client: TestClient) -> None:  # type: ignore[type-arg]
    """agentmemory's search once ignored isolation; this is the test that would have caught it."""
    remember(client, "The shop secret is the blue door", who="write")
    remember(client, "The other project's secret is the red door", who="wrong")
    for body in ({"query": "secret door"}, {"query": "secret door", "project": "shop"}):
        hits = client.post("/v1/recall", json=body, headers=auth("wrong")).json()
        if "hits" in hits:
            assert {h["memory"]["project"] for h in hits["hits"]} == {"other"}
    r = client.post("/v1/recall", json={"query": "secret door", "project": "shop"}, headers=auth("wrong"))
    assert r.status_code == 403
    mine = client.post("/v1/recall", json={"query": "secret door"}, headers=auth("read")).json()["hits"]
    assert [h["memory"]["project"] for h in mine] == ["shop"]
    assert client.get("/v1/memories", params={"project": "other"}, headers=auth("read")).status_code == 403
    assert client.get("/v1/memories/2", headers=auth("read")).status_code == 404
    assert client.get("/v1/memories/2/history", headers=auth("read")).status_code == 404
    asof = {"query": "secret door", "as_of": "2100-01-01T00:00:00Z", "project": "other"}
    assert client.post("/v1/recall", json=asof, headers=auth("read")).status_code == 403
    assert client.get("/v1/stats", headers=auth("wrong")).json()["versions"] == 1
    asof_mine = {"query": "secret door", "as_of": "2100-01-01T00:00:00Z"}
    hits = client.post("/v1/recall", json=asof_mine, headers=auth("wrong")).json()["hits"]
    assert [h["memory"]["project"] for h in hits] == ["other"]  # as_of never reaches another project
    exported = client.get("/v1/export", headers=auth("wrong")).text
    assert "blue door" not in exported and "red door" in exported
    assert client.get("/v1/audit", params={"project": "shop"}, headers=auth("wrong")).status_code == 403
    assert client.get("/v1/memories/1/provenance", headers=auth("wrong")).status_code == 404
    assert client.post("/v1/consolidate", json={"projects": ["shop"]}, headers=auth("wrong")).status_code == 403


# -- the auth matrix ---------------------------------------------------------------------------


def _import_body(n: int) -> bytes:
    header = {"type": "header", "format": "agentmem-export", "format_version": 1, "schema_version": 1,
              "model": "fake-hash-64", "dim": 64, "exported_at": "2026-01-01T00:00:00Z"}  # fmt: skip
    t = "2026-01-01T00:00:00Z"
    mem = {"type": "memory", "memory": {
        "id": 1000 + n, "lineage_id": 1000 + n, "version": 1, "parent_id": None, "is_latest": True, "status": "active",
        "content": f"imported fact {n}", "tier": "semantic", "kind": "fact", "project": "shop", "source": "import",
        "salience": 0.5, "confidence": 0.7, "created_at": t, "valid_from": t, "last_reinforced_at": t}}  # fmt: skip
    return (json.dumps(header) + "\n" + json.dumps(mem) + "\n").encode()


# (method, path, body, least role, what a writer of another project gets)
SMALL_TREE = str(Path(__file__).parent.parent / "api" / "routes")
ROUTES: list[tuple[str, str, Any, str | None, int]] = [
    ("GET", "/health", None, None, 200),
    ("GET", "/ready", None, None, 200),
    ("POST", "/v1/memories", {"content": "matrix write", "project": "shop"}, "write", 403),
    ("POST", "/v1/observations", {"observations": [{"content": "saw it", "project": "shop"}]}, "write", 403),
    ("GET", "/v1/memories/1", None, "read", 404),
    ("GET", "/v1/memories/1/history", None, "read", 404),
    ("POST", "/v1/memories/1/versions", {"content": "matrix revision"}, "write", 404),
    ("GET", "/v1/memories?project=shop", None, "read", 403),
    ("POST", "/v1/recall", {"query": "seed", "project": "shop"}, "read", 403),
    ("POST", "/v1/context", {"query": "seed", "project": "shop"}, "read", 403),
    ("GET", "/v1/export?project=shop", None, "read", 403),
    ("POST", "/v1/import", "IMPORT", "write", 403),
    ("GET", "/v1/stats", None, "read", 200),
    ("POST", "/v1/check", None, "admin", 403),
    ("POST", "/v1/rebuild", None, "admin", 403),
    ("GET", "/v1/rebuild", None, "admin", 403),
    ("GET", "/metrics", None, "read", 200),
    ("GET", "/v1/memories/1/retention", None, "read", 404),
    ("POST", "/v1/memories/1/pin", {"pinned": True}, "write", 404),
    ("POST", "/v1/sweep", {"dry_run": True}, "admin", 403),
    ("POST", "/v1/delete", {"reason": "matrix", "project": "shop", "dry_run": True}, "admin", 403),
    ("GET", "/v1/audit?project=shop", None, "read", 403),
    ("GET", "/v1/memories/1/provenance", None, "read", 404),
    ("POST", "/v1/consolidate", {"projects": ["shop"]}, "write", 403),
    ("POST", "/v1/sessions/matrix/end", {"project": "shop"}, "write", 403),
    (
        "POST",
        "/v1/ingest/conversation",
        {"messages": [{"role": "user", "content": "I live in Oslo."}], "project": "shop", "dry_run": True},
        "write",
        403,
    ),
    ("POST", "/v1/ingest/notes", {"path": SMALL_TREE, "project": "shop", "dry_run": True}, "admin", 403),
    ("POST", "/v1/ingest/code", {"path": SMALL_TREE, "project": "shop", "dry_run": True}, "admin", 403),
]
LEVEL = {"read": 0, "write": 1, "admin": 2}


@pytest.mark.parametrize("who", [None, "wrong", "read", "write", "admin"])
@pytest.mark.parametrize(("method", "path", "body", "least", "wrong"), ROUTES, ids=[f"{r[0]} {r[1]}" for r in ROUTES])
def test_auth_matrix(client, method, path, body, least, wrong, who) -> None:  # type: ignore[no-untyped-def]
    remember(client, "seed memory for the matrix")
    obs = {"observations": [{"content": "seen in the matrix session", "session": "matrix"}]}
    assert client.post("/v1/observations", json=obs, headers=auth("write")).status_code == 201
    if least is None:
        expected = 200
    elif who is None:
        expected = 401
    elif who == "wrong":
        expected = wrong if least != "admin" else 403
    else:
        expected = 200 if LEVEL[who] >= LEVEL[least] else 403
    kw: dict[str, Any] = {"headers": auth(who)}
    if body == "IMPORT":
        kw["content"] = _import_body(LEVEL.get(who or "", 9))
    elif body is not None:
        kw["json"] = body
    r = client.request(method, path, **kw)
    got = r.status_code
    assert (200 <= got < 300) if expected == 200 else got == expected, (got, r.text)
    if got >= 400:
        assert r.json()["error"]["code"] and r.json()["error"]["message"]


def test_recall_marks_older_statements_and_ranks_superseded_versions_in(client: TestClient) -> None:  # type: ignore[type-arg]
    fly = remember(client, "We deploy the shop API on Fly.io")
    render = remember(client, "We're on Render now for the shop API")
    assert render["outcome"] == "superseded" and render["superseded_id"] == fly["memory"]["id"]
    body = {"query": "where do we deploy the shop API on Fly.io?", "k": 5}
    hits = client.post("/v1/recall", json=body, headers=auth("read")).json()["hits"]
    assert [h["memory"]["id"] for h in hits] == [render["memory"]["id"]]
    hits = client.post("/v1/recall", json={**body, "include_superseded": True}, headers=auth("read")).json()["hits"]
    assert [h["memory"]["id"] for h in hits] == [render["memory"]["id"], fly["memory"]["id"]]
    old = hits[1]["memory"]
    assert (old["status"], old["superseded_by"]) == ("superseded", render["memory"]["id"])
    assert old["supersede_reason"] == "moved"
    # two observations of one slot: the newer first, the older one names it
    turns = [
        {"content": "My highest score in Ticket to Ride is 124 points.", "at": "2026-01-02T10:00:00Z"},
        {"content": "I just got my highest score in Ticket to Ride - 132 points!", "at": "2026-01-20T10:00:00Z"},
    ]
    ids = client.post("/v1/observations", json={"observations": turns}, headers=auth("write")).json()["ids"]
    hits = client.post(
        "/v1/recall", json={"query": "What is my highest score in Ticket to Ride?", "k": 5}, headers=auth("read")
    ).json()["hits"]
    order = [(h.get("stated_in") or h["memory"])["id"] for h in hits]  # the turn each hit stands for
    assert order[0] == ids[1] and hits[0]["older_than"] is None  # the newer one first...
    assert hits[order.index(ids[0])]["older_than"] == hits[0]["memory"]["id"]  # ...the older one under the rest


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"include_superseded": "yes"}, "include_superseded"),
        ({"include_superseded": True, "as_of": "2026-01-01T00:00:00Z"}, "as_of"),
    ],
)
def test_recall_rejects_a_bad_include_superseded(client: TestClient, body: dict[str, Any], says: str) -> None:  # type: ignore[type-arg]
    r = client.post("/v1/recall", json={"query": "shop API", **body}, headers=auth("read"))
    assert r.status_code == 400 and says in r.text, r.text
