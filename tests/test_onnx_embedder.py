"""The ONNX Runtime embedder: the torch model's vectors, exported once and checked by hash, with
torch as the fallback."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fakes import FakeEmbedder
from indexes import onnx_embed
from indexes.embed import EmbedderUnavailable, SentenceTransformerEmbedder
from indexes.onnx_embed import OnnxEmbedder, default_embedder, embedder_named

REPO = Path(__file__).resolve().parents[1]


def real_sentences(n: int) -> list[str]:
    """`n` distinct sentences of real prose: this repository's documents and the model's card."""
    docs = sorted(REPO.glob("*.md")) + sorted(REPO.glob("docs/**/*.md")) + sorted(REPO.glob("benchmarks/*.py"))
    docs += sorted(REPO.glob("agentmem/*.py"))
    docs.append(onnx_embed.weights_dir() / "README.md")
    seen: dict[str, None] = {}
    for doc in docs:
        for part in re.split(r"(?<=[.!?])\s+|\n\s*\n", doc.read_text(encoding="utf-8")):
            text = " ".join(part.split())
            if len(text.split()) >= 4:
                seen.setdefault(text[:1000], None)
    assert len(seen) >= n, f"only {len(seen)} sentences"
    return list(seen)[:n]


@pytest.mark.model
def test_onnx_vectors_are_the_torch_models_vectors() -> None:
    texts = real_sentences(1000)
    onnx = OnnxEmbedder()
    a = onnx.embed(texts)
    b = SentenceTransformerEmbedder().embed(texts)
    assert onnx.backend.startswith("onnxruntime")
    assert a.shape == b.shape == (1000, 384) and a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    cosines = (a * b).sum(axis=1)
    assert float(cosines.min()) >= 0.999, f"lowest cosine {cosines.min():.5f}"
    assert onnx.name == SentenceTransformerEmbedder.name  # interchangeable: the same model name


@pytest.mark.model
def test_the_service_process_never_loads_torch() -> None:
    code = (
        "import sys; from indexes.onnx_embed import default_embedder; e = default_embedder(); e.embed(['hi']);"
        "print(e.backend, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO).stdout
    assert out.startswith("onnxruntime") and out.strip().endswith("False")


def _fake_export(calls: list[Path]):  # type: ignore[no-untyped-def]
    def export(target: Path, weights: Path) -> None:
        calls.append(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"model bytes")
        meta = {"weights_bytes": weights.stat().st_size, "onnx_sha256": onnx_embed.sha256_of(target)}
        target.with_suffix(".json").write_text(json.dumps(meta))

    return export


def test_the_export_is_cached_and_redone_when_damaged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Path] = []
    monkeypatch.setattr(onnx_embed, "export", _fake_export(calls))
    first = onnx_embed.model_file(tmp_path)
    assert onnx_embed.model_file(tmp_path) == first and len(calls) == 1  # the record matches: no export
    first.write_bytes(b"model bytez")  # damaged (or replaced) since the export
    onnx_embed.model_file(tmp_path)
    assert len(calls) == 2
    record = json.loads(first.with_suffix(".json").read_text())
    record["weights_bytes"] += 1  # exported from other weights
    first.with_suffix(".json").write_text(json.dumps(record))
    onnx_embed.model_file(tmp_path)
    assert len(calls) == 3


def test_the_cache_directory_follows_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTMEM_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert onnx_embed.cache_dir() == tmp_path / "xdg" / "agentmem"
    monkeypatch.setenv("AGENTMEM_CACHE_DIR", str(tmp_path / "mine"))
    assert onnx_embed.cache_dir() == tmp_path / "mine"


def test_a_failed_export_falls_back_with_a_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog) -> None:  # type: ignore[no-untyped-def]
    def broken(target: Path, weights: Path) -> None:
        raise EmbedderUnavailable("cannot export all-MiniLM-L6-v2 to ONNX: no space left")

    monkeypatch.setattr(onnx_embed, "export", broken)
    fallback = FakeEmbedder()
    e = OnnxEmbedder(directory=tmp_path, fallback=fallback)
    with caplog.at_level("WARNING"):
        v = e.embed(["we use postgres"])
    assert np.allclose(v, fallback.embed(["we use postgres"]))
    assert e.backend == "fallback: FakeEmbedder" and "no space left" in caplog.text
    with pytest.raises(EmbedderUnavailable, match="no space left"):
        OnnxEmbedder(directory=tmp_path).embed(["we use postgres"])  # no fallback: the reason, not a crash


def test_the_embedder_is_chosen_by_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTMEM_EMBEDDER", "torch")
    assert isinstance(default_embedder(), SentenceTransformerEmbedder)
    monkeypatch.setenv("AGENTMEM_EMBEDDER", "onnx")
    chosen = default_embedder()
    assert isinstance(chosen, OnnxEmbedder) and isinstance(chosen.fallback, SentenceTransformerEmbedder)
    monkeypatch.setenv("AGENTMEM_EMBED_THREADS", "2")
    assert default_embedder().threads == 2
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("AGENTMEM_EMBED_THREADS", bad)
        with pytest.raises(EmbedderUnavailable, match="AGENTMEM_EMBED_THREADS"):
            default_embedder()
    monkeypatch.setenv("AGENTMEM_EMBED_THREADS", "1")
    monkeypatch.setenv("AGENTMEM_EMBEDDER", "tensorflow")
    with pytest.raises(EmbedderUnavailable, match="one of onnx, onnx-int8, torch"):
        default_embedder()
    monkeypatch.setenv("AGENTMEM_EMBEDDER", "onnx-int8")
    int8 = default_embedder()
    assert isinstance(int8, OnnxEmbedder) and int8.name == "all-MiniLM-L6-v2-int8" and int8.fallback is None
    assert embedder_named("all-MiniLM-L6-v2-int8").name == "all-MiniLM-L6-v2-int8"  # type: ignore[union-attr]
    assert embedder_named("all-MiniLM-L6-v2").name == "all-MiniLM-L6-v2"  # type: ignore[union-attr]
    assert embedder_named("some-other-model") is None
    with pytest.raises(ValueError, match="no fallback"):
        OnnxEmbedder(int8=True, fallback=SentenceTransformerEmbedder())


@pytest.mark.model
def test_the_int8_model_is_another_model(tmp_path: Path) -> None:
    """Quantised once beside the fp32 export; its vectors are close to fp32 but not the same."""
    exported = onnx_embed.model_file()  # the shared export, copied (not exported again)
    for f in (exported, exported.with_suffix(".json")):
        shutil.copy(f, tmp_path / f.name)
    fp32, int8 = OnnxEmbedder(directory=tmp_path), OnnxEmbedder(directory=tmp_path, int8=True)
    texts = ["We deploy the shop API on Fly.io", "where is the shop API deployed?", "I finished my 5th painting"]
    a, b = fp32.embed(texts), int8.embed(texts)
    cos = (a * b).sum(axis=1)
    assert (cos > 0.9).all() and (cos < 0.999).all()  # near, yet another model's vectors
    assert (tmp_path / "all-MiniLM-L6-v2-int8.onnx").exists() and (tmp_path / "all-MiniLM-L6-v2-int8.json").exists()
    assert np.allclose(OnnxEmbedder(directory=tmp_path, int8=True).embed(texts), b, atol=1e-6)  # the cached file


@pytest.mark.model
def test_a_copied_export_loads_and_a_leftover_temporary_file_is_ignored(tmp_path: Path) -> None:
    """The cached export copied to a new place loads; a leftover temporary file is never used."""
    source = onnx_embed.model_file()
    shutil.copy(source, tmp_path / source.name)
    shutil.copy(source.with_suffix(".json"), tmp_path / source.with_suffix(".json").name)
    (tmp_path / f".{source.name}.123.tmp").write_bytes(b"half a model")
    e = OnnxEmbedder(directory=tmp_path)
    assert e.embed(["the staging cluster lives in eu-west-1"]).shape == (1, 384)
    assert onnx_embed.model_file(tmp_path) == tmp_path / source.name
