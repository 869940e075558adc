"""Optional adjudication by a model of the pairs the supersession rules leave undecided.

With `[provider] adjudicate = true`, the near duplicates and same-slot statements a new memory
meets are put to the provider, named by ordinals; each ruling (update, contradiction, refinement,
unrelated) is applied outside the write unit, and a failed reply leaves the rules' decision.
Details: docs/design/modules.md#adjudicate.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Literal

import msgspec

from agentmem.errors import ProviderError
from agentmem.provider import Provider
from agentmem.records import MemoryVersion, NewMemory
from agentmem.slots import query_words, same_slot
from agentmem.supersede import NEVER_SUPERSEDED, Decision
from agentmem.text import jaccard, slot_of, token_set

log = logging.getLogger("agentmem")

MAX_PAIRS = 5
MAX_REASON = 300
Ruling = Literal["update", "contradiction", "refinement", "unrelated"]
SUPERSEDING: tuple[frozenset[str], ...] = (frozenset({"update", "contradiction"}), frozenset({"refinement"}))
SYSTEM = (
    "You keep an AI agent's long-term memory current. You get one new statement and numbered earlier "
    "statements, each with its date. For each earlier statement, rule how the new statement relates to it: "
    '"update" (the same fact has changed since: the new statement is how it is now), "contradiction" '
    '(both cannot be true at once, and it is not a change over time), "refinement" (the new statement '
    "says the same thing more precisely or completely, and nothing of the earlier one stops being true) or "
    '"unrelated" (a different fact, or both stay true). Give a short reason for each. Reply with one JSON '
    'object and nothing else: {"rulings": [{"statement": <number>, "ruling": "<ruling>", "reason": "<why>"}]}, '
    "one entry for every earlier statement."
)


class Verdict(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The model's ruling on earlier statement number `statement` (1-based)."""

    statement: int
    ruling: Ruling
    reason: str


class _Reply(msgspec.Struct, forbid_unknown_fields=True):
    rulings: list[Verdict]


class Pending(msgspec.Struct, frozen=True):
    """What a write puts to the model: the new text and date, and the older memories, in order."""

    content: str
    when: datetime
    older: list[MemoryVersion]


def undecided(
    new: NewMemory, decision: Decision, candidates: Sequence[MemoryVersion], when: datetime, slot_query_words: int
) -> list[MemoryVersion]:
    """The candidates the rules left undecided for `new` (see the module docstring), at most MAX_PAIRS:
    the hint band first (best Jaccard first), then same-slot statements in the order found."""
    if decision.outcome != "created" or new.kind in NEVER_SUPERSEDED:
        return []
    new_slot = slot_of(new.triple.subject, new.triple.predicate) if new.triple else None

    def eligible(c: MemoryVersion) -> bool:
        c_slot = slot_of(c.triple.subject, c.triple.predicate) if c.triple else None
        other = (new.key and c.key and c.key != new.key) or (new_slot and c_slot and c_slot != new_slot)
        return c.kind not in NEVER_SUPERSEDED and c.valid_from < when and not other

    by_id = {c.id: c for c in candidates}
    out = [by_id[n.id] for n in decision.near if n.id in by_id and eligible(by_id[n.id])]
    q = query_words(new.content)
    for c in candidates:
        if len(out) >= MAX_PAIRS:
            break
        if c not in out and eligible(c) and same_slot(c.content, new.content, q, slot_query_words):
            out.append(c)
    return out[:MAX_PAIRS]


def request(provider: Provider, pending: Pending) -> dict[str, object]:
    """The request for `pending`: the earlier statements numbered 1..n with their dates, no ids."""
    task = (
        f"New statement ({pending.when.date().isoformat()}): {pending.content}\n"
        "Rule on each earlier statement below against the new statement."
    )
    return provider.request(task, [f"({m.valid_from.date().isoformat()}) {m.content}" for m in pending.older], SYSTEM)


def parse(content: str, n: int) -> list[Verdict]:
    """The rulings of a reply, one for each of statements 1..n in order; ProviderError otherwise."""
    try:
        reply = msgspec.json.decode(content.strip(), type=_Reply)
    except msgspec.DecodeError:
        raise ProviderError('provider reply is not the JSON object {"rulings": [...]} with known rulings') from None
    rulings = sorted(reply.rulings, key=lambda v: v.statement)
    if [v.statement for v in rulings] != list(range(1, n + 1)):
        raise ProviderError(f"provider rulings: expected one for each of statements 1 to {n}")
    out = []
    for v in rulings:
        reason = " ".join(v.reason.split())[:MAX_REASON]
        if not reason:
            raise ProviderError("provider ruling without a reason")
        out.append(msgspec.structs.replace(v, reason=reason))
    return out


def rule(provider: Provider, pending: Pending) -> list[Verdict]:
    """The model's rulings on `pending` (cached by request hash); none if the provider fails (the
    rules decide, and a log line says why). ProviderCacheMissError (cache-only mode) is raised."""
    try:
        return provider.ask(request(provider, pending), lambda content: parse(content, len(pending.older)))
    except ProviderError as exc:
        log.warning("adjudication skipped, the supersession rules decide: %s", exc)
        return []


def settle(decision: Decision, pending: Pending, verdicts: Sequence[Verdict], current: Sequence[MemoryVersion],
           content: str) -> Decision:  # fmt: skip
    """`decision` (the rules', taken again inside the write unit) with the model's rulings applied:
    a ruling counts only for a memory that is still undecided (in `current`) with the content the
    model read. Unrelated, or no ruling: the rules' decision stands."""
    if decision.outcome != "created":
        return decision  # the rules decided meanwhile (a memory written since): they win
    still = {m.id: m for m in current}
    for wanted in SUPERSEDING:
        for v in verdicts:
            asked = pending.older[v.statement - 1]
            target = still.get(asked.id)
            if v.ruling not in wanted or target is None or target.content != asked.content:
                continue
            return Decision(
                "superseded",
                target=target,
                reason=f"model {v.ruling}: {v.reason}",
                similarity=round(jaccard(token_set(content), token_set(target.content)), 4),
                near=[n for n in decision.near if n.id != target.id],
            )
    return decision
