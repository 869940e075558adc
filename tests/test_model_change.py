"""A change of embedding model: every version (past ones too) re-embedded, online, resumable.

Opened with a model the store has no vectors of, the engine serves with the stored model while
a background thread gives every version a vector of the new one; then it swaps a vector index
of the new model in and serves with it. A store written with a model it cannot load is embedded
before opening instead (current versions; past ones follow in the background).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from agentmem import Memory
from agentmem.store import Store
from tests.fakes import FakeEmbedder


class NewModel(FakeEmbedder):
    """Another model of the same size: the fake's vectors, permuted (so they differ)."""

    name = "fake-new-64"

    def __init__(self, *, delay: float = 0.0, fail_after: int | None = None) -> None:
        super().__init__()
        self.delay, self.fail_after = delay, fail_after

    def embed(self, texts):  # type: ignore[no-untyped-def]
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise RuntimeError("the new model fell over")
        time.sleep(self.delay)
        return super().embed(texts)[:, ::-1].copy()


def _written(path: Path, clock, n: int = 30) -> list[int]:  # type: ignore[no-untyped-def]
    """`n` facts in the old model, each later superseded by a revision: 2n versions, n current."""
    with Memory(path, embedder=FakeEmbedder(), clock=clock) as mem:
        ids = [mem.remember(f"Service {i} listens on port {4000 + i}", project="p").memory.id for i in range(n)]
        clock.advance(days=1)
        for i, memory_id in enumerate(ids):
            mem.revise(memory_id, f"Service {i} moved to port {5000 + i}", reason="moved", actor="t")
    return ids


def _open(path: Path, new: FakeEmbedder, clock) -> Memory:  # type: ignore[no-untyped-def]
    old = FakeEmbedder()
    return Memory(path, embedder=new, clock=clock, embedders=lambda name: old if name == old.name else None)


def _wait(mem: Memory, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while mem.engine.serving.reembedding is not None and mem.engine.serving.reembedding.error is None:
        assert time.monotonic() < deadline, "re-embedding did not finish"
        time.sleep(0.02)


def _every_version_has(mem: Memory, model: str) -> None:
    assert mem.store.unembedded_count(model) == 0
    versions = mem.store.lineage(mem.get(1).lineage_id)
    assert len(mem.store.vectors([v.content_hash for v in versions], model)) == len(versions)


def test_new_model_serves_only_after_every_version_is_reembedded(data_dir, clock) -> None:  # type: ignore[no-untyped-def]
    _written(data_dir, clock)
    new = NewModel(delay=0.05)
    with _open(data_dir, new, clock) as mem:
        progress = mem.engine.serving.reembedding
        assert progress is not None and progress.model == new.name and progress.total == 60
        assert mem.embedder.name == FakeEmbedder.name  # the old vectors answer meanwhile
        assert "5007" in mem.recall("port of service 7", project="p")[0].memory.content
        _wait(mem)
        assert mem.engine.serving.reembedding is None and mem.embedder is new
        assert mem.indexes.vectors.model == new.name and mem.check().ok
        _every_version_has(mem, new.name)
        assert new.texts == 60  # each distinct text once
        # as_of answers from the past versions' new vectors
        past = mem.recall("port of service 7", project="p", as_of=clock.now - timedelta(hours=12))
        assert "4007" in past[0].memory.content


def test_after_the_switch_a_past_text_can_be_written_again(data_dir, clock) -> None:  # type: ignore[no-untyped-def]
    _written(data_dir, clock, n=5)
    with Memory(data_dir, embedder=NewModel(), clock=clock, embedders=lambda name: None) as mem:
        _wait(mem)  # the new model served at once; past versions embedded in the background
        r = mem.remember("Service 3 listens on port 4003", project="p")  # a superseded version's text
        assert r.outcome in ("created", "superseded") and mem.check().ok


def test_a_text_erased_during_reembedding_gets_no_vector_back(data_dir, clock) -> None:  # type: ignore[no-untyped-def]
    from agentmem.text import sha256

    _written(data_dir, clock, n=3)
    erased = threading.Event()

    class Held(NewModel):
        def embed(self, texts):  # type: ignore[no-untyped-def]
            if any("4001" in t for t in texts):
                erased.wait(10)  # the delete commits while this batch is embedded
            return super().embed(texts)

    with _open(data_dir, Held(), clock) as mem:
        lineage = mem.get(2).lineage_id
        victim = [v for v in mem.store.lineage(lineage) if "4001" in v.content][0]
        mem.delete(ids=[victim.id], reason="erase request", actor="t")
        erased.set()
        _wait(mem)
        assert mem.store.vectors([sha256("Service 1 listens on port 4001")], NewModel.name) == {}
        assert mem.check().ok


def test_writes_during_the_switch_keep_each_vector_under_its_model(data_dir, clock) -> None:  # type: ignore[no-untyped-def]
    _written(data_dir, clock, n=20)
    new, old = NewModel(delay=0.02), FakeEmbedder()
    with _open(data_dir, new, clock) as mem:
        stop = threading.Event()
        written: list[str] = []

        def writer(k: int) -> None:
            i = 0
            while not stop.is_set():
                text = f"Writer {k} note {i}: the cache holds {i * 7} entries"
                mem.remember(text, project="q")
                written.append(text)
                i += 1

        threads = [threading.Thread(target=writer, args=(k,)) for k in range(3)]
        for t in threads:
            t.start()
        _wait(mem)
        time.sleep(0.2)  # writes under the new model too
        stop.set()
        for t in threads:
            t.join()
        assert mem.embedder is new and written
        assert mem.check().ok
        from agentmem.text import sha256

        hashes = [sha256(t) for t in written]
        as_new = mem.store.vectors(hashes, new.name)
        assert len(as_new) == len(hashes)  # every write has a vector of the new model
        for text, h in zip(written, hashes, strict=True):
            assert np.allclose(as_new[h], new.embed([text])[0], atol=1e-6)  # and it is the new model's
        as_old = mem.store.vectors(hashes, old.name)
        for text, h in zip(written, hashes, strict=True):
            if h in as_old:
                assert np.allclose(as_old[h], old.embed([text])[0], atol=1e-6)


def test_a_failed_reembedding_keeps_serving_and_the_next_open_goes_on(data_dir, clock) -> None:  # type: ignore[no-untyped-def]
    _written(data_dir, clock, n=300)  # 600 versions: three batches of 256
    with _open(data_dir, NewModel(fail_after=1), clock) as mem:
        deadline = time.monotonic() + 30
        while mem.engine.serving.reembedding is not None and mem.engine.serving.reembedding.error is None:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        progress = mem.engine.serving.reembedding
        assert progress is not None and progress.error and "fell over" in progress.error
        assert progress.done == 256 and mem.embedder.name == FakeEmbedder.name
        assert mem.recall("port of service 3", project="p")
    new = NewModel()
    with _open(data_dir, new, clock) as mem:
        assert mem.engine.serving.reembedding is not None and mem.engine.serving.reembedding.total == 600 - 256
        _wait(mem)
        assert mem.embedder is new and mem.check().ok
    assert new.texts == 600 - 256  # what the first open stored was not embedded again


@pytest.mark.slow
def test_a_kill_mid_reembedding_resumes_where_it_stopped(data_dir, clock) -> None:  # type: ignore[no-untyped-def]
    _written(data_dir, clock, n=400)  # 800 versions: four batches
    root = Path(__file__).resolve().parents[1]
    child = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(root)!r})
        from agentmem import Memory
        from tests.fakes import FakeEmbedder
        from tests.test_model_change import NewModel
        old = FakeEmbedder()
        mem = Memory({str(data_dir)!r}, embedder=NewModel(delay=0.5),
                     embedders=lambda name: old if name == old.name else None)
        while mem.engine.serving.reembedding.done < 256:
            time.sleep(0.01)
        print("committed", mem.engine.serving.reembedding.done, flush=True)
        time.sleep(600)
    """)
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True, cwd=root)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().split()
        assert line[:1] == ["committed"], line
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    store = Store(data_dir / "agentmem.duckdb")
    try:
        left = store.unembedded_count(NewModel.name)
    finally:
        store.close()
    assert 0 < left <= 800 - 256  # the committed batches survived the kill
    new = NewModel()
    with _open(data_dir, new, clock) as mem:
        assert mem.engine.serving.reembedding is not None and mem.engine.serving.reembedding.total == left
        _wait(mem)
        assert mem.embedder is new and mem.check().ok
    assert new.texts == left


def test_an_unknown_stored_model_is_embedded_before_opening(data_dir, clock) -> None:  # type: ignore[no-untyped-def]
    _written(data_dir, clock, n=10)
    new = NewModel()
    with Memory(data_dir, embedder=new, clock=clock, embedders=lambda name: None) as mem:
        assert mem.embedder is new  # nothing to stand in: current versions embedded at open
        assert mem.store.unembedded_count(new.name, current_only=True) == 0
        _wait(mem)  # past versions in the background
        _every_version_has(mem, new.name)
        assert mem.check().ok


@pytest.mark.model
def test_switch_to_the_real_int8_model(data_dir, clock, real_embedder) -> None:  # type: ignore[no-untyped-def]
    from indexes.onnx_embed import OnnxEmbedder, embedder_named

    with Memory(data_dir, embedder=real_embedder, clock=clock) as mem:
        mem.remember("We deploy the shop API on Fly.io", project="shop")
        clock.advance(days=1)
        mem.remember("The billing service keeps invoices in PostgreSQL", project="shop")
        mid = mem.remember("The shop's CDN is Fastly", project="shop").memory.id
        mem.revise(mid, "The shop's CDN is Cloudflare", reason="switched", actor="t")
    int8 = OnnxEmbedder(int8=True)
    with Memory(data_dir, embedder=int8, clock=clock, embedders=embedder_named) as mem:
        _wait(mem, timeout=300)
        assert mem.embedder is int8 and mem.indexes.vectors.model == "all-MiniLM-L6-v2-int8"
        assert mem.check().ok and mem.store.unembedded_count(int8.name) == 0
        assert "invoices" in mem.recall("where are invoices stored?", project="shop")[0].memory.content
