"""Model vectors computed once and kept under benchmarks/.cache, and the embedder that serves them.

Two caches, for two uses: `cached_embeddings` keeps a prefix of a seeded corpus order (the 100k
corpus of the speed benchmarks: computed once, extended on demand); `VectorCache` keeps vectors by
the text's hash (the conversation benchmarks, whose texts come and go with their options).
`VectorsEmbedder` (standalone.sidekit, the side scripts use it too) hands either to agentmem, so a
benchmark times agentmem and not the model.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.cli import progress, say
from benchmarks.harness.paths import CACHE_DIR
from benchmarks.harness.standalone.sidekit import VectorsEmbedder

__all__ = ["VectorCache", "VectorsEmbedder", "cached_embeddings", "corpus_key", "text_key"]


def corpus_key(texts: Sequence[str], model: str, dim: int) -> str:
    h = hashlib.sha256(f"{model}\x00{dim}\x00".encode())
    for t in texts:
        h.update(t.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()[:20]


def cached_embeddings(
    texts: Sequence[str],
    count: int,
    embed: Callable[[list[str]], np.ndarray],
    model: str,
    dim: int,
    *,
    cache_dir: Path = CACHE_DIR,
    batch: int = 2048,
    stats: dict[str, Any] | None = None,
) -> np.ndarray:
    """Embeddings of `texts[:count]`, kept in `cache_dir` keyed by a hash of all texts and the model.

    The cache holds a prefix of the (seeded) text order and is extended on demand, so a quick
    run embeds only what it needs and a later full run adds the rest.
    """
    cache_dir.mkdir(parents=True, exist_ok=True)
    path = cache_dir / f"embeddings-{model}-{corpus_key(texts, model, dim)}.npy"
    have = np.zeros((0, dim), dtype=np.float32)
    if path.exists():
        try:
            have = np.load(path)
            if have.ndim != 2 or have.shape[1] != dim or have.dtype != np.float32:
                raise ValueError(f"unexpected shape {have.shape} / {have.dtype}")
        except (OSError, ValueError) as exc:
            say(f"ignoring unreadable embedding cache {path}: {exc}")
            have = np.zeros((0, dim), dtype=np.float32)
    if stats is not None:
        stats.update(cache_file=path.name, from_cache=min(len(have), count), embedded=max(0, count - len(have)))
    if len(have) >= count:
        say(f"corpus embeddings: {count} from cache {path.name}")
        return have[:count]
    todo = list(texts[len(have) : count])
    say(f"corpus embeddings: {len(have)} cached, embedding {len(todo)} more with {model} (cached in {cache_dir})")
    parts = [have]
    started = time.perf_counter()
    with progress(total=len(todo), desc="embed corpus", unit="text") as bar:
        for start in range(0, len(todo), batch):
            chunk = todo[start : start + batch]
            parts.append(np.asarray(embed(chunk), dtype=np.float32))
            bar.update(len(chunk))
            if (start // batch) % 10 == 9:  # save now and then: an interrupted run keeps its work
                _save(path, np.concatenate(parts))
    out = np.concatenate(parts)
    _save(path, out)
    if stats is not None:
        seconds = time.perf_counter() - started
        stats.update(seconds=round(seconds, 1), texts_per_second=round(len(todo) / seconds, 1))
    return out[:count]


def _save(path: Path, array: np.ndarray) -> None:
    tmp = path.with_name(path.name + ".tmp.npy")
    np.save(tmp, array)
    os.replace(tmp, path)


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class VectorCache:
    """Real model vectors kept on disk, keyed by a hash of the exact text: reruns embed nothing.

    Two files under `cache_dir`: `content-vectors-<name>.keys` (one hash a line) and `.npy`, where
    `name` is the model's unless given (benchmarks.embedding names them per embedder kind too, so that
    one runtime's vectors never mix with another's).
    """

    def __init__(
        self,
        embed: Callable[[list[str]], np.ndarray],
        model: str,
        dim: int,
        cache_dir: Path = CACHE_DIR,
        name: str | None = None,
    ):
        self._embed = embed
        self.model, self.dim = model, dim
        self.name = name or model
        cache_dir.mkdir(parents=True, exist_ok=True)
        self._keys_path = cache_dir / f"content-vectors-{self.name}.keys"
        self._vec_path = cache_dir / f"content-vectors-{self.name}.npy"
        self._rows: dict[str, int] = {}
        self._vectors = np.zeros((0, dim), dtype=np.float32)
        self.embedded = 0
        if self._keys_path.exists() and self._vec_path.exists():
            keys = self._keys_path.read_text().split()
            vectors = np.load(self._vec_path)
            if vectors.shape == (len(keys), dim):
                self._rows = {k: i for i, k in enumerate(keys)}
                self._vectors = vectors.astype(np.float32, copy=False)
            else:
                say(f"ignoring the embedding cache {self._vec_path}: {vectors.shape} for {len(keys)} keys")

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def path(self) -> Path:
        """The vectors' file (the keys are beside it)."""
        return self._vec_path

    def keys(self) -> set[str]:
        """The text keys (`text_key`) of every cached vector."""
        return set(self._rows)

    def vectors_of(self, keys: Sequence[str]) -> np.ndarray:
        """The cached vectors of these text keys, in their order."""
        return self._vectors[[self._rows[k] for k in keys]]

    def merge(self, other: VectorCache) -> int:
        """Take (and save) the vectors `other` holds that this cache does not, e.g. a cache built in parallel
        in another folder; both must be of one model and kind. How many were taken."""
        if (other.name, other.dim) != (self.name, self.dim):
            raise ValueError(f"cannot merge {other.name} ({other.dim}) vectors into {self.name} ({self.dim})")
        new = [k for k in other.keys() if k not in self._rows]
        if new:
            base = len(self._vectors)
            self._vectors = np.concatenate([self._vectors, other.vectors_of(new)])
            self._rows.update({k: base + i for i, k in enumerate(new)})
            self._save()
        return len(new)

    def has(self, text: str) -> bool:
        """True when the vector of this exact text is cached."""
        return text_key(text) in self._rows

    def ensure(self, texts: Iterable[str], *, batch: int = 1024, desc: str = "embed") -> None:
        """Embed (and save) every text not cached yet, in batches, with a progress bar on a terminal."""
        todo = list(dict.fromkeys(t for t in texts if text_key(t) not in self._rows))
        if not todo:
            return
        say(f"embedding {len(todo)} texts with {self.name} (cached in {self._vec_path})")
        todo.sort(key=len)  # similar lengths batch together: less padding
        with progress(total=len(todo), desc=desc, unit="text") as bar:
            for start in range(0, len(todo), batch):
                chunk = todo[start : start + batch]
                self._add(chunk, np.asarray(self._embed(chunk), dtype=np.float32))
                self._save()
                bar.update(len(chunk))

    def _add(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        base = len(self._vectors)
        self._vectors = np.concatenate([self._vectors, vectors])
        for i, t in enumerate(texts):
            self._rows[text_key(t)] = base + i
        self.embedded += len(texts)

    def _save(self) -> None:
        keys = sorted(self._rows, key=self._rows.__getitem__)
        tmp_vec = self._vec_path.with_name(self._vec_path.name + ".tmp.npy")
        tmp_keys = self._keys_path.with_name(self._keys_path.name + ".tmp")
        np.save(tmp_vec, self._vectors)
        tmp_keys.write_text("\n".join(keys) + "\n")
        os.replace(tmp_vec, self._vec_path)
        os.replace(tmp_keys, self._keys_path)

    def get(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for `texts`, embedding any that are missing."""
        missing = [t for t in texts if text_key(t) not in self._rows]
        if missing:
            self.ensure(missing)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._vectors[[self._rows[text_key(t)] for t in texts]]
