"""The real server in a child process on a free loopback port, for the tests that need one; and a
Client whose requests go into a Litestar TestClient's app, in process, for those that do not."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from litestar.testing import TestClient
from litestar.testing.transport import TestClientTransport

from agentmem.client import Client, serving

TOKEN = "server-test-secret-000000001"
ROOT_TOKEN = "server-test-root-secret-0001"  # an admin of every project: the id check covers them all
ENV_TOKENS = f"w:{TOKEN}:admin:shop;root:{ROOT_TOKEN}:admin:*"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, data: Path, tokens: str = ENV_TOKENS, env: dict[str, str] | None = None) -> None:
        self.data = data
        self.tokens = tokens
        self.env = env or {}
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = data.parent / "server.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def command(self, port: int | None = None) -> list[str]:
        data, port = str(self.data), str(port or self.port)
        return [sys.executable, "-m", "agentmem", "--data-dir", data, "serve", "--port", port]

    def environ(self) -> dict[str, str]:
        return {**os.environ, "AGENTMEM_TOKENS": self.tokens, "HF_HUB_OFFLINE": "1", **self.env}

    def start(self, *, ready: bool = True) -> None:
        """Start it and wait until it listens, and (with `ready`) until its engine is loaded."""
        self.proc = subprocess.Popen(
            self.command(), env=self.environ(), stdout=subprocess.DEVNULL, stderr=open(self.log, "ab")
        )
        self.wait_for("/health", lambda r: r.status_code == 200)
        if ready:  # a server from before /ready had a state was ready once it listened
            self.wait_for("/ready", serving)

    def wait_for(self, path: str, done: Callable[[httpx.Response], bool], seconds: float = 180) -> httpx.Response:
        """Poll `path` until `done` says so (the server must stay up meanwhile)."""
        assert self.proc is not None
        deadline = time.time() + seconds
        while time.time() < deadline:
            assert self.proc.poll() is None, self.log.read_text()[-3000:]
            try:
                r = httpx.get(f"{self.url}{path}", timeout=5)
                if done(r):
                    return r
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"{path} did not answer as expected within {seconds} s")

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
    return Client("http://127.0.0.1", token=token, transport=AppTransport(app))  # a loopback name: see api.guard
