"""The real packaged MiniLM model through the real store and indexes (marked `model`; CI runs them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from agentmem import Memory

pytestmark = pytest.mark.model


def test_embedder_gives_unit_vectors_offline(real_embedder) -> None:  # type: ignore[no-untyped-def]
    # ONNX Runtime reads the packaged files and nothing else; the torch fallback runs offline
    assert real_embedder.backend.startswith("onnxruntime") or os.environ.get("HF_HUB_OFFLINE") == "1"
    v = real_embedder.embed(["We use Postgres", "We use MySQL", "The cat sat on the mat"])
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert float(v[0] @ v[1]) > float(v[0] @ v[2])
    assert np.allclose(real_embedder.embed(["We use Postgres"])[0], v[0], atol=1e-5)


def test_semantic_recall_and_supersession(tmp_path: Path, real_embedder) -> None:  # type: ignore[no-untyped-def]
    with Memory(tmp_path / "d", embedder=real_embedder) as mem:
        old = mem.remember("Our production database for the shop backend is PostgreSQL", project="shop").memory
        mem.remember("The office dog is called Biscuit", project="shop")
        mem.remember("Deployments go out every Tuesday afternoon", project="shop")
        new = mem.remember("Our production database for the shop backend is MySQL", project="shop")
        assert new.outcome == "superseded" and new.superseded_id == old.id
        hits = mem.recall("which relational DB do we run in prod?", project="shop", k=3)
        assert hits[0].memory.id == new.memory.id
        assert old.id not in [h.memory.id for h in hits]
        assert hits[0].parts.cosine is not None and hits[0].parts.cosine > 0.4
        # a paraphrase with no shared keyword still finds it through the vector side
        assert mem.recall("when do we ship releases", project="shop", k=1)[0].memory.content.startswith("Deployments")
        assert mem.check().ok


def test_a_fact_added_beside_another_keeps_it_current(tmp_path: Path, real_embedder) -> None:  # type: ignore[no-untyped-def]
    # the value rules alone retire the first of each pair (a new value for one slot); the pair
    # model's word weights say the second is added beside it, and a swapped value still retires
    with Memory(tmp_path / "d", embedder=real_embedder) as mem:
        pairs = [("api", "Our API supports JSON.", "Our API also supports XML."),
                 ("people", "Tomas speaks Portuguese.", "Tomas also speaks Italian.")]  # fmt: skip
        for project, older, newer in pairs:
            first = mem.remember(older, project=project).memory
            second = mem.remember(newer, project=project)
            assert second.outcome == "created", (newer, second.reason)
            assert mem.get(first.id).is_latest
        mem.remember("Our production database for the shop backend is PostgreSQL", project="shop")
        swapped = mem.remember("Our production database for the shop backend is MySQL", project="shop")
        assert swapped.reason == "new value"


def test_a_new_answer_retires_the_older_answer_and_the_paraphrase(tmp_path: Path, real_embedder) -> None:  # type: ignore[no-untyped-def]
    # a paraphrase of the question with the new answer stays beside the old answer (another
    # question); the question asked again with that answer restates one and answers the other anew
    with Memory(tmp_path / "d", embedder=real_embedder) as mem:
        older = mem.remember("Who chairs the city's transport committee? Ana Duarte.", project="p").memory
        paraphrase = mem.remember("Who is the chair of the city's transport committee? Rui Matos.", project="p").memory
        assert mem.get(older.id).is_latest
        r = mem.remember("Who chairs the city's transport committee? Rui Matos.", project="p")
        assert r.outcome == "superseded" and {r.superseded_id, *r.also_superseded} == {older.id, paraphrase.id}
        hits = mem.recall("who chairs the transport committee?", project="p", k=5)
        assert [h.memory.id for h in hits] == [r.memory.id]


def test_vectors_survive_reopen_without_reembedding(tmp_path: Path, real_embedder) -> None:  # type: ignore[no-untyped-def]
    with Memory(tmp_path / "d", embedder=real_embedder) as mem:
        mem.remember("The staging cluster lives in eu-west-1", project="p")
    calls = []
    original = real_embedder.embed

    def counting(texts):  # type: ignore[no-untyped-def]
        calls.append(list(texts))
        return original(texts)

    real_embedder.embed = counting
    try:
        import shutil

        shutil.rmtree(tmp_path / "d" / "index")
        with Memory(tmp_path / "d", embedder=real_embedder) as mem:
            assert mem.check().ok and calls == []  # rebuilt from DuckDB's vectors
            assert mem.recall("where does staging run", project="p")[0].memory.content.endswith("eu-west-1")
    finally:
        del real_embedder.embed


def test_cli_end_to_end_with_the_real_model(tmp_path: Path) -> None:
    env = {**os.environ, "AGENTMEM_DATA_DIR": str(tmp_path / "cli")}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agentmem", *args], capture_output=True, text=True, env=env, timeout=300
        )

    first = cli("remember", "The API listens on port 8080", "--project", "shop", "--key", "api.port")
    assert first.returncode == 0, first.stderr
    second = cli("remember", "We're on 4000 now", "--project", "shop", "--key", "api.port")
    assert second.returncode == 0 and "superseded" in second.stdout
    found = cli("recall", "what port does the API use", "--project", "shop")
    assert found.returncode == 0 and "4000" in found.stdout and "8080" not in found.stdout
    bad = cli("remember", "", "--project", "shop")
    assert bad.returncode == 2 and "content may not be empty" in bad.stderr


def test_lifecycle_with_the_real_model(tmp_path: Path, real_embedder) -> None:  # type: ignore[no-untyped-def]
    """Decay, sweep, restore and governance delete through the real model and both real indexes."""
    from conftest import Clock

    clock = Clock()
    with Memory(tmp_path / "d", embedder=real_embedder, clock=clock) as mem:
        obs = mem.remember("Saw the nightly build take forty minutes", project="p", kind="observation").memory
        fact = mem.remember("The nightly build runs on the Jenkins server", project="p").memory
        secret = mem.remember("The staging admin password is hunter2quokka", project="p").memory
        clock.advance(days=30)
        assert mem.retention(obs.id).tier == "evictable" and mem.retention(fact.id).tier == "warm"
        assert mem.sweep().archived == 1
        hits = mem.recall("how long does the nightly build take", project="p", k=3)
        assert obs.id not in [h.memory.id for h in hits] and hits[0].memory.id == fact.id
        mem.restore(obs.id)
        assert mem.recall("how long does the nightly build take", project="p", k=1)[0].memory.id == obs.id
        vector = real_embedder.embed([secret.content])[0]
        mem.delete(ids=[secret.id], reason="credential pasted by mistake")
        assert secret.id not in [i for i, _ in mem.indexes.search_vector(vector, 10)]
        assert mem.indexes.search_text("hunter2quokka", 10) == []
        assert secret.id not in [h.memory.id for h in mem.recall("staging admin password", project="p", k=5)]
        assert mem.check().ok


def test_consolidation_with_the_real_model(tmp_path: Path, real_embedder) -> None:  # type: ignore[no-untyped-def]
    """Paraphrased evidence from two sessions becomes one semantic memory; a different subject stays apart."""
    from agentmem import NewMemory

    def seen(text: str, session: str) -> None:
        mem.observe([NewMemory(content=text, project="p", kind="observation", tier="working", session=session)])

    with Memory(tmp_path / "d", embedder=real_embedder) as mem:
        seen("The user prefers dark mode in the editor", "s1")
        seen("The user likes the editor in dark mode", "s2")
        seen("The download test is flaky on the CI runner", "s1")
        seen("The upload test is flaky on the CI runner", "s2")
        (report,) = mem.consolidate(passes=["semantic"])
        assert report.semantic.created == 1
        (sem,) = [mem.get(i) for i in report.memory_ids]
        assert "dark mode" in sem.content and mem.provenance(sem.id).sessions == ["s1", "s2"]
        hits = mem.recall("which colour theme does the user want", project="p", tiers=["semantic"], k=1)
        assert hits[0].memory.id == sem.id
