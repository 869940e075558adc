"""Fault injection through the service: the model down, the index disk full, an outbox entry for a
memory deleted since. Each answers with a clear error or degrades, flags it, and recovers by itself."""

from __future__ import annotations

import errno
from collections.abc import Iterator, Sequence

import numpy as np
import pytest
from litestar.testing import TestClient

from agentmem import Memory
from api.app import create_app
from api.settings import load
from fakes import FakeEmbedder
from indexes.bm25 import BM25Index
from indexes.embed import EmbedderUnavailable
from tests.test_api import ENV, auth, remember


class Flaky(FakeEmbedder):
    """The fake embedder with a switch: while `down`, it fails like a model that cannot load."""

    def __init__(self) -> None:
        super().__init__()
        self.down = False

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.down:
            raise EmbedderUnavailable("cannot load the packaged model: injected fault")
        return super().embed(texts)


@pytest.fixture
def flaky() -> Flaky:
    return Flaky()


@pytest.fixture
def client(data_dir, flaky: Flaky, clock) -> Iterator[TestClient]:  # type: ignore[no-untyped-def,type-arg]
    mem = Memory(data_dir, embedder=flaky, clock=clock)
    env = {**ENV, "AGENTMEM_SWEEP_EVERY_MINUTES": "0", "AGENTMEM_CONSOLIDATE_EVERY_MINUTES": "0"}
    with TestClient(create_app(load(env=env), mem=mem)) as c:
        c.app.state.mem_for_test = mem
        yield c
    mem.close()


def test_model_down_degrades_to_bm25_and_recovers(client: TestClient, flaky: Flaky) -> None:  # type: ignore[type-arg]
    remember(client, "The invoices are stored in the billing bucket")
    remember(client, "Lunch orders go through the canteen app")
    remember(client, "The Café Noir policies forbid laptops at lunch")
    mem: Memory = client.app.state.mem_for_test
    flaky.down = True
    r = client.post("/v1/recall", json={"query": "where are the invoices stored"}, headers=auth("read"))
    assert r.status_code == 200
    body = r.json()
    assert body["hits"][0]["memory"]["content"].startswith("The invoices")  # BM25 still answers
    assert body["hits"][0]["parts"]["vector_rank"] is None and "BM25 only" in body["degraded"][0]
    ready = client.get("/ready", headers=auth("admin")).json()
    assert ready["degraded"] and "injected fault" in ready["degraded"][0]
    # as_of answers from DuckDB by the query's words, and says so too
    past = {"query": "where are the invoices stored", "as_of": "2100-01-01T00:00:00Z"}
    r = client.post("/v1/recall", json=past, headers=auth("read"))
    assert r.status_code == 200 and "BM25 only" in r.json()["degraded"][0]
    assert [h["memory"]["content"] for h in r.json()["hits"]] == ["The invoices are stored in the billing bucket"]
    # words are matched from their start, accents folded, plurals met through the stem
    past["query"] = "cafe policy"
    hits = client.post("/v1/recall", json=past, headers=auth("read")).json()["hits"]
    assert [h["memory"]["content"] for h in hits] == ["The Café Noir policies forbid laptops at lunch"]
    past["query"] = "unch"  # inside a word ("lunch") is no match
    assert client.post("/v1/recall", json=past, headers=auth("read")).json()["hits"] == []
    before = mem.stats()
    w = client.post("/v1/memories", json={"content": "A new fact while the model is down"}, headers=auth("write"))
    assert w.status_code == 503 and "injected fault" in w.json()["error"]["message"]
    assert mem.stats() == before  # nothing half-written
    flaky.down = False  # the fault clears: the next call works and the flag goes
    r = client.post("/v1/recall", json={"query": "where do invoices live"}, headers=auth("read"))
    assert r.json()["degraded"] == [] and r.json()["hits"][0]["parts"]["vector_rank"] is not None
    assert client.get("/ready", headers=auth("admin")).json()["degraded"] == []


def test_full_index_disk_keeps_writes_and_recovers(client: TestClient, monkeypatch) -> None:  # type: ignore[no-untyped-def,type-arg]
    mem: Memory = client.app.state.mem_for_test
    old = remember(client, "The release train leaves on Mondays", key="train")["memory"]["id"]
    real_apply = BM25Index.apply

    def full(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(BM25Index, "apply", full)
    new = remember(client, "The release train leaves on Thursdays", key="train")  # acknowledged: it is in DuckDB
    assert new["outcome"] == "superseded"
    ready = client.get("/ready", headers=auth("admin"))
    assert ready.status_code == 503 and ready.json()["index_stale"] is True
    hits = client.post("/v1/recall", json={"query": "release train leaves"}, headers=auth("read")).json()["hits"]
    assert old not in [h["memory"]["id"] for h in hits]  # the stale index never serves the dead version
    monkeypatch.setattr(BM25Index, "apply", real_apply)  # space again
    client.post("/v1/recall", json={"query": "release train"}, headers=auth("read"))  # the next call replays
    assert client.get("/ready", headers=auth("admin")).status_code == 200
    assert mem.check().ok and new["memory"]["id"] in mem.indexes.bm25.ids()


def test_outbox_entry_for_a_memory_deleted_since(client: TestClient, monkeypatch) -> None:  # type: ignore[no-untyped-def,type-arg]
    mem: Memory = client.app.state.mem_for_test
    real_apply = BM25Index.apply
    monkeypatch.setattr(BM25Index, "apply", lambda *a, **k: (_ for _ in ()).throw(OSError(errno.EIO, "I/O error")))
    gone = remember(client, "A memory that will be erased before the index sees it")["memory"]["id"]
    monkeypatch.setattr(BM25Index, "apply", real_apply)
    r = client.post("/v1/delete", json={"ids": [gone], "reason": "test"}, headers=auth("admin"))
    assert r.status_code == 200
    assert mem.check().ok and gone not in mem.indexes.bm25.ids() and gone not in mem.indexes.vectors.ids()
    assert client.get("/ready", headers=auth("admin")).status_code == 200


@pytest.mark.parametrize("depth", [100, 10_000])
def test_deeply_nested_json_is_a_4xx(client: TestClient, depth: int) -> None:  # type: ignore[type-arg]
    mem: Memory = client.app.state.mem_for_test
    before = mem.stats()
    body = '{"content": ' + "[" * depth + "]" * depth + "}"
    for path in ("/v1/memories", "/v1/recall", "/v1/delete", "/v1/observations"):
        r = client.post(path, content=body, headers={**auth("admin"), "content-type": "application/json"})
        assert 400 <= r.status_code < 500 and r.json()["error"]["message"], (path, r.status_code, r.text[:200])
    huge = '{"content": "x", "salience": 1' + "0" * 5000 + "}"
    r = client.post("/v1/memories", content=huge, headers={**auth("write"), "content-type": "application/json"})
    assert r.status_code == 400
    assert mem.stats() == before
