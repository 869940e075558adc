"""What one caller can cost or learn: capped ingest and bodies (settings, with a 4xx that says
which and nothing written), `/ready` details for a whole-service admin only, and a deadline for a
request's headers on the real server."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from litestar.testing import TestClient

from agentmem import Memory
from api.app import create_app
from api.settings import Settings, load
from servers import ROOT_TOKEN, TOKEN, Server
from tests.test_api import ENV, auth

USER = {"role": "user", "content": "My favorite editor is vim."}


@pytest.fixture
def client(memory: Memory) -> Iterator[TestClient]:  # type: ignore[type-arg]
    env = {**ENV, "AGENTMEM_MAX_INGEST_MESSAGES": "3", "AGENTMEM_MAX_IMPORT_BYTES": "2000"}
    with TestClient(create_app(load(env=env), mem=memory)) as c:
        yield c


def test_the_caps_have_safe_defaults() -> None:
    s = Settings()
    assert (s.max_body_bytes, s.max_import_bytes) == (1024 * 1024, 64 * 1024 * 1024)  # import was 512 MiB
    assert (s.max_ingest_messages, s.header_timeout_seconds) == (500, 10.0)


def test_a_conversation_over_the_message_cap_is_refused_whole(client: TestClient, memory: Memory) -> None:  # type: ignore[type-arg]
    body = {"messages": [{**USER, "id": f"m{i}"} for i in range(4)], "session": "s-1"}
    r = client.post("/v1/ingest/conversation", json=body, headers=auth("write"))
    assert r.status_code == 400, r.text
    assert r.json()["error"]["message"].startswith("messages: 4 is more than the 3") and "max_ingest_messages" in r.text
    assert memory.stats().versions == 0 and memory.audit(actions=["ingest"])[0] == []
    body["messages"] = body["messages"][:3]
    assert client.post("/v1/ingest/conversation", json=body, headers=auth("write")).status_code == 200


def test_the_default_message_cap(memory: Memory) -> None:
    with TestClient(create_app(load(env=ENV), mem=memory)) as c:
        body = {"messages": [{"role": "tool", "content": "ok"}] * 501, "dry_run": True}
        r = c.post("/v1/ingest/conversation", json=body, headers=auth("write"))
        assert r.status_code == 400 and "the 500 one request may hold" in r.json()["error"]["message"]


def test_an_import_over_its_body_limit_is_refused_whole(client: TestClient, memory: Memory) -> None:  # type: ignore[type-arg]
    memory.remember("The export holds this memory", project="shop")
    header, line = client.get("/v1/export", headers=auth("read")).content.splitlines()[:2]
    doc = json.loads(line)
    doc["memory"] |= {"id": 50, "lineage_id": 50}
    ndjson = {**auth("write"), "content-type": "application/x-ndjson"}
    before = memory.stats()
    small = b"\n".join([header, json.dumps(doc).encode()])
    doc["memory"]["content"] = "x" * 3000
    big = b"\n".join([header, json.dumps(doc).encode()])
    r = client.post("/v1/import", content=big, headers=ndjson)
    assert r.status_code == 413, r.text
    assert r.json()["error"]["message"] == (
        "the request body is larger than this route's limit of 2000 bytes (setting max_import_bytes)"
    )
    assert memory.stats() == before
    assert client.post("/v1/import", content=small, headers=ndjson).status_code == 201


def test_a_body_over_max_body_bytes_says_the_limit(client: TestClient, memory: Memory) -> None:  # type: ignore[type-arg]
    r = client.post("/v1/memories", json={"content": "x" * 30_000}, headers=auth("write"))
    assert r.status_code == 413
    assert "limit of 20000 bytes (setting max_body_bytes)" in r.json()["error"]["message"]
    assert memory.stats().versions == 0


def test_ready_shows_whole_service_figures_only_to_an_admin_of_every_project(client: TestClient) -> None:  # type: ignore[type-arg]
    """Outbox lag counts every project's writes: a caller without a token (or of one project) could
    count another project's writes by polling it. Readiness itself stays open (load balancers)."""
    for headers in ({}, auth("read"), auth("write"), {"Authorization": "Bearer not-a-token"}):
        r = client.get("/ready", headers=headers)
        assert (r.status_code, r.json()) == (200, {"ready": True, "state": "ready"})
    full = client.get("/ready", headers=auth("admin")).json()
    assert full["outbox_lag"] == 0 and full["index_stale"] is False and full["rebuild"] == "idle"


@pytest.mark.slow
def test_a_connection_must_send_its_headers_in_time(tmp_path: Path) -> None:
    """uvicorn has no header timeout; `serve` closes a connection whose request head is not in
    within header_timeout_seconds, even one that trickles a byte at a time."""
    server = Server(tmp_path / "data", env={"AGENTMEM_HEADER_TIMEOUT_SECONDS": "1"})
    try:
        server.start(ready=False)  # /health answers while the model loads: enough here
        for trickle in (False, True):
            with socket.create_connection(("127.0.0.1", server.port), timeout=6) as s:
                s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # no blank line: the head is unfinished
                s.settimeout(0.2 if trickle else 6)
                started, got = time.monotonic(), b"-"
                while got and time.monotonic() - started < 6:
                    try:
                        if trickle:
                            s.sendall(b"X")
                        got = s.recv(100)
                    except TimeoutError:
                        continue
                    except OSError:  # reset, or a broken pipe: closed too
                        got = b""
                assert got == b"", "the connection stayed open"
                assert time.monotonic() - started < 3
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:  # a whole request is served
            s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            assert s.recv(100).startswith(b"HTTP/1.1 200")
    finally:
        server.close()


def test_a_request_body_must_arrive_in_time(tmp_path: Path) -> None:
    """A body slower than it promised (Content-Length 400, then 10 bytes and a byte now and then)
    is cut off after body_timeout_seconds, and nothing of it is written."""
    env = {"AGENTMEM_BODY_TIMEOUT_SECONDS": "1", "AGENTMEM_HEADER_TIMEOUT_SECONDS": "30"}
    server = Server(tmp_path / "data", env=env)
    try:
        server.start()
        head = (b"POST /v1/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Authorization: Bearer " + TOKEN.encode() + b"\r\nContent-Length: 400\r\n\r\n")  # fmt: skip
        with socket.create_connection(("127.0.0.1", server.port), timeout=6) as s:
            s.sendall(head + b'{"content"')
            s.settimeout(0.2)
            started, got = time.monotonic(), b"-"
            while got and time.monotonic() - started < 8:
                try:
                    s.sendall(b" ")
                    got = s.recv(100)
                except TimeoutError:
                    continue
                except OSError:
                    got = b""
            assert got == b"" and time.monotonic() - started < 4, "the connection stayed open"
        stats = httpx.get(f"{server.url}/v1/stats", headers={"Authorization": f"Bearer {ROOT_TOKEN}"}, timeout=30)
        assert stats.status_code == 200 and stats.json()["versions"] == 0, stats.text
    finally:
        server.close()
