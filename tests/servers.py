"""The real server in a child process on a free loopback port, for the tests that need one; and a
Client whose requests go into a Litestar TestClient's app, in process, for those that do not."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from litestar.testing import TestClient
from litestar.testing.transport import TestClientTransport

from agentmem.client import Client

TOKEN = "server-test-secret-000000001"
ENV_TOKENS = f"w:{TOKEN}:admin:shop"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, data: Path, tokens: str = ENV_TOKENS) -> None:
        self.data = data
        self.tokens = tokens
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {**os.environ, "AGENTMEM_TOKENS": self.tokens, "HF_HUB_OFFLINE": "1"}
        cmd = [sys.executable, "-m", "agentmem", "--data-dir", str(self.data), "serve", "--port", str(self.port)]
        self.proc = subprocess.Popen(
            cmd, env=env, stdout=subprocess.DEVNULL, stderr=open(self.data.parent / "server.log", "ab")
        )
        deadline = time.time() + 180
        while time.time() < deadline:
            assert self.proc.poll() is None, (self.data.parent / "server.log").read_text()[-3000:]
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.3)
        raise AssertionError("server did not start")

    def stop(self, sig: int) -> int:
        assert self.proc is not None
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=60)

    def close(self) -> None:
        """Kill the server if it still runs (a test's clean-up)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class AppTransport(httpx.BaseTransport):
    """httpx requests into a TestClient's app (Litestar's own transport lacks the close() httpx calls)."""

    def __init__(self, app: TestClient) -> None:  # type: ignore[type-arg]
        self._app = TestClientTransport(app)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._app.handle_request(request)


def app_client(app: TestClient, token: str | None) -> Client:  # type: ignore[type-arg]
    """The real agentmem Client over the real routes, without a server process."""
    return Client("http://testserver.local", token=token, transport=AppTransport(app))
