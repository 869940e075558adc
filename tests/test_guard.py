"""The request guard (api.guard): a tokenless server refuses other sites, foreign Host names and
non-JSON writes; tokens relax it; `agentmem mcp` over HTTP is behind the same guard on any
loopback address. The browser's side of it is tests/test_guard_browser.py."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from litestar.testing import TestClient

from agentmem import Memory, ValidationError
from api.app import create_app
from api.settings import load
from servers import free_port

URL = "http://127.0.0.1:8420"
ROOT = Path(__file__).parent.parent
NOTE = {"content": "The deploy key lives in the vault", "project": "shop"}
SECRET = "guard-test-secret-000000001"


@pytest.fixture
def open_client(memory: Memory) -> Iterator[TestClient]:  # type: ignore[type-arg]
    memory.remember("The staging password rotates weekly", project="shop")
    with TestClient(create_app(load(env={}), mem=memory), base_url=URL) as c:
        yield c


def versions(memory: Memory) -> int:
    return memory.stats().versions


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://127.0.0.1:9999"},  # another loopback port: another origin
        {"Origin": "https://evil.example"},
        {"Origin": "null"},  # a sandboxed frame or a data: page
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},  # localhost:3000 is the same site as localhost:8420, not the same origin
        {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"},
    ],
)
def test_a_tokenless_server_refuses_other_sites(open_client, memory: Memory, headers: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    before = versions(memory)
    for r in (
        open_client.post("/v1/memories", json=NOTE, headers=headers),
        open_client.post("/v1/delete", json={"reason": "gone", "project": "shop", "dry_run": True}, headers=headers),
        open_client.get("/v1/memories", params={"project": "shop"}, headers=headers),
    ):
        assert r.status_code == 403, r.text
        assert r.json()["error"]["code"] == "forbidden" and "another site" in r.json()["error"]["message"]
        assert "staging password" not in r.text
    assert versions(memory) == before


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", None]
)
def test_a_tokenless_server_takes_writes_in_json_only(open_client, memory: Memory, content_type: str | None) -> None:  # type: ignore[no-untyped-def]
    """The types a page may send without a preflight, even with no Origin (an old browser, a plugin)."""
    headers = {"content-type": content_type} if content_type else {}
    r = open_client.post("/v1/memories", content=b'{"content": "planted", "project": "shop"}', headers=headers)
    assert r.status_code == 400 and "Content-Type: application/json" in r.json()["error"]["message"]
    assert versions(memory) == 1


@pytest.mark.parametrize("host", ["evil.example:8420", "evil.example", "127.0.0.1.nip.io:8420", "0.0.0.0:8420", ""])
def test_a_tokenless_server_answers_only_loopback_names(open_client, host: str) -> None:  # type: ignore[no-untyped-def]
    """DNS rebinding: a page whose name now resolves to 127.0.0.1 sends its own name as Host."""
    for r in (
        open_client.get("/v1/memories", params={"project": "shop"}, headers={"Host": host}),
        open_client.get("/ui/p/shop/", headers={"Host": host}),
        open_client.post("/v1/memories", json=NOTE, headers={"Host": host}),
    ):
        assert r.status_code == 421 and r.json()["error"]["code"] == "unknown_host", r.text
        assert "staging password" not in r.text


def test_a_tokenless_server_serves_its_own_pages_and_programs(open_client, memory: Memory) -> None:  # type: ignore[no-untyped-def]
    for host in ("127.0.0.1:8420", "localhost:8420", "[::1]:8420", "127.0.0.2", "LOCALHOST"):
        assert open_client.get("/v1/memories", params={"project": "shop"}, headers={"Host": host}).status_code == 200
    same = {"Origin": URL, "Sec-Fetch-Site": "same-origin"}
    assert open_client.post("/v1/memories", json=NOTE, headers=same).status_code == 201
    assert open_client.post("/v1/memories", json=NOTE, headers={"Sec-Fetch-Site": "none"}).status_code == 200
    # a link followed from another site opens the page (the linking page cannot read it)
    link = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
    assert open_client.get("/ui/p/shop/", headers=link).status_code == 200
    # an import's JSON Lines pass the guard (and meet the import's own checks)
    r = open_client.post("/v1/import", content=b"not json\n", headers={"content-type": "application/x-ndjson"})
    assert r.status_code == 400 and r.json()["error"]["message"].startswith("line 1")
    # the viewer's own forms (urlencoded, with their CSRF token) still work
    csrf = open_client.get("/ui/p/shop/").text.split('name="csrf" value="')[1].split('"')[0]
    form = open_client.post(
        "/ui/p/shop/remember", data={"content": "Posted from the viewer", "csrf": csrf}, headers=same
    )
    assert form.status_code in (200, 201, 303) and "Posted from the viewer" in open_client.get("/ui/p/shop/").text


def test_allowed_hosts_and_origins_admit_a_proxy(memory: Memory) -> None:
    env = {"AGENTMEM_ALLOWED_HOSTS": "mem.example.com, proxy.internal:8443",
           "AGENTMEM_ALLOWED_ORIGINS": "https://ui.example.com"}  # fmt: skip
    with TestClient(create_app(load(env=env), mem=memory), base_url=URL) as c:
        assert c.get("/v1/stats", headers={"Host": "mem.example.com"}).status_code == 200
        assert c.get("/v1/stats", headers={"Host": "MEM.example.com:443"}).status_code == 200
        assert c.get("/v1/stats", headers={"Host": "proxy.internal:8443"}).status_code == 200
        assert c.get("/v1/stats", headers={"Host": "proxy.internal:9999"}).status_code == 421
        allowed = {"Origin": "https://ui.example.com", "Sec-Fetch-Site": "cross-site"}
        assert c.post("/v1/memories", json=NOTE, headers=allowed).status_code == 201
        assert c.post("/v1/memories", json=NOTE, headers={"Origin": "https://other.example.com"}).status_code == 403


def test_a_malformed_origin_is_refused_not_a_500(open_client, memory: Memory) -> None:  # type: ignore[no-untyped-def]
    before = versions(memory)
    for origin in ("http://[::1", "http://[zz]:80"):
        r = open_client.post("/v1/memories", json=NOTE, headers={"Origin": origin})
        assert r.status_code == 403 and "Origin" in r.json()["error"]["message"], r.text
    assert versions(memory) == before


def test_allowed_hosts_take_ipv6_and_underscores(memory: Memory) -> None:
    env = {"AGENTMEM_ALLOWED_HOSTS": "[fd00::5], agent_mem"}
    with TestClient(create_app(load(env=env), mem=memory), base_url=URL) as c:
        assert c.get("/v1/stats", headers={"Host": "[fd00::5]:8420"}).status_code == 200
        assert c.get("/v1/stats", headers={"Host": "[fd00::5]"}).status_code == 200
        assert c.get("/v1/stats", headers={"Host": "agent_mem:8420"}).status_code == 200
        assert c.get("/v1/stats", headers={"Host": "[fd00::6]:8420"}).status_code == 421


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"AGENTMEM_ALLOWED_HOSTS": "http://mem.example.com"}, "allowed_hosts entry"),
        ({"AGENTMEM_ALLOWED_HOSTS": "mem.example.com/ui"}, "allowed_hosts entry"),
        ({"AGENTMEM_ALLOWED_ORIGINS": "mem.example.com"}, "allowed_origins entry"),
        ({"AGENTMEM_ALLOWED_ORIGINS": "https://mem.example.com/app"}, "allowed_origins entry"),
    ],
)
def test_bad_allowed_entries_are_clear(env: dict[str, str], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        load(env=env)


def test_with_tokens_origin_is_relaxed_and_host_checked_only_when_configured(memory: Memory) -> None:
    """A token is a credential no page can make the browser send: Origin and body type no longer
    matter. The Host check stays where hosts are configured (a networked server has names of its own)."""
    token = {"Authorization": f"Bearer {SECRET}"}
    env = {"AGENTMEM_TOKENS": f"w:{SECRET}:write:shop"}
    with TestClient(create_app(load(env=env), mem=memory), base_url=URL) as c:
        cross = {**token, "Origin": "https://tool.example", "Sec-Fetch-Site": "cross-site"}
        assert c.post("/v1/memories", json=NOTE, headers=cross).status_code == 201
        assert c.get("/v1/memories", headers={**token, "Host": "mem.lan:8420"}).status_code == 200
        assert c.get("/v1/memories", headers={"Origin": "https://evil.example"}).status_code == 401
    with TestClient(create_app(load(env={**env, "AGENTMEM_ALLOWED_HOSTS": "mem.lan"}), mem=memory), base_url=URL) as c:
        assert c.get("/v1/memories", headers={**token, "Host": "mem.lan:8420"}).status_code == 200
        assert c.get("/v1/memories", headers={**token, "Host": "rebound.example:8420"}).status_code == 421
        # the viewer's forms keep their own check (cookie sessions): another site's form is refused
        assert (
            c.post("/ui/login", data={"token": SECRET}, headers={"Origin": "https://evil.example"}).status_code == 403
        )


# -- agentmem mcp over HTTP -------------------------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2"])
def test_mcp_over_http_is_guarded_on_any_loopback_address(tmp_path: Path, host: str) -> None:
    """The SDK guards 127.0.0.1, localhost and ::1 only; `agentmem mcp` puts api.guard in front on
    any address it binds (no model: the server talks to a service nobody runs)."""
    port = free_port()
    env = {**os.environ, "AGENTMEM_URL": f"http://127.0.0.1:{free_port()}", "HF_HUB_OFFLINE": "1",
           "AGENTMEM_ALLOWED_HOSTS": "mcp.internal"}  # fmt: skip
    cmd = [sys.executable, "-m", "agentmem", "mcp", "--transport", "http", "--host", host, "--port", str(port)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://{host}:{port}/mcp"
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    accept = {"Accept": "application/json, text/event-stream"}
    try:
        deadline = time.time() + 60
        while True:
            assert proc.poll() is None and time.time() < deadline
            try:
                httpx.get(url, timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.3)
        rebound = httpx.post(url, json=hello, headers={**accept, "Host": f"evil.example:{port}"})
        assert rebound.status_code == 421 and rebound.json()["error"]["code"] == "unknown_host"
        cross = httpx.post(url, json=hello, headers={**accept, "Origin": "http://127.0.0.1:9999"})
        assert cross.status_code == 403 and "another site" in cross.json()["error"]["message"]
        plain = httpx.post(url, content=b"{}", headers={**accept, "Content-Type": "text/plain"})
        assert plain.status_code == 400
        assert httpx.post(url, json=hello, headers=accept).status_code == 200
        assert httpx.post(url, json=hello, headers={**accept, "Host": "mcp.internal"}).status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)
