"""`agentmem mcp` through the official MCP SDK's client: over stdio (service and local directory) and HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from litestar.testing import TestClient
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from agentmem import Memory, MemoryAPI
from agentmem.cli import main
from api.app import create_app
from api.mcp_backend import McpSettings
from api.mcp_server import build_server
from api.server import add_commands
from api.settings import load
from fakes import FakeEmbedder
from servers import TOKEN, Server, app_client, free_port

ROOT = Path(__file__).parent.parent
WRITE_TOKEN = "server-test-writer-00000002"
TOOLS = {"remember", "recall", "context", "history", "forget", "observe", "end_session"}


def stdio(*args: str, **env: str) -> StdioServerParameters:
    env = {"HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1", **env}
    return StdioServerParameters(command=sys.executable, args=["-m", "agentmem", *args, "mcp"], env=env, cwd=ROOT)


def session(server: Any, body: Callable[[Client], Awaitable[None]]) -> None:
    async def run() -> None:
        async with Client(server, read_timeout_seconds=300) as c:
            await body(c)

    anyio.run(run)


async def ok(c: Client, name: str, /, **arguments: Any) -> Any:
    r = await c.call_tool(name, arguments)
    assert not r.is_error, r.content[0].text  # type: ignore[union-attr]
    return r.structured_content


async def error(c: Client, name: str, /, **arguments: Any) -> str:
    r = await c.call_tool(name, arguments)
    assert r.is_error, r.structured_content
    return str(r.content[0].text)  # type: ignore[union-attr]


async def remember_supersede_recall_history(c: Client) -> tuple[int, int]:
    """The core story every mode must tell the same way; returns (old id, new id)."""
    first = await ok(c, "remember", content="The API listens on port 8080", key="api.port", kind="config")
    assert first["outcome"] == "created" and first["memory"]["project"] == "shop"
    second = await ok(c, "remember", content="We're on 4000 now", key="api.port", kind="config")
    assert second["outcome"] == "superseded" and second["superseded_id"] == first["memory"]["id"]
    hits = (await ok(c, "recall", query="what port does the API use?", k=5))["hits"]
    assert hits[0]["content"] == "We're on 4000 now" and hits[0]["has_history"]
    assert all("8080" not in h["content"] for h in hits)
    with_old = (await ok(c, "recall", query="what port does the API use?", k=5, include_superseded=True))["hits"]
    old = [h for h in with_old if h["id"] == first["memory"]["id"]]
    assert old and old[0]["status"] == "superseded" and old[0]["superseded_by"] == second["memory"]["id"]
    assert [h["id"] for h in with_old].index(old[0]["id"]) > [h["id"] for h in with_old].index(second["memory"]["id"])
    then = (await ok(c, "recall", query="API port", as_of=first["memory"]["valid_from"]))["hits"]
    assert [h["content"] for h in then][:1] == ["The API listens on port 8080"]
    versions = (await ok(c, "history", memory_id=second["memory"]["id"]))["versions"]
    assert [v["content"] for v in versions] == ["The API listens on port 8080", "We're on 4000 now"]
    assert versions[0]["superseded_by"] == second["memory"]["id"] and not versions[0]["current"]
    read = await c.read_resource(f"agentmem://memories/{first['memory']['id']}/history")
    assert [v["version"] for v in json.loads(read.contents[0].text)] == [1, 2]  # type: ignore[union-attr]
    return first["memory"]["id"], second["memory"]["id"]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    s = Server(tmp_path / "data", tokens=f"a:{TOKEN}:admin:shop,lab;w:{WRITE_TOKEN}:write:shop")
    yield s
    s.close()


@pytest.mark.model
@pytest.mark.slow
def test_stdio_against_a_running_service(server: Server) -> None:
    server.start()
    env = {"AGENTMEM_URL": server.url, "AGENTMEM_PROJECT": "shop", "AGENTMEM_AGENT": "tester"}

    async def body(c: Client) -> None:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert set(tools) == TOOLS and all(len(t.description or "") > 80 for t in tools.values())
        assert {"content", "kind", "key", "ttl_days", "project"} <= set(tools["remember"].input_schema["properties"])
        assert "as_of" in tools["recall"].input_schema["properties"]
        old, new = await remember_supersede_recall_history(c)
        one = json.loads((await c.read_resource(f"agentmem://memories/{new}")).contents[0].text)  # type: ignore[union-attr]
        assert one["content"] == "We're on 4000 now" and one["agent"] == "tester" and one["project"] == "shop"
        assert "4000" in (await ok(c, "context", query="which port does the API listen on"))["text"]

        # identity: the configured project only; a tool argument cannot move a memory elsewhere
        assert "not allowed" in await error(c, "remember", content="The lab uses port 9", project="lab")
        assert "not allowed" in await error(c, "recall", query="port", project="lab")

        # a session: observations, then one episodic memory
        await ok(c, "observe", content="ran the test suite: 3 failures in billing", tool="Bash")
        await ok(c, "observe", content="fixed the rounding bug in billing totals")
        episode = await ok(c, "end_session")
        assert episode["outcome"] == "created" and episode["memory"]["tier"] == "episodic"
        assert "not found" in await error(c, "end_session", session="never-observed")

        # governance delete: the admin token may
        gone = await ok(c, "forget", lineages=[new], reason="test: erase the port lineage")
        assert sorted(gone["ids"]) == sorted([old, new])
        hits = (await ok(c, "recall", query="what port does the API use?"))["hits"]
        assert all("4000" not in h["content"] for h in hits)

    session(stdio(**env, AGENTMEM_TOKEN=TOKEN), body)

    async def writer(c: Client) -> None:
        kept = await ok(c, "remember", content="Invoices are rounded half-even", key="billing.rounding")
        text = await error(c, "forget", ids=[kept["memory"]["id"]], reason="test: not allowed")
        assert "403" in text and "admin token" in text

    session(stdio(**env, AGENTMEM_TOKEN=WRITE_TOKEN), writer)


def test_bad_arguments_and_service_down_are_clear_errors() -> None:
    """No model: the MCP process only talks HTTP, here to a port nobody listens on."""
    env = {"AGENTMEM_URL": f"http://127.0.0.1:{free_port()}", "AGENTMEM_PROJECT": "shop"}

    async def body(c: Client) -> None:
        assert {t.name for t in (await c.list_tools()).tools} == TOOLS
        assert "k: Expected `int`, got `str`" in await error(c, "recall", query="port", k="lots")
        assert "content" in await error(c, "remember", kind="fact")
        assert "memory_id" in await error(c, "history", memory_id=0)
        assert "project 'elsewhere' is not allowed" in await error(c, "remember", content="x", project="elsewhere")
        started = time.monotonic()
        text = await error(c, "recall", query="what port does the API use?")
        assert "unreachable" in text and "agentmem serve" in text
        assert time.monotonic() - started < 5

    session(stdio(**env), body)


def test_streamable_http_transport(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "AGENTMEM_URL": f"http://127.0.0.1:{free_port()}", "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "agentmem", "mcp", "--transport", "http", "--port", str(port)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            assert proc.poll() is None
            try:
                httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.3)

        async def body(c: Client) -> None:
            assert {t.name for t in (await c.list_tools()).tools} == TOOLS
            assert "unreachable" in await error(c, "context", query="deploys")

        session(f"http://127.0.0.1:{port}/mcp", body)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_http_transport_refuses_a_public_address(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp", "--transport", "http", "--host", "0.0.0.0"], extra=add_commands) == 2
    assert "no authentication" in capsys.readouterr().err


@pytest.mark.model
@pytest.mark.slow
def test_stdio_on_a_local_data_directory(tmp_path: Path) -> None:
    """No service: `agentmem mcp` opens the data directory itself (and loads the model)."""

    async def body(c: Client) -> None:
        await remember_supersede_recall_history(c)

    session(stdio("--data-dir", str(tmp_path / "data"), AGENTMEM_PROJECT="shop"), body)


@pytest.mark.parametrize("through", ["memory", "client"])
def test_one_adapter_over_either_memory_api(tmp_path: Path, through: str) -> None:
    """In process, no model: the tools over a Memory, and over a Client talking to the app on that Memory."""
    mem = Memory(tmp_path / "data", embedder=FakeEmbedder())
    lab = mem.remember("The lab listens on port 9000", project="lab").memory.id
    settings = McpSettings(project="shop", projects=("shop",), agent="tester", session="s-1")
    observed: list[int] = []

    async def body(c: Client) -> None:
        old, new = await remember_supersede_recall_history(c)
        assert "4000" in (await ok(c, "context", query="which port does the API listen on"))["text"]
        observed.append((await ok(c, "observe", content="ran the test suite: 3 failures", tool="Bash"))["id"])
        later = (await ok(c, "observe", content="ran the test suite again: 1 failures", tool="Bash"))["id"]
        hits = (await ok(c, "recall", query="how many failures in the test suite run?", k=5))["hits"]
        assert [h["id"] for h in hits[:2]] == [later, observed[0]]  # the newer run first, the older right under it
        assert (await ok(c, "end_session"))["outcome"] == "created"
        assert "not allowed" in await error(c, "recall", query="port", project="lab")
        assert "not found" in await error(c, "history", memory_id=lab)
        assert "not found" in await error(c, "forget", lineages=[lab], reason="test: another project")
        gone = await ok(c, "forget", lineages=[new], reason="test: erase the port lineage")
        assert sorted(gone["ids"]) == sorted([old, new])

    def run(api: MemoryAPI) -> None:
        server, scoped = build_server(settings, lambda: api)
        try:
            session(server, body)
        finally:
            scoped.close()

    if through == "memory":
        run(mem)  # the adapter closes it
    else:
        env = {"AGENTMEM_TOKENS": f"a:{TOKEN}:admin:*", "AGENTMEM_SWEEP_EVERY_MINUTES": "0",
               "AGENTMEM_CONSOLIDATE_EVERY_MINUTES": "0"}  # fmt: skip
        with TestClient(create_app(load(env=env), mem=mem)) as app:
            run(app_client(app, TOKEN))
        mem.close()
    with Memory(tmp_path / "data", embedder=FakeEmbedder()) as after:
        o = after.get(observed[0])
        assert (o.project, o.source, o.agent, o.session, o.title, o.tier) == ("shop", "mcp", "tester", "s-1", "Bash",
                                                                               "working")  # fmt: skip
        assert after.get(lab).status == "active"
        deleted, _ = after.audit(actions=["delete"])
        assert deleted[0].actor == ("mcp:tester" if through == "memory" else "a")  # over HTTP: the token's name
