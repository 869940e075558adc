"""Recovery: failed index writes, deleted or truncated index files, model changes, SIGKILL mid-burst."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from agentmem import Memory
from fakes import FakeEmbedder
from indexes.docs import IndexFailure

TESTS = Path(__file__).parent
ROOT = TESTS.parent


def _fill(mem: Memory, n: int = 30) -> list[int]:
    ids = [mem.remember(f"fact number {i} about subsystem {i * 7919 % 1000}", project="p").memory.id for i in range(n)]
    mem.remember("The API listens on port 8080", project="p", key="port")
    mem.remember("The API listens on port 4000", project="p", key="port")
    return ids


def test_index_write_raising_after_commit_loses_nothing(memory: Memory, monkeypatch, data_dir, embedder, clock):  # type: ignore[no-untyped-def]
    _fill(memory, 5)
    calls = {"n": 0}
    real_apply = memory.indexes.vectors.apply

    def flaky(*a, **k):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        raise IndexFailure("simulated hnswlib failure")

    monkeypatch.setattr(memory.indexes.vectors, "apply", flaky)
    r = memory.remember("The deploy runs at midnight", project="p")
    assert calls["n"] == 1 and memory.get(r.memory.id).is_latest  # acknowledged, in DuckDB
    monkeypatch.setattr(memory.indexes.vectors, "apply", real_apply)
    memory.close()
    with Memory(data_dir, embedder=embedder, clock=clock) as mem:
        assert mem.check().ok
        assert mem.recall("deploy midnight", project="p")[0].memory.id == r.memory.id


@pytest.mark.parametrize(
    "damage",
    ["delete_bm25_dir", "delete_vectors_dir", "delete_vector_graph", "truncate_vector_graph", "truncate_bm25_files",
     "garble_meta", "delete_index_dir"],
)  # fmt: skip
def test_damaged_index_is_rebuilt(damage: str, data_dir, embedder, clock) -> None:  # type: ignore[no-untyped-def]
    with Memory(data_dir, embedder=embedder, clock=clock) as mem:
        _fill(mem)
        expected = mem.indexes.source.indexable_ids()
    ix = data_dir / "index"
    if damage == "delete_bm25_dir":
        _rmtree(ix / "bm25")
    elif damage == "delete_vectors_dir":
        _rmtree(ix / "vectors")
    elif damage == "delete_vector_graph":
        next((ix / "vectors").glob("vectors.*.bin")).unlink()
    elif damage == "truncate_vector_graph":
        graph = next((ix / "vectors").glob("vectors.*.bin"))
        graph.write_bytes(graph.read_bytes()[:1000])
    elif damage == "truncate_bm25_files":
        for f in (ix / "bm25" / "tantivy").iterdir():
            if f.is_file() and f.suffix in (".idx", ".store", ".fast", ".term"):
                f.write_bytes(f.read_bytes()[: max(0, f.stat().st_size // 3)])
    elif damage == "garble_meta":
        (ix / "vectors" / "vectors.meta.json").write_text("{not json")
    elif damage == "delete_index_dir":
        _rmtree(ix)
    embedder.texts = 0
    with Memory(data_dir, embedder=embedder, clock=clock) as mem:
        assert mem.indexes.rebuilt, "the damage went unnoticed"
        report = mem.check()
        assert report.ok and report.expected == len(expected)
        assert mem.indexes.bm25.ids() == expected and mem.indexes.vectors.ids() == expected
        assert embedder.texts == 0  # rebuilt from stored vectors, nothing re-embedded
        assert "4000" in mem.recall("API port", project="p")[0].memory.content


def test_other_model_rebuilds_vectors(data_dir, embedder, clock) -> None:  # type: ignore[no-untyped-def]
    with Memory(data_dir, embedder=embedder, clock=clock) as mem:
        _fill(mem, 10)

    class Other(FakeEmbedder):
        name = "other-model-32"
        dim = 32

        def embed(self, texts):  # type: ignore[no-untyped-def]
            return super().embed(texts)[:, :32] * 1.0

    other = Other()
    with Memory(data_dir, embedder=other, clock=clock) as mem:
        assert "vectors" in mem.indexes.rebuilt
        assert other.texts == mem.stats().latest_active  # the new model embedded each current memory once
        assert mem.check().ok and mem.indexes.vectors.dim == 32


def test_rebuild_while_open(memory: Memory) -> None:
    _fill(memory, 20)
    report = memory.rebuild()
    assert report.ok
    memory.remember("Written after the rebuild", project="p")
    assert memory.check().ok
    assert memory.rebuild(["bm25"]).ok


def test_outbox_is_pruned_once_applied(memory: Memory) -> None:
    _fill(memory, 5)
    memory.flush()
    assert memory.store.scalar("SELECT count(*) FROM outbox") == 0
    assert memory.stats().outbox_pending == 0


WRITER = textwrap.dedent(
    """
    import sys
    sys.path[:0] = [{tests!r}, {root!r}]
    from agentmem import Memory
    from fakes import FakeEmbedder
    mem = Memory({data!r}, embedder=FakeEmbedder())
    print("ready", flush=True)
    i = 0
    while True:
        if i % 5 == 4:
            r = mem.remember(f"the service port for worker {{i // 5}} is {{i}}", project="p", key=f"port{{i // 5 % 7}}")
        else:
            r = mem.remember(f"burst fact {{i}} on topic {{i * 7919 % 997}} with detail {{i * 31}}", project="p")
        print(json.dumps({{"i": i, "id": r.memory.id, "outcome": r.outcome, "old": r.superseded_id}}), flush=True)
        i += 1
    """
).replace("import sys", "import json, sys")


@pytest.mark.slow
@pytest.mark.parametrize("kill_after", [0.3, 1.0, 2.5])
def test_sigkill_during_a_burst_loses_no_acknowledged_write(tmp_path: Path, kill_after: float) -> None:
    data = tmp_path / "data"
    for _round in range(2):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER.format(tests=str(TESTS), root=str(ROOT), data=str(data))],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(kill_after)
        os.kill(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        acked = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        assert proc.returncode == -signal.SIGKILL
        with Memory(data, embedder=FakeEmbedder()) as mem:
            report = mem.check()
            assert report.ok, report
            for a in acked:
                got = mem.get(a["id"])  # present
                if a["old"] is not None:
                    old = mem.get(a["old"])
                    assert old.superseded_by == a["id"] and not old.is_latest
                    assert got.parent_id == old.id and got.lineage_id == old.lineage_id
            lineages = (
                mem.store.cursor()
                .execute("SELECT lineage_id, count(*) FILTER (WHERE is_latest) FROM memories GROUP BY 1")
                .fetchall()
            )
            assert all(n == 1 for _, n in lineages)  # nothing half-written
            for h in mem.recall("service port worker", project="p", k=50):
                assert h.memory.is_latest


def _rmtree(p: Path) -> None:
    import shutil

    shutil.rmtree(p)
