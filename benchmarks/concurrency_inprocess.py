"""One side of the in-process write figure: sequential remember() and bulk import, embedding excluded.

Not run by hand: benchmarks.concurrency starts it as a script, once per code side, with that
side's source tree first on PYTHONPATH:

    PYTHONPATH=<side> python benchmarks/concurrency_inprocess.py SPEC.json OUT.json

so it imports nothing from `benchmarks` (the baseline's tree has its own, older copy) and only
the public surface of agentmem: `Memory(path, embedder=...)`, `remember()`, `check()`,
`close()` and `import_lines()`. The embedder it hands to Memory serves vectors
computed beforehand by the real model (a dictionary lookup), so the timings hold everything
but the embedding; a text it does not know is embedded by the real model and counted as a
miss (reported, and flagged by the parent). The spec names a copy of a preloaded store (for
remember()), the calls to make (stopping early after `max_seconds`), the vectors, and a JSON
Lines export with embeddings to import into an empty directory.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

# Run as a script, Python puts benchmarks/ first on sys.path: the side's own tree must come first, and of
# benchmarks/ only harness/standalone/ is wanted (sidekit: the standard library only).
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parent / "harness" / "standalone")

import numpy as np  # noqa: E402
from sidekit import VectorsEmbedder, watch_parent  # noqa: E402


class Precomputed:
    """Vectors computed beforehand by the real model, by text; unknown texts go to it (counted as misses)."""

    def __init__(self, texts: list[str], vectors: np.ndarray, dim: int) -> None:
        if vectors.shape != (len(texts), dim):
            raise SystemExit(f"vectors are {vectors.shape}, expected {(len(texts), dim)}")
        self.dim = dim
        self.vectors = {t: vectors[i] for i, t in enumerate(texts)}
        self.misses = 0
        self._real: Any = None

    def many(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = [self.vectors.get(t) for t in texts]
        unknown = [t for t, v in zip(texts, out, strict=True) if v is None]
        if unknown:
            self.misses += len(unknown)
            if self._real is None:
                from indexes.embed import SentenceTransformerEmbedder

                self._real = SentenceTransformerEmbedder(cache_size=0)
            fresh = iter(self._real.embed(unknown))
            out = [v if v is not None else next(fresh) for v in out]
        return np.stack([np.asarray(v, dtype=np.float32) for v in out])


def module_files() -> dict[str, str]:
    import agentmem
    import api
    import indexes

    return {m.__name__: str(Path(str(m.__file__)).resolve()) for m in (agentmem, indexes, api)}


def run(spec: dict[str, Any]) -> dict[str, Any]:
    from agentmem import Memory
    from indexes.embed import MINILM_NAME

    out: dict[str, Any] = {"modules": module_files(), "pid": os.getpid()}
    vectors = np.load(spec["vectors"])
    lookup = Precomputed(spec["vector_texts"], vectors, int(vectors.shape[1]))
    embedder = VectorsEmbedder(MINILM_NAME, lookup.dim, lookup.many)
    clock = time.perf_counter_ns

    # remember(), one call after another, on a copy of the preloaded store
    t0 = time.perf_counter()
    mem = Memory(spec["store"], embedder=embedder)
    out["open_seconds"] = round(time.perf_counter() - t0, 3)
    project = spec["project"]
    ops = spec["ops"]
    warmup = int(spec["warmup"])
    latencies: list[float] = []
    outcomes: dict[str, int] = {}
    try:
        for op in ops[:warmup]:  # untimed: the first writes open writers and searchers
            mem.remember(op["content"], project=project, **({"key": op["key"]} if op.get("key") else {}))
        wall0 = time.perf_counter()
        stop_at = wall0 + float(spec["max_seconds"])
        for op in ops[warmup:]:
            if time.perf_counter() >= stop_at:
                break
            fields = {"key": op["key"]} if op.get("key") else {}
            t = clock()
            result = mem.remember(op["content"], project=project, **fields)
            latencies.append((clock() - t) / 1e6)
            outcomes[result.outcome] = outcomes.get(result.outcome, 0) + 1
        wall = time.perf_counter() - wall0
        out["remember"] = {
            "calls": len(latencies),
            "warmup_calls": min(warmup, len(ops)),
            "stopped_by_time": len(latencies) < len(ops[warmup:]),
            "seconds": round(wall, 4),
            "calls_per_second": round(len(latencies) / wall, 2) if wall > 0 else None,
            "latency_ms": [round(x, 4) for x in latencies],
            "outcomes": outcomes,
            "embed_misses": lookup.misses,
            "check_ok": bool(mem.check().ok),
        }
    finally:
        t0 = time.perf_counter()
        mem.close()
        out["close_seconds"] = round(time.perf_counter() - t0, 3)

    # bulk import of an export with embeddings into an empty data directory
    misses_before = lookup.misses
    lines = Path(spec["import_file"]).read_bytes().splitlines()
    t0 = time.perf_counter()
    mem = Memory(spec["import_dir"], embedder=embedder)
    open_s = time.perf_counter() - t0
    try:
        t0 = time.perf_counter()
        n = mem.import_lines(lines)  # the facade: both sides have it
        import_s = time.perf_counter() - t0
        check_ok = bool(mem.check().ok)
    finally:
        t0 = time.perf_counter()
        mem.close()
        close_s = time.perf_counter() - t0
    out["import"] = {
        "memories": n,
        "open_seconds": round(open_s, 3),
        "seconds": round(import_s, 3),
        "close_seconds": round(close_s, 3),
        "memories_per_second": round(n / import_s, 1) if import_s > 0 else None,
        "memories_per_second_with_close": round(n / (import_s + close_s), 1) if import_s + close_s > 0 else None,
        "embed_misses": lookup.misses - misses_before,
        "check_ok": check_ok,
    }
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: concurrency_inprocess.py SPEC.json OUT.json", file=sys.stderr)
        return 2
    watch_parent()
    spec = json.loads(Path(argv[0]).read_text())
    result = run(spec)
    Path(argv[1]).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
