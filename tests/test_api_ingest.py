"""Admission over HTTP: conversation ingestion (write role, the token's project), notes and code (admin)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from agentmem import Memory
from api.app import create_app
from api.settings import load
from servers import app_client
from tests.test_api import ENV, TOKENS, auth

MESSAGES = [
    {"role": "user", "content": "My favorite editor is vim. I ran the tests.", "id": "m1"},
    {"role": "tool", "content": "exit 0", "id": "m2"},
    {"role": "user", "content": "My favorite editor is emacs now.", "id": "m3", "time": "2026-01-02T00:00:00Z"},
]


@pytest.fixture
def client(memory: Memory, tmp_path: Path) -> Iterator[TestClient]:  # type: ignore[type-arg]
    env = {**ENV, "AGENTMEM_SWEEP_EVERY_MINUTES": "0", "AGENTMEM_INGEST_ROOTS": f"{tmp_path}=shop"}
    with TestClient(create_app(load(env=env), mem=memory)) as c:
        yield c


def ok(r: Any, status: int = 200) -> Any:
    assert r.status_code == status, r.text
    return r.json()


def test_conversation_over_http(client: TestClient, memory: Memory) -> None:  # type: ignore[type-arg]
    body = {"messages": MESSAGES, "session": "s-1", "dry_run": True}
    dry = ok(client.post("/v1/ingest/conversation", json=body, headers=auth("write")))
    assert (dry["admitted"], dry["rejected_by_reason"], dry["skipped"]) == (2, {"event": 1}, {"tool_message": 1})
    assert dry["rejected_items"][0]["ref"] == "s-1#m1" and memory.stats().versions == 0
    assert (dry["turns"], dry["claims"]) == ({"created": 2}, 1)  # what would be kept: "I ran the tests." a claim
    r = ok(client.post("/v1/ingest/conversation", json={**body, "dry_run": False}, headers=auth("write")))
    assert r["project"] == "shop" and r["outcomes"] == {"created": 1, "superseded": 1}
    assert (r["turns"], r["claims"]) == ({"created": 2}, 1)
    m = memory.get(r["admitted_items"][1]["memory_id"])
    assert (m.project, m.source, m.session, m.source_ref) == ("shop", "conversation", "s-1", "s-1#m3")
    [turn] = [memory.get(i) for i in m.source_ids]  # the typed memory is derived from its turn, kept whole
    assert (turn.kind, turn.content, turn.source_ref) == ("observation", MESSAGES[2]["content"], "s-1#m3")
    audit = ok(client.get("/v1/audit", params={"action": "ingest"}, headers=auth("read")))["items"]
    assert [(e["actor"], e["details"]["status"], e["details"]["dry_run"]) for e in audit] == [
        ("w", "completed", False),
        ("w", "completed", True),
    ]
    assert client.post("/v1/ingest/conversation", json=body, headers=auth("read")).status_code == 403
    other = {**body, "project": "shop"}
    assert client.post("/v1/ingest/conversation", json=other, headers=auth("wrong")).status_code == 403
    bad = client.post("/v1/ingest/conversation", json={"messages": [{"role": "user"}]}, headers=auth("write"))
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_input"
    extra = client.post("/v1/ingest/conversation", json={**body, "transcript": "x"}, headers=auth("write"))
    assert extra.status_code == 400


def test_notes_and_code_are_admin_only(client: TestClient, memory: Memory, tmp_path: Path) -> None:  # type: ignore[type-arg]
    (tmp_path / "n.md").write_text("# Decisions\n\n- Deploys happen on Fridays.\n")
    (tmp_path / "m.py").write_text('def f():\n    """Fetches the price list from the pricing service."""\n')
    body = {"path": str(tmp_path), "project": "shop"}
    assert client.post("/v1/ingest/notes", json=body, headers=auth("write")).status_code == 403
    r = ok(client.post("/v1/ingest/notes", json=body, headers=auth("admin")))
    assert r["admitted_items"][0]["ref"] == "n.md:3" and r["admitted_items"][0]["kind"] == "decision"
    r = ok(client.post("/v1/ingest/code", json=body, headers=auth("admin")))
    assert r["admitted_items"][0]["ref"] == "m.py:1"
    missing = client.post("/v1/ingest/code", json={**body, "path": str(tmp_path / "no")}, headers=auth("admin"))
    assert missing.status_code == 400 and "no such directory" in missing.json()["error"]["message"]
    entries, _ = memory.audit(actions=["ingest"])
    assert [e.details["status"] for e in entries] == ["failed", "completed", "completed"]


def test_client_ingests_a_file(client: TestClient, memory: Memory, tmp_path: Path) -> None:  # type: ignore[type-arg]
    f = tmp_path / "chat.jsonl"
    f.write_text('{"session": "s-2"}\n{"role": "user", "content": "I live in Oslo.", "id": "a"}\nnot json\n')
    c = app_client(client, TOKENS["write"])
    r = c.ingest_conversation(f, project=None)  # None: the token's one project
    assert r.admitted == 1 and r.skipped == {"malformed_message": 1}
    assert memory.get(r.admitted_items[0].memory_id or 0).source_ref == "s-2#a"


def test_notes_and_code_are_off_without_ingest_roots(memory: Memory, tmp_path: Path) -> None:
    (tmp_path / "n.md").write_text("# Decisions\n\n- Deploys happen on Fridays.\n")
    with TestClient(create_app(load(env=ENV | {"AGENTMEM_INGEST_ROOTS": ""}), mem=memory)) as c:
        for route in ("/v1/ingest/notes", "/v1/ingest/code"):
            r = c.post(route, json={"path": str(tmp_path), "project": "shop"}, headers=auth("admin"))
            assert r.status_code == 403 and "configure ingest_roots" in r.json()["error"]["message"]
