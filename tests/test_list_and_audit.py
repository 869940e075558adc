"""Listing versions and reading the audit log: each declared once (`ListRequest`, `AuditRequest`)
and the same on every surface: in process, over HTTP through the Client, the routes, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentmem import Memory, NewMemory
from agentmem.cli import main
from agentmem.client import Client
from agentmem.operations import AuditRequest, ListRequest, query_names
from servers import TOKEN, Server


def _fill(mem: Memory | Client) -> int:
    """A superseded version in project shop: its id."""
    old = mem.remember(NewMemory(content="The API listens on port 8080", key="api.port", project="shop")).memory.id
    mem.remember(NewMemory(content="The API listens on port 4000", key="api.port", project="shop"))
    return old


def _same_on(mem: Memory | Client, old: int) -> None:
    current, _ = mem.list_versions(projects=["shop"])
    assert [m.content for m in current][:1] == ["The API listens on port 4000"]
    both, _ = mem.list_versions(projects=["shop"], status=["active", "superseded"], latest_only=False)
    assert old in {m.id for m in both}
    assert {m.id for m in mem.list_versions(status="all", latest_only=False)[0]} >= {m.id for m in both}
    first, cursor = mem.list_versions(projects=["shop"], status=None, latest_only=False, limit=1)
    assert len(first) == 1 and cursor == first[0].id
    rest, _ = mem.list_versions(projects=["shop"], status=None, latest_only=False, before_id=cursor)
    assert all(m.id < cursor for m in rest)
    assert mem.list_versions(projects=[]) == ([], None)
    entries, _ = mem.audit(projects=["shop"], actions=["supersede"], memory_id=old)
    assert [e.action for e in entries] == ["supersede"]
    assert mem.audit(since="2999-01-01T00:00:00Z")[0] == []


def test_in_process_and_through_the_client_alike(tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    with Memory(tmp_path / "d", embedder=embedder) as mem:
        old = _fill(mem)
        _same_on(mem, old)
    server = Server(tmp_path / "served")
    try:
        server.start()
        with Client(server.url, token=TOKEN) as c:
            old = _fill(c)
            _same_on(c, old)
    finally:
        server.close()


def test_the_routes_take_the_requests_fields_and_say_what_is_wrong(tmp_path: Path) -> None:
    import httpx

    server = Server(tmp_path / "served")
    try:
        server.start()
        auth = {"authorization": f"Bearer {TOKEN}"}
        schema = httpx.get(f"{server.url}/docs/openapi.json", headers=auth).json()["paths"]
        for path, request in (("/v1/memories", ListRequest), ("/v1/audit", AuditRequest)):
            params = {p["name"]: p for p in schema[path]["get"]["parameters"] if p["in"] == "query"}
            assert list(params) == query_names(request) and all(p.get("description") for p in params.values())
        cases = [
            ("/v1/memories", {"limit": "0"}, "limit"),
            ("/v1/memories", {"limit": "5000"}, "limit"),
            ("/v1/memories", {"cursor": "0"}, "cursor"),
            ("/v1/memories", {"cursor": "abc"}, "cursor"),
            ("/v1/memories", {"status": "gone"}, "status"),
            ("/v1/memories", {"latest_only": "maybe"}, "latest_only"),
            ("/v1/audit", {"memory_id": "0"}, "memory_id"),
            ("/v1/audit", {"since": "yesterday"}, "since"),
            ("/v1/audit", {"action": "nap"}, "action"),
        ]
        for path, params, named in cases:
            r = httpx.get(f"{server.url}{path}", params=params, headers=auth)
            assert r.status_code == 400 and named in r.json()["error"]["message"], (path, params, r.text)
    finally:
        server.close()


@pytest.fixture
def run(tmp_path: Path, embedder, capsys):  # type: ignore[no-untyped-def]
    def _run(*argv: str) -> tuple[int, str]:
        code = main(["--data-dir", str(tmp_path / "d"), *argv], open_memory=lambda p: Memory(p, embedder=embedder))
        return code, capsys.readouterr().out

    return _run


def test_the_cli_lists_and_reads_the_audit_log_with_the_requests_flags(run, tmp_path: Path, embedder) -> None:  # type: ignore[no-untyped-def]
    with Memory(tmp_path / "d", embedder=embedder) as mem:
        old = _fill(mem)
    code, out = run("--json", "list", "--project", "shop")
    assert code == 0 and [m["content"] for m in json.loads(out)][:1] == ["The API listens on port 4000"]
    code, out = run("--json", "list", "--status", "superseded", "--all-versions")
    assert code == 0 and [m["id"] for m in json.loads(out)] == [old]
    code, out = run("--json", "audit", "--memory", str(old), "--action", "supersede")  # --memory: --memory-id
    assert code == 0 and [e["action"] for e in json.loads(out)] == ["supersede"]
    code, out = run("archived", "--project", "shop")
    assert code == 0 and out.strip() == "no archived memories"
