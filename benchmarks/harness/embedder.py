"""Model vectors computed once and kept under benchmarks/.cache, and the embedders that serve them.

`cached_embeddings` keeps a prefix of a seeded corpus order (the 100k corpus of the speed
benchmarks: computed once, extended on demand).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.cli import progress, say
from benchmarks.harness.paths import CACHE_DIR


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
