"""A bounded working set for a prompt: at most N memories within a token budget."""

from __future__ import annotations

import math

import msgspec

from agentmem.records import Hit


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
