"""The real server process on a loopback port: Python client, plain HTTP, SIGKILL mid-burst, SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentmem import NewMemory, ValidationError
from agentmem.client import Client
from api.server import check_bind, is_loopback
from api.settings import Settings, TokenSpec, load
from servers import ROOT_TOKEN, TOKEN, Server


@pytest.mark.model
@pytest.mark.slow
def test_client_and_plain_http_then_sigkill_mid_burst(server: Server) -> None:
    server.start()
    with Client(server.url, token=TOKEN) as c:
        first = c.remember(NewMemory(content="The API listens on port 8080", key="api.port"))
        second = c.remember(NewMemory(content="We're on 4000 now", key="api.port"))
        assert second.outcome == "superseded" and second.superseded_id == first.memory.id
        assert [h.memory.content for h in c.recall("what port does the API use")][0] == "We're on 4000 now"
        with pytest.raises(ValidationError):
            c.remember(NewMemory(content="  "))
    plain = httpx.post(
        f"{server.url}/v1/recall", json={"query": "API port"}, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30
    )
    assert plain.status_code == 200 and plain.json()["hits"][0]["memory"]["content"] == "We're on 4000 now"

    acked: list[dict[str, int | None]] = []
    lock = threading.Lock()
    stop = threading.Event()

    def writer(n: int) -> None:
        with Client(server.url, token=TOKEN, timeout=30) as c:
            i = 0
            while not stop.is_set():
                try:
                    if i % 4 == 3:
                        r = c.remember(NewMemory(content=f"worker {n} build number is {i}", key=f"build.{n}"))
                    else:
                        r = c.remember(NewMemory(content=f"writer {n} noted fact {i} about module m{i * 7919 % 1009}"))
                except Exception:
                    return  # the server died: this write was not acknowledged
                with lock:
                    acked.append({"id": r.memory.id, "old": r.superseded_id})
                i += 1

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    time.sleep(4)
    server.stop(signal.SIGKILL)
    stop.set()
    for t in threads:
        t.join()
    assert len(acked) > 10

    server.start()
    with Client(server.url, token=ROOT_TOKEN) as root:
        assert root.check().ok
    with Client(server.url, token=TOKEN) as c:
        for a in acked:
            got = c.get(int(a["id"]))  # type: ignore[arg-type]
            if a["old"] is not None:
                old = c.get(int(a["old"]))
                assert old.superseded_by == got.id and got.parent_id == old.id and not old.is_latest
        for n in range(4):
            hits = c.recall(f"worker {n} build number", k=20)
            assert all(h.memory.is_latest for h in hits)
        ready = httpx.get(f"{server.url}/ready").json()
        assert ready["ready"] is True


@pytest.mark.model
@pytest.mark.slow
def test_sigterm_flushes_indexes(server: Server) -> None:
    server.start()
    with Client(server.url, token=TOKEN) as c:
        for i in range(5):
            c.remember(NewMemory(content=f"graceful fact {i} on shard {i * 13}"))
    # uvicorn shuts down gracefully, then re-raises SIGTERM so that the exit status tells why
    assert server.stop(signal.SIGTERM) in (0, -signal.SIGTERM)
    assert "Application shutdown complete" in (server.data.parent / "server.log").read_text()
    meta = json.loads((server.data / "index" / "vectors" / "vectors.meta.json").read_text())
    assert meta["count"] == 5 and meta["applied_seq"] == 5  # saved on shutdown, nothing left to replay


@pytest.mark.model
@pytest.mark.slow
def test_cli_talks_to_the_server(server: Server) -> None:
    server.start()
    env = {**os.environ, "AGENTMEM_URL": server.url, "AGENTMEM_TOKEN": TOKEN}
    run = [sys.executable, "-m", "agentmem"]
    out = subprocess.run(
        [*run, "remember", "Lunch is at noon", "--project", "shop"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0 and out.stdout.startswith("created: #1"), out.stderr
    out = subprocess.run(
        [*run, "recall", "when is lunch", "--project", "shop"], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0 and "Lunch is at noon" in out.stdout
    out = subprocess.run([*run, "get", "99"], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 3 and "404" in out.stderr


# -- binding rules (fast) ----------------------------------------------------------------------


def test_open_server_binds_loopback_only() -> None:
    open_settings = Settings(host="0.0.0.0")
    with pytest.raises(ValidationError, match="no tokens configured"):
        check_bind(open_settings)
    check_bind(Settings(host="127.0.0.1"))
    check_bind(Settings(host="0.0.0.0", tokens=[TokenSpec("t", "0" * 64, "read", ["p"])]))
    assert is_loopback("localhost") and is_loopback("::1") and not is_loopback("10.0.0.1")


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"AGENTMEM_TOKENS": "broken"}, "expected name:secret:role"),
        ({"AGENTMEM_TOKENS": "a:short:read:p"}, "at least 16"),
        ({"AGENTMEM_TOKENS": "a:a-long-enough-secret:owner:p"}, "role must be one of"),
        ({"AGENTMEM_PORT": "eighty"}, "AGENTMEM_PORT"),
    ],
)
def test_bad_settings_are_clear(env: dict[str, str], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        load(env=env)


def test_serve_refuses_public_bind_without_tokens(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTMEM_")}
    out = subprocess.run(
        [sys.executable, "-m", "agentmem", "--data-dir", str(tmp_path), "serve", "--host", "0.0.0.0", "--port", "1"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2 and "refusing to listen on 0.0.0.0" in out.stderr


@pytest.mark.model
def test_the_newer_statement_wins_over_a_socket(server: Server) -> None:
    """The issue's shell example through the real server and model: a stated move supersedes, the old
    value stays reachable with include_superseded, and two observed statements of one slot come back
    newest first, the older one marked."""
    server.start()
    headers = {"Authorization": f"Bearer {TOKEN}"}

    def post(path: str, body: dict[str, object]) -> dict[str, object]:
        r = httpx.post(f"{server.url}{path}", json=body, headers=headers, timeout=60)
        assert r.status_code in (200, 201), r.text
        return r.json()  # type: ignore[no-any-return]

    fly = post("/v1/memories", {"content": "We deploy the shop API on Fly.io"})["memory"]
    render = post("/v1/memories", {"content": "We're on Render now for the shop API"})
    assert render["outcome"] == "superseded" and render["superseded_id"] == fly["id"]  # type: ignore[index]
    hits = post("/v1/recall", {"query": "where is the shop API deployed?", "k": 3})["hits"]
    assert [h["memory"]["content"] for h in hits] == ["We're on Render now for the shop API"]  # type: ignore[attr-defined, index]
    hits = post("/v1/recall", {"query": "where is the shop API deployed?", "k": 3, "include_superseded": True})["hits"]
    assert [h["memory"]["id"] for h in hits][1] == fly["id"]  # type: ignore[index]
    turns = [
        {"content": "I've completed 4 projects since starting painting classes.", "at": "2026-08-16T10:00:00Z"},
        {"content": "I just finished my 5th project since starting painting classes!", "at": "2026-10-09T10:00:00Z"},
    ]
    ids = post("/v1/observations", {"observations": turns})["ids"]
    hits = post("/v1/recall", {"query": "How many projects have I completed since starting painting classes?"})["hits"]
    def turn_of(h: Any) -> int:  # a claim hit stands for the turn it was stated in
        return int((h.get("stated_in") or h["memory"])["id"])

    order = [turn_of(h) for h in hits]  # type: ignore[union-attr]
    older = next(h for h in hits if turn_of(h) == ids[0])  # type: ignore[union-attr, index]
    assert order.index(ids[1]) + 1 == order.index(ids[0])  # the newer turn first, the older directly under it
    assert older["older_than"] is None or older["older_reason"]  # type: ignore[index]
