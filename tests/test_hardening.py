"""Regressions from review: hostile imports, interrupted rebuilds, non-index errors after commit."""

from __future__ import annotations

import json
from typing import Any

import pytest
from litestar.testing import TestClient

from agentmem import Memory, ValidationError
from api.app import create_app
from api.settings import load

T = "2026-01-01T00:00:00Z"


def _line(**memory: Any) -> str:
    base = {"id": 10, "lineage_id": 10, "version": 1, "parent_id": None, "is_latest": True, "status": "active",
            "content": "imported", "tier": "semantic", "kind": "fact", "project": "evil", "source": "import",
            "salience": 0.5, "confidence": 0.7, "created_at": T, "valid_from": T, "last_reinforced_at": T}  # fmt: skip
    return json.dumps({"type": "memory", "memory": {**base, **memory}})


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"id": 2**63 - 1, "lineage_id": 2**63 - 1}, "not a memory id"),
        ({"id": 0, "lineage_id": 0}, "not a memory id"),
        ({"lineage_id": 1}, "lineage_id 1 is not a version of the same project"),
        ({"parent_id": 1, "version": 2}, "parent_id 1"),
        ({"source_ids": [2**60]}, "not a memory id"),
    ],
)
def test_hostile_import_is_refused(memory: Memory, fields: dict[str, Any], message: str) -> None:
    victim = memory.remember("The vault code is 1234", project="victim").memory
    assert victim.id == 1
    with pytest.raises(ValidationError, match=message):
        memory.import_lines([_line(**fields)])
    assert memory.stats().versions == 1
    assert memory.remember("Still writable afterwards", project="victim").memory.id == 2


def test_import_cannot_plant_vectors_for_other_projects(memory: Memory, embedder) -> None:  # type: ignore[no-untyped-def]
    header = json.dumps({"type": "header", "format": "agentmem-export", "format_version": 1, "schema_version": 1,
                         "model": embedder.name, "dim": embedder.dim, "exported_at": T})  # fmt: skip
    bogus = [1.0] + [0.0] * (embedder.dim - 1)
    line = json.dumps(
        {**json.loads(_line(content="Deploy keys live in the vault", content_hash="x")), "embedding": bogus}
    )
    with TestClient(create_app(load(env={"AGENTMEM_TOKENS": "e:evil-writer-secret-0001:write:evil"}), mem=memory)) as c:
        r = c.post(
            "/v1/import",
            content=f"{header}\n{line}\n".encode(),
            headers={"Authorization": "Bearer evil-writer-secret-0001"},
        )
        assert r.status_code == 201, r.text
    got = memory.store.cursor().execute("SELECT vector FROM embeddings").fetchall()
    assert len(got) == 1 and got[0][0] != bogus  # the writer's vector was ignored, the content embedded here
    assert memory.get(10).content_hash != "x"


def test_tokens_need_real_project_names() -> None:
    with pytest.raises(ValidationError, match="may not be empty"):
        load(env={"AGENTMEM_TOKENS": "e:a-long-enough-secret:read:evil,"})


def test_interrupted_startup_rebuild_is_finished_next_time(data_dir, embedder, clock, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import shutil

    from indexes.sync import IndexSet

    with Memory(data_dir, embedder=embedder, clock=clock) as mem:
        for i in range(30):
            mem.remember(f"fact {i} about subsystem {i * 7919 % 1000}", project="p")
    shutil.rmtree(data_dir / "index" / "bm25")

    def crash(self, ix, desc):  # type: ignore[no-untyped-def]
        ix.apply([], [], seq=0)
        raise KeyboardInterrupt  # Ctrl-C in the middle of the progress bar

    real = IndexSet._fill
    monkeypatch.setattr(IndexSet, "_fill", crash)
    with pytest.raises(KeyboardInterrupt):
        Memory(data_dir, embedder=embedder, clock=clock)
    monkeypatch.setattr(IndexSet, "_fill", real)
    with Memory(data_dir, embedder=embedder, clock=clock) as mem:
        report = mem.check()
        assert report.ok and report.indexes[0].count == 30


def test_any_index_error_after_commit_acknowledges_the_write(memory: Memory, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def broken(*_: object) -> int:
        raise RuntimeError("hnswlib: cannot open file for writing")

    monkeypatch.setattr(memory.indexes, "apply", broken)  # the write's own index step
    monkeypatch.setattr(memory.indexes, "sync", broken)  # and the replay
    r = memory.remember("Written while the index disk is full", project="p")
    assert r.outcome == "created" and memory.index_stale
    monkeypatch.undo()
    assert memory.recall("index disk full", project="p")[0].memory.id == r.memory.id
    assert not memory.index_stale and memory.check().ok


def test_http_bad_numbers_and_times_are_4xx(memory: Memory) -> None:
    with TestClient(create_app(load(env={}), mem=memory), base_url="http://127.0.0.1") as c:
        c.post("/v1/memories", json={"content": "The API port is 8080", "project": "p", "key": "port"})
        assert c.get("/v1/memories/" + "9" * 40).status_code == 404
        assert c.get("/v1/memories", params={"cursor": "9" * 40}).status_code == 400
        r = c.post("/v1/memories", json={"content": "x", "project": "p", "source_ids": [2**63]})
        assert r.status_code == 400
        r = c.post(
            "/v1/memories/1/versions", json={"content": "The API port is 4000", "expires_at": "2001-01-01T00:00:00"}
        )
        assert r.status_code == 400 and "past" in r.json()["error"]["message"]


def test_round_trip_still_exact_after_hardening(memory: Memory, tmp_path, embedder, clock) -> None:  # type: ignore[no-untyped-def]
    memory.remember("The API listens on port 8080", project="p", key="port")
    memory.remember("The API listens on port 4000", project="p", key="port")
    lines = list(memory.export_lines())
    with Memory(tmp_path / "copy", embedder=embedder, clock=clock) as other:
        other.import_lines(lines)
        assert list(other.export_lines())[1:] == lines[1:]
