"""A bounded working set for a prompt: at most N memories within a token budget.

`working_set` is what `Memory.context` (and so /v1/context and the MCP `context` tool) does:
recall, then `build`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import msgspec

from agentmem.errors import ValidationError
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
    max_memories, token_budget = request.max_memories, request.token_budget
    if not _whole(max_memories) or not 1 <= max_memories <= MAX_MEMORIES:
        raise ValidationError(f"max_memories: expected a whole number from 1 to {MAX_MEMORIES}")
    low, high = TOKEN_BUDGET
    if not _whole(token_budget) or not low <= token_budget <= high:
        raise ValidationError(f"token_budget: expected a whole number from {low} to {high}")
    # twice as many hits as lines: some will not fit the budget
    return build(recall(min(max_k, 2 * max_memories)), max_memories=max_memories, token_budget=token_budget)


def _whole(n: object) -> bool:
    return isinstance(n, int) and not isinstance(n, bool)
