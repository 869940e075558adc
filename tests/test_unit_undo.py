"""A failed job of a batch leaves its unit exactly as the job found it: what the unit will write,
and what it reads back (by id, key and triple slot), whatever the job had changed before it failed."""

from __future__ import annotations

import copy
import itertools
from datetime import UTC, datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agentmem.audit import AuditEntry
from agentmem.live import LiveSet
from agentmem.records import MemoryVersion, NewMemory, Triple
from agentmem.unit import Changes, Write

NOW = datetime(2026, 6, 1, tzinfo=UTC)
KEYS = ("a", "b", None)


def _state(w: Write, ids: range) -> Any:
    c = w.changes
    fields = {
        f: copy.deepcopy(getattr(c, f)) for f in Changes.__dataclass_fields__ if f not in ("journal", "embeddings")
    }
    return (
        fields,
        sorted(c.embeddings),
        {i: w.get(i) for i in ids},
        {k: w.by_key("p", k) for k in KEYS if k},
        w.by_slot("p", "user/city"),
    )


OPS = st.lists(
    st.tuples(st.sampled_from(["insert", "supersede", "archive", "erase", "link", "audit", "embed"]),
              st.sampled_from(KEYS), st.integers(0, 9)),
    min_size=1, max_size=6,
)  # fmt: skip


@given(jobs=st.lists(st.tuples(OPS, st.booleans()), min_size=1, max_size=8))
def test_a_failed_job_is_undone_exactly(jobs: list[tuple[list[tuple[str, str | None, int]], bool]]) -> None:
    ids = itertools.count(1)
    base = MemoryVersion(
        id=1000, lineage_id=1000, version=1, parent_id=None, is_latest=True, status="active", content="base",
        tier="semantic", kind="fact", project="p", source="api", salience=0.5, confidence=0.9, created_at=NOW,
        valid_from=NOW, last_reinforced_at=NOW, content_hash="h-base", key="a",
    )  # fmt: skip
    w = Write(LiveSet([base]), lambda: next(ids), NOW, lambda kind: 0.8)

    def current() -> list[MemoryVersion]:
        return [v for i in [*range(1, 60), 1000] if (v := w.get(i)) is not None]

    for ops, fails in jobs:
        mark, before = w.mark(), _state(w, range(1, 60))
        try:
            for op, key, n in ops:
                live = current()
                if op == "insert":
                    triple = Triple(subject="user", predicate="city", object=str(n)) if n % 3 == 0 else None
                    new = NewMemory(content=f"text {n}", project="p", key=key, triple=triple)
                    w.insert(new, content_hash=f"h{n}")
                elif op == "supersede" and live:
                    old = live[n % len(live)]
                    by = w.insert(NewMemory(content=f"new {n}", project="p"), content_hash=f"n{n}", replaces=old)
                    w.supersede(old, by, "test", 0.9)
                elif op == "archive" and live:
                    w.retire([(live[n % len(live)], "archived", "test")])
                elif op == "erase" and live:
                    w.erase([live[n % len(live)]], "test", [])
                elif op == "link":
                    w.link(n, n + 1)
                elif op == "audit":
                    w.audit([AuditEntry(created_at=NOW, action="remember", actor="t", affected=1)])
                elif op == "embed":
                    w.embedding(f"e{n}", [float(n)])  # type: ignore[arg-type]
            if fails:
                raise RuntimeError("the job fails after its changes")
        except Exception:
            w.reset(mark)
            assert _state(w, range(1, 60)) == before
