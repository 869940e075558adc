"""The quality benchmarks' embedder: the service's own by default, and vector caches kept apart per kind."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks import embedding, locomo, longmemeval
from benchmarks.harness.cli import parser
from benchmarks.harness.embedder import corpus_key
from benchmarks.harness.machine import machine_info
from indexes.embed import SentenceTransformerEmbedder
from indexes.onnx_embed import OnnxEmbedder


def fake(texts: list[str]) -> np.ndarray:
    v = np.array([[float(len(t)), 1.0, *([0.0] * 382)] for t in texts], dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


class Fake:
    def __init__(self, sign: float = 1.0) -> None:
        self.sign = sign

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.sign * fake(texts)


def test_the_cache_key_differs_per_embedder_kind(tmp_path: Path) -> None:
    names = {kind: embedding.cache_name(kind, embedding.model_name(kind)) for kind in embedding.KINDS}
    assert names == {"torch": "all-MiniLM-L6-v2", "onnx": "all-MiniLM-L6-v2-onnx",
                     "onnx-int8": "all-MiniLM-L6-v2-int8-onnx"}  # fmt: skip
    caches = {kind: embedding.vector_cache(kind, Fake(), tmp_path) for kind in embedding.KINDS}
    assert caches["torch"].path.name == "content-vectors-all-MiniLM-L6-v2.npy"  # the name it always had
    assert len({c.path for c in caches.values()}) == 3
    caches["onnx"].get(["we use postgres"])
    assert caches["onnx"].path.exists() and not caches["torch"].path.exists()
    # a fresh torch cache from the same folder does not see the ONNX vector; a fresh ONNX one does
    assert not embedding.vector_cache("torch", Fake(), tmp_path).has("we use postgres")
    assert embedding.vector_cache("onnx", Fake(), tmp_path).has("we use postgres")
    # the corpus caches (sick, claim pairs) are keyed the same way
    keys = {corpus_key(["a", "b"], names[k], 384) for k in embedding.KINDS}
    assert len(keys) == 3
    with pytest.raises(ValueError, match="unknown embedder kind"):
        embedding.cache_name("tensorflow", "all-MiniLM-L6-v2")


def test_the_embedder_option_defaults_to_what_the_service_uses(monkeypatch: pytest.MonkeyPatch) -> None:
    p = parser("x", None)
    embedding.add_arguments(p)
    assert embedding.kind_of(p.parse_args([])) == "onnx"
    monkeypatch.setenv("AGENTMEM_EMBEDDER", "torch")
    assert embedding.kind_of(p.parse_args([])) == "torch"
    assert embedding.kind_of(p.parse_args(["--embedder", "onnx-int8"])) == "onnx-int8"
    monkeypatch.setenv("AGENTMEM_EMBEDDER", "tensorflow")
    with pytest.raises(SystemExit, match="AGENTMEM_EMBEDDER must be one of"):
        embedding.kind_of(p.parse_args([]))
    with pytest.raises(SystemExit):
        p.parse_args(["--embedder", "tensorflow"])
    # every quality benchmark that parses into a Namespace has the option
    assert longmemeval.parse_args(["--embedder", "torch"]).embedder == "torch"
    assert locomo.parse_args([]).embedder is None


def test_each_kind_runs_its_own_runtime_without_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    onnx = embedding.model_embedder("onnx")
    assert isinstance(onnx, OnnxEmbedder) and onnx.fallback is None and not onnx.int8 and onnx.threads == 1
    int8 = embedding.model_embedder("onnx-int8")
    assert isinstance(int8, OnnxEmbedder) and int8.int8 and int8.name == embedding.model_name("onnx-int8")
    assert isinstance(embedding.model_embedder("torch"), SentenceTransformerEmbedder)
    monkeypatch.setenv("AGENTMEM_EMBED_THREADS", "2")
    assert embedding.model_embedder("onnx").threads == 2
    assert embedding.info("onnx")["threads"] == 2


def test_real_onnx_vectors_are_cached_as_onnx_and_recorded(tmp_path: Path) -> None:
    model = embedding.model_embedder("onnx")
    cache = embedding.vector_cache("onnx", model, tmp_path)
    v = cache.get(["we deploy the shop API on Fly.io", "the cat sat on the mat"])
    assert v.shape == (2, 384) and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert cache.path.name == "content-vectors-all-MiniLM-L6-v2-onnx.npy"
    rec = embedding.info("onnx", model)
    assert rec["kind"] == "onnx" and rec["backend"].startswith("onnxruntime") and rec["vectors"].endswith("-onnx")
    machine = machine_info(rec)
    assert machine["embedder"] == rec and "torch_threads" not in machine  # torch not loaded for an ONNX run
    assert machine["versions"]["onnxruntime"]
    assert "embedder onnx (all-MiniLM-L6-v2 on onnxruntime" in embedding.describe(rec)


def test_agreement_of_two_caches(tmp_path: Path) -> None:
    a = embedding.vector_cache("onnx", Fake(), tmp_path)
    b = embedding.vector_cache("torch", Fake(), tmp_path)
    a.get(["one", "three", "only in a"])
    b.get(["one", "three"])
    got = embedding.agreement(a, b)
    assert got["texts"] == 2 and got["min"] == pytest.approx(1.0) and got["below_0.9999"] == 0
    assert got["largest_1_minus_cosine"] < 1e-6
    c = embedding.vector_cache("onnx", Fake(-1.0), tmp_path / "neg")
    c.get(["one"])
    assert embedding.agreement(c, b)["min"] == pytest.approx(-1.0)


def test_caches_built_apart_merge(tmp_path: Path) -> None:
    a = embedding.vector_cache("onnx", Fake(), tmp_path / "a")
    b = embedding.vector_cache("onnx", Fake(), tmp_path / "b")
    a.get(["one", "two"])
    b.get(["two", "three"])
    assert a.merge(b) == 1 and a.merge(b) == 0
    again = embedding.vector_cache("onnx", Fake(), tmp_path / "a")  # saved
    assert len(again) == 3 and np.allclose(again.get(["three"]), fake(["three"]))
    with pytest.raises(ValueError, match="cannot merge"):
        a.merge(embedding.vector_cache("torch", Fake(), tmp_path / "b"))


def _hits(path: Path, kind: str | None) -> Path:
    meta = {"command": "c", "data": ["d"], "questions": 1, "embedding_seconds": 0, "texts_embedded": 0,
            "total_seconds": 1} | ({"embedder": {"kind": kind}} if kind else {})  # fmt: skip
    with gzip.open(path, "wt") as f:
        f.write(json.dumps({"id": "q", "hits": {}}) + "\n" + json.dumps({"meta": meta}) + "\n")
    return path


def test_from_hits_keeps_the_embedder_and_refuses_a_mix(tmp_path: Path) -> None:
    a, b = _hits(tmp_path / "a.jsonl.gz", "onnx"), _hits(tmp_path / "b.jsonl.gz", "onnx")
    assert longmemeval.read_hits([a, b])[1]["embedder"] == {"kind": "onnx"}
    c = _hits(tmp_path / "c.jsonl.gz", "torch")
    with pytest.raises(SystemExit, match="different embedders"):
        longmemeval.read_hits([a, c])
    old = _hits(tmp_path / "old.jsonl.gz", None)  # written before the option: no embedder recorded
    assert longmemeval.read_hits([old])[1]["embedder"] is None


class HashEmbedder(Fake):
    """A stand-in for the model in an end-to-end run of a benchmark (no model load): a hashed bag of words."""

    name, dim, backend = "all-MiniLM-L6-v2", 384, "fake"

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, hash(w) % 384] += 1.0
        out[:, 0] += 1e-3
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_locomo_records_its_embedder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not locomo.DEFAULT_DATA.joinpath(locomo.LOCOMO).exists():
        pytest.skip("no LoCoMo data")
    monkeypatch.setattr(locomo, "model_embedder", lambda kind: HashEmbedder())
    argv = ["--limit", "1", "--no-ablations", "--embedder", "onnx-int8", "--cache-dir", str(tmp_path / "c"),
            "--work-dir", str(tmp_path), "--out", str(tmp_path / "out")]  # fmt: skip
    assert locomo.main(argv) == 0
    res = json.loads((tmp_path / "out" / "locomo.json").read_text())
    assert res["embedder"]["kind"] == "onnx-int8" and res["machine"]["embedder"] == res["embedder"]
    assert (tmp_path / "c" / "content-vectors-all-MiniLM-L6-v2-int8-onnx.npy").exists()
    assert "embedder onnx-int8" in (tmp_path / "out" / "locomo.md").read_text()


def test_types_keeps_questions_of_those_types_only(tmp_path: Path) -> None:
    path = tmp_path / "longmemeval_s_part.jsonl.gz"
    rows = [
        {"question_id": f"q{i}", "question_type": t} for i, t in enumerate(["temporal-reasoning", "multi-session"] * 3)
    ]
    with gzip.open(path, "wt") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rows))
    args = longmemeval.parse_args(["--data", str(path), "--types", "temporal-reasoning, knowledge-update"])
    assert args.types == ["temporal-reasoning", "knowledge-update"]
    kept = longmemeval.load(args.data, 2, args.types)
    assert [q["question_id"] for q in kept] == ["q0", "q2"] and {q["half"] for q in kept} == {"part"}
    assert len(longmemeval.load(args.data, None)) == 6
    recorded = _hits(tmp_path / "h.jsonl.gz", "onnx")
    with gzip.open(recorded, "rt") as f:
        lines = [json.loads(line) for line in f]
    with gzip.open(recorded, "wt") as f:  # a recorded question has its type
        f.write("".join(json.dumps(r | ({} if "meta" in r else {"type": "multi-session"})) + "\n" for r in lines))
    with pytest.raises(SystemExit, match="no recorded questions of the types nothing-such"):
        longmemeval.main(["--from-hits", str(recorded), "--types", "nothing-such"])
