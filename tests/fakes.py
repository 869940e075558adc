"""A deterministic fake embedder for fast tests (the real model has its own marked tests), and a
scripted OpenAI-compatible chat endpoint over real HTTP (the optional provider's tests)."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from agentmem.text import tokens

DIM = 64


class FakeEmbedder:
    """Bag of hashed stemmed tokens: texts sharing words get similar vectors. Deterministic, instant."""

    name = "fake-hash-64"
    dim = DIM

    def __init__(self) -> None:
        self.calls = 0
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts += len(texts)
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for row, text in enumerate(texts):
            for tok in tokens(text) or ["<empty>"]:
                h = int.from_bytes(hashlib.blake2b(tok.encode(), digest_size=4).digest(), "little")
                out[row, h % DIM] += 1.0 if (h >> 16) & 1 else -1.0
            norm = np.linalg.norm(out[row])
            out[row] = out[row] / norm if norm else 1.0 / np.sqrt(DIM)
        return out


class FakeProvider:
    """An OpenAI-compatible chat endpoint on a real socket, answering as `mode` says; in mode
    "script", `script(request body)` gives the reply's content."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.requests: list[dict[str, Any]] = []
        self.script: Callable[[dict[str, Any]], str] = lambda body: ""
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                stub.requests.append(body)
                if stub.mode == "slow":
                    time.sleep(1.0)
                content = {
                    "ok": json.dumps({"text": "The upload test fails intermittently on CI."}),
                    "claims": json.dumps(
                        {
                            "claims": [
                                "I prefer tabs over spaces for indentation.",
                                "I ran the tests",
                                "rm -rf /tmp/build",
                            ]
                        }
                    ),
                    "slow": json.dumps({"text": "late"}),
                    "prose": "Sure! The upload test is flaky.",
                    "badjson": '{"text": ',
                    "fields": json.dumps({"summary": "wrong field"}),
                }.get(stub.mode, "")
                if stub.mode == "script":
                    content = stub.script(body)
                if stub.mode == "http500":
                    self.send_response(500)
                    self.end_headers()
                    return
                data = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
