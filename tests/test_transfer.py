"""Export / import as JSON Lines: the round trip loses nothing, versions and links included."""

from __future__ import annotations

import io
import json

import pytest

from agentmem import ConflictError, Memory, ValidationError

BACKENDS = ("duckdb", "postgres")  # tests taking `memory` run on both (see conftest.py)


def _export(mem: Memory) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for line in mem.export_lines()]


def test_round_trip_loses_nothing(tmp_path, embedder, clock) -> None:  # type: ignore[no-untyped-def]
    from agentmem.records import Triple

    with Memory(tmp_path / "a", embedder=embedder, clock=clock) as src:
        _populate_fixed(src, clock, Triple)
        first = _export(src)
    buf = b"".join(json.dumps(x).encode() + b"\n" for x in first)
    embedder.texts = 0
    with Memory(tmp_path / "b", embedder=embedder, clock=clock) as dst:
        assert dst.import_lines(io.BytesIO(buf)) == len(first) - 1 - sum(x["type"] in ("link", "audit") for x in first)
        assert embedder.texts == 0  # vectors came from the file
        second = _export(dst)
        assert dst.check().ok
        current = [m["memory"] for m in first if m["type"] == "memory" and "green CI" in m["memory"]["content"]]
        hits = dst.recall("migration lock and green CI", project="p")
        assert hits[0].memory.id == current[0]["id"] and hits[0].memory.version == 2
        assert current[0]["parent_id"] not in [h.memory.id for h in hits]  # the superseded version stays out
        # ids keep going after the imported ones
        assert dst.remember("A new fact after import", project="p").memory.id > max(
            x["memory"]["id"] for x in first if x["type"] == "memory"
        )
    assert first[1:] == second[1:]  # the audit log too (into an empty store its ids are the same)
    assert {x["type"] for x in first} == {"header", "memory", "link", "audit"}


def _populate_fixed(mem: Memory, clock, Triple) -> None:  # type: ignore[no-untyped-def]
    a = mem.remember("ran the deploy, it failed on migrations", project="p", kind="event", session="s1").memory
    mem.remember("Deploys need the migration lock", project="p", kind="lesson", source_ids=[a.id], key="deploy.lock")
    clock.advance(days=2)
    mem.remember("Deploys need the migration lock and a green CI", project="p", kind="lesson", key="deploy.lock")
    mem.remember("Alice leads payments", project="q", triple=Triple("Alice", "leads", "payments"))
    mem.remember("We use Postgres for the main database of the shop", project="p", ttl_days=30, pinned=True)
    mem.remember("We use Postgres for the main database of the shop", project="p")
    mem.recall("deploy", project="p")
    mem.flush()


def test_import_refuses_ids_in_use(tmp_path, embedder, clock) -> None:  # type: ignore[no-untyped-def]
    with Memory(tmp_path / "a", embedder=embedder, clock=clock) as src:
        src.remember("one fact", project="p")
        lines = list(src.export_lines())
        with pytest.raises(ConflictError, match="already in this store"):
            src.import_lines(lines)
        assert src.stats().versions == 1


@pytest.mark.parametrize(
    "line",
    [b"{not json", b'{"type": "memory", "memory": {"id": "x"}}', b'{"type": "unknown"}',
     b'{"type": "link", "link": {"src_id": 5, "dst_id": 6, "kind": "friend", "created_at": "2026-01-01T00:00:00Z"}}'],
)  # fmt: skip
def test_bad_import_writes_nothing(memory: Memory, line: bytes) -> None:
    good = list(memory.export_lines())
    with pytest.raises(ValidationError):
        memory.import_lines([*good, line])
    assert memory.stats().versions == 0


def test_import_embeds_when_the_model_differs(tmp_path, embedder, clock) -> None:  # type: ignore[no-untyped-def]
    with Memory(tmp_path / "a", embedder=embedder, clock=clock) as src:
        src.remember("one fact about caching", project="p")
        lines = [json.loads(x) for x in src.export_lines()]
    lines[0]["model"] = "some-other-model"
    embedder.texts = 0
    with Memory(tmp_path / "b", embedder=embedder, clock=clock) as dst:
        dst.import_lines([json.dumps(x) for x in lines])
        assert embedder.texts == 1 and dst.check().ok
