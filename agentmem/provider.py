"""An optional OpenAI-compatible chat endpoint (e.g. a local model server) that words abstractions.

The prompt is a pure function of its input: evidence is numbered by ordinals, never by ids,
and the request asks for temperature 0 and one JSON object `{"text": "..."}`. Well-formed
replies are cached in DuckDB by the hash of the request, so a replay is identical and works
offline. A reply that times out, is not JSON, or has the wrong fields raises ProviderError and
the caller skips that piece of work; nothing is written from it.

In cache-only mode (`cache_only = true`, or `AGENTMEM_PROVIDER_CACHE_ONLY=1` in the environment)
the endpoint is never asked: a request whose reply is not cached raises ProviderCacheMissError,
which no caller falls back from, so a replay (a benchmark's) is the recorded run bit for bit or an
error. `adjudicate = true` lets the endpoint rule on pairs the supersession rules leave undecided
(`agentmem.adjudicate`).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TypeVar

import httpx
import msgspec

from agentmem.errors import ProviderCacheMissError, ProviderError
from agentmem.store import StoreOfRecord
from agentmem.text import sha256

MAX_TEXT = 2000
MAX_CLAIMS = 20
T = TypeVar("T")
CACHE_ONLY_ENV = "AGENTMEM_PROVIDER_CACHE_ONLY"
SYSTEM = (
    "You write one memory for an AI agent's long-term memory store from numbered pieces of evidence. "
    "State what the evidence says in one or two plain sentences, without inventing anything. "
    'Reply with one JSON object and nothing else: {"text": "<the memory>"}'
)
CLAIMS_SYSTEM = (
    "You read one message from a conversation with an AI agent and list the durable claims in it worth "
    "remembering: who the user is, what they prefer, what was decided, how the project is configured, facts "
    "about the project. Each claim is one short plain sentence in the speaker's words. Leave out commands, "
    "code, paths, things that merely happened and questions. "
    'Reply with one JSON object and nothing else: {"claims": ["<claim>", ...]} (an empty list if none).'
)


class ProviderConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Where the chat endpoint is: `base_url` up to `/v1`; the API key is read from `api_key_env`.
    `adjudicate`: it also rules on the pairs the supersession rules leave undecided (a write with
    such a pair waits up to `timeout_seconds` for it, outside the write lock). `cache_only`: never
    ask the endpoint, a reply not cached is an error (a replay); so does `AGENTMEM_PROVIDER_CACHE_ONLY=1`."""

    base_url: str
    model: str
    api_key_env: str | None = None
    timeout_seconds: float = 30.0
    adjudicate: bool = False
    cache_only: bool = False


class _Reply(msgspec.Struct, forbid_unknown_fields=True):
    text: str


class _Claims(msgspec.Struct, forbid_unknown_fields=True):
    claims: list[str]


class Provider:
    """Chat completions with a reply cache; `calls` and `cache_hits` count what happened."""

    def __init__(
        self,
        config: ProviderConfig,
        store: StoreOfRecord,
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
        self.cache_only = config.cache_only or os.environ.get(CACHE_ONLY_ENV, "").lower() in ("1", "true", "yes")
        self.calls = 0
        self.cache_hits = 0

    def close(self) -> None:
        self._http.close()

    def request(self, task: str, evidence: Sequence[str], system: str = SYSTEM) -> dict[str, object]:
        """The request body for `task` over `evidence` (numbered 1..n): deterministic, id-free."""
        numbered = "\n".join(f"{n}. {text}" for n, text in enumerate(evidence, 1))
        return {
            "model": self.config.model,
            "temperature": 0,
            "response_format": {"type": "json_object"},
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": f"Task: {task}\n\nEvidence:\n{numbered}"},
            ],
        }

    def write(self, task: str, evidence: Sequence[str]) -> str:
        """The memory text for `task` over `evidence`, from the cache or the endpoint."""
        return self.ask(self.request(task, evidence), parse)

    def claims(self, text: str) -> list[str]:
        """Claims worth remembering that the endpoint finds in one message (the admission policy
        still judges each of them)."""
        body = self.request("List the durable claims in this message.", [text], CLAIMS_SYSTEM)
        return self.ask(body, parse_claims)

    def ask(self, body: dict[str, object], parse_reply: Callable[[str], T]) -> T:
        """The parsed reply to `body` (a request from `request`), from the cache (keyed by the hash
        of the request) or the endpoint; ProviderError if it gives no well-formed reply,
        ProviderCacheMissError in cache-only mode when it is not cached."""
        key = request_hash(body)
        cached = self.store.cached_reply(key)
        if cached is not None:
            self.cache_hits += 1
            return parse_reply(cached)
        if self.cache_only:
            raise ProviderCacheMissError(
                f"cache-only mode: no cached reply for request {key[:16]} (model {self.config.model!r}); "
                f"record it with the model first, or turn cache_only / {CACHE_ONLY_ENV} off"
            )
        self.calls += 1
        try:
            r = self._http.post("/chat/completions", json=body)
            r.raise_for_status()
            content = r.json()["choices"][0]["message"]["content"]
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
            raise ProviderError(f"provider request failed: {type(exc).__name__}") from None
        if not isinstance(content, str):
            raise ProviderError("provider reply has no text content")
        parsed = parse_reply(content)  # only a well-formed reply is cached
        with self._lock:
            self.store.cache_reply(key, self.config.model, content, datetime.now(UTC))
        return parsed


def request_hash(body: dict[str, object]) -> str:
    """The cache key of a request: the hash of its canonical JSON."""
    return sha256(json.dumps(body, sort_keys=True, ensure_ascii=False))


def parse(content: str) -> str:
    """The `text` of a reply that is exactly `{"text": "..."}`; ProviderError otherwise."""
    try:
        reply = msgspec.json.decode(content.strip(), type=_Reply)
    except msgspec.DecodeError:
        raise ProviderError('provider reply is not the JSON object {"text": ...}') from None
    text = " ".join(reply.text.split())
    if not text or len(text) > MAX_TEXT:
        raise ProviderError(f"provider text is empty or longer than {MAX_TEXT} characters")
    return text


def parse_claims(content: str) -> list[str]:
    """The claims of a reply that is exactly `{"claims": [...]}`; ProviderError otherwise."""
    try:
        reply = msgspec.json.decode(content.strip(), type=_Claims)
    except msgspec.DecodeError:
        raise ProviderError('provider reply is not the JSON object {"claims": [...]}') from None
    claims = [" ".join(c.split()) for c in reply.claims]
    if len(claims) > MAX_CLAIMS or any(not c or len(c) > MAX_TEXT for c in claims):
        raise ProviderError(f"provider claims: at most {MAX_CLAIMS}, each 1 to {MAX_TEXT} characters")
    return claims
