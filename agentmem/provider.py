"""An optional OpenAI-compatible chat endpoint (e.g. a local model server) that words abstractions.

The prompt is a pure function of its input: evidence is numbered by ordinals, never by ids,
and the request asks for temperature 0 and one JSON object `{"text": "..."}`. Well-formed
replies are cached in DuckDB by the hash of the request, so a replay is identical and works
offline. A reply that times out, is not JSON, or has the wrong fields raises ProviderError and
the caller skips that piece of work; nothing is written from it.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from datetime import UTC, datetime

import httpx
import msgspec

from agentmem.errors import ProviderError
from agentmem.store import Store
from agentmem.text import sha256

MAX_TEXT = 2000
SYSTEM = (
    "You write one memory for an AI agent's long-term memory store from numbered pieces of evidence. "
    "State what the evidence says in one or two plain sentences, without inventing anything. "
    'Reply with one JSON object and nothing else: {"text": "<the memory>"}'
)


class ProviderConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Where the chat endpoint is: `base_url` up to `/v1`; the API key is read from `api_key_env`."""

    base_url: str
    model: str
    api_key_env: str | None = None
    timeout_seconds: float = 30.0


class _Reply(msgspec.Struct, forbid_unknown_fields=True):
    text: str


class Provider:
    """Chat completions with a reply cache; `calls` and `cache_hits` count what happened."""

    def __init__(
        self,
        config: ProviderConfig,
        store: Store,
        lock: threading.RLock,
        *,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self._lock = lock  # the store's writer lock, for the cache
        key = os.environ.get(config.api_key_env, "") if config.api_key_env else ""
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._http = httpx.Client(
            base_url=config.base_url.rstrip("/"), headers=headers, timeout=config.timeout_seconds, transport=transport
        )
        self.calls = 0
        self.cache_hits = 0

    def close(self) -> None:
        self._http.close()

    def request(self, task: str, evidence: Sequence[str]) -> dict[str, object]:
        """The request body for `task` over `evidence` (numbered 1..n): deterministic, id-free."""
        numbered = "\n".join(f"{n}. {text}" for n, text in enumerate(evidence, 1))
        return {
            "model": self.config.model,
            "temperature": 0,
            "response_format": {"type": "json_object"},
            "messages": [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": f"Task: {task}\n\nEvidence:\n{numbered}"},
            ],
        }

    def write(self, task: str, evidence: Sequence[str]) -> str:
        """The memory text for `task` over `evidence`, from the cache or the endpoint."""
        body = self.request(task, evidence)
        key = sha256(json.dumps(body, sort_keys=True, ensure_ascii=False))
        row = self.store.cursor().execute("SELECT reply FROM provider_cache WHERE prompt_hash = ?", [key]).fetchone()
        if row is not None:
            self.cache_hits += 1
            return parse(row[0])
        self.calls += 1
        try:
            r = self._http.post("/chat/completions", json=body)
            r.raise_for_status()
            content = r.json()["choices"][0]["message"]["content"]
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
            raise ProviderError(f"provider request failed: {type(exc).__name__}") from None
        if not isinstance(content, str):
            raise ProviderError("provider reply has no text content")
        text = parse(content)
        with self._lock, self.store.transaction() as tx:
            tx.execute(
                "INSERT OR IGNORE INTO provider_cache VALUES (?, ?, ?, ?)",
                [key, self.config.model, content, datetime.now(UTC)],
            )
        return text


def parse(content: str) -> str:
    """The `text` of a reply that is exactly `{"text": "..."}`; ProviderError otherwise."""
    try:
        reply = msgspec.json.decode(content.strip(), type=_Reply)
    except msgspec.DecodeError:
        raise ProviderError("provider reply is not the JSON object {\"text\": ...}") from None
    text = " ".join(reply.text.split())
    if not text or len(text) > MAX_TEXT:
        raise ProviderError(f"provider text is empty or longer than {MAX_TEXT} characters")
    return text
