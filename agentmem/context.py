"""A bounded working set for a prompt: at most N memories within a token budget.

`working_set` is what `Memory.context` (and so /v1/context and the MCP `context` tool) does:
recall, then `build`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import msgspec

from agentmem import validate
from agentmem.operations import ContextRequest
from agentmem.records import Hit

MAX_MEMORIES = 100
TOKEN_BUDGET = (16, 32_000)


class Context(msgspec.Struct, frozen=True, kw_only=True):
    """Prompt-ready text plus what went into it; `tokens` uses the 4-characters-a-token estimate."""

    text: str
    memory_ids: list[int]
    tokens: int
    dropped: int


def estimate_tokens(text: str) -> int:
    """A model-free estimate (about four characters a token for English prose)."""
    return max(1, math.ceil(len(text) / 4))


def build(hits: list[Hit], *, max_memories: int, token_budget: int, header: str = "Relevant memories:") -> Context:
    """Take hits best first while they fit; each line says kind and since when it holds."""
    lines = [header]
    used = estimate_tokens(header)
    ids: list[int] = []
    dropped = 0
    for h in hits:
        m = h.memory
        line = f"- [{m.kind}, since {m.valid_from:%Y-%m-%d}] {m.content}"
        cost = estimate_tokens(line)
        if len(ids) >= max_memories or used + cost > token_budget:
            dropped += 1
            continue
        lines.append(line)
        used += cost
        ids.append(m.id)
    text = "\n".join(lines) if ids else ""
    return Context(text=text, memory_ids=ids, tokens=used if ids else 0, dropped=dropped)


def working_set(recall: Callable[[int], list[Hit]], request: ContextRequest, *, max_k: int) -> Context:
    """The best `recall(k)` hits, at most `max_memories`, within `token_budget`; k is at most `max_k`."""
    max_memories = validate.whole(request.max_memories, "max_memories", 1, MAX_MEMORIES)
    token_budget = validate.whole(request.token_budget, "token_budget", *TOKEN_BUDGET)
    # twice as many hits as lines: some will not fit the budget
    return build(recall(min(max_k, 2 * max_memories)), max_memories=max_memories, token_budget=token_budget)


