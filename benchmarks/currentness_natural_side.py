"""One side of benchmarks.currentness_natural: the pairs through one tree's agentmem, in this process.

Run by benchmarks/currentness_natural.py with the tree to measure alone on PYTHONPATH; it reads
a JSON spec on stdin and prints one JSON object: a row per (pair, setting) with what recall did.
Each pair gets a project of its own: `noise` unrelated memories written first, then the older
statement, a month later the newer one, and a day after that a recall of the pair's query (k=5).
With `--cosine`, the same projects ranked by plain cosine to the query instead (no currentness).
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

# Run as a script, Python puts benchmarks/ first on sys.path: the side's own tree must come first, and of
# benchmarks/ only harness/standalone/ is wanted (sidekit: the standard library only).
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parent / "harness" / "standalone")

import numpy as np  # noqa: E402
from sidekit import Clock  # noqa: E402

START = datetime(2026, 1, 1, tzinfo=UTC)
K = 5


def noise_of(item: dict[str, Any], distractors: list[str], n: int, seed: int) -> list[str]:
    """The same `n` unrelated memories for a pair on every side and system."""
    return random.Random(f"{seed}:{item['id']}").sample(distractors, n) if n else []


def agentmem_rows(spec: dict[str, Any]) -> list[dict[str, Any]]:
    from agentmem import Memory
    from indexes.onnx_embed import OnnxEmbedder

    clock = Clock(START)
    rows = []
    with tempfile.TemporaryDirectory() as tmp, Memory(Path(tmp), embedder=OnnxEmbedder(), clock=clock) as mem:
        for n in spec["noise"]:
            for item in spec["items"]:
                project = f"p{n}-{item['id']}"
                clock.now = START - timedelta(days=60)
                for text in noise_of(item, spec["distractors"], n, spec["seed"]):
                    clock.now += timedelta(hours=1)
                    mem.remember(text, project=project)
                clock.now = START
                older = mem.remember(item["older"], project=project)
                clock.now = START + timedelta(days=30)
                newer = mem.remember(item["newer"], project=project)
                clock.now = START + timedelta(days=31)
                hits = mem.recall(item["query"], project=project, k=K)
                ids = [h.memory.id for h in hits]
                older_hit = next((h for h in hits if h.memory.id == older.memory.id), None)
                superseded = newer.superseded_id == older.memory.id or mem.get(older.memory.id).status != "active"
                rows.append(
                    {
                        "id": item["id"],
                        "noise": n,
                        "newer_rank": ids.index(newer.memory.id) + 1 if newer.memory.id in ids else None,
                        "older_rank": ids.index(older.memory.id) + 1 if older.memory.id in ids else None,
                        "older_marked": older_hit is not None and older_hit.older_than is not None,
                        "reason": getattr(older_hit, "older_reason", None) if older_hit is not None else None,
                        "newer_marked": any(h.older_than is not None for h in hits if h.memory.id == newer.memory.id),
                        "superseded": superseded,
                        "outcome": newer.outcome,
                    }
                )
    return rows


def cosine_rows(spec: dict[str, Any]) -> list[dict[str, Any]]:
    from indexes.onnx_embed import OnnxEmbedder

    embedder = OnnxEmbedder()
    texts = sorted({t for i in spec["items"] for t in (i["older"], i["newer"], i["query"])} | set(spec["distractors"]))
    vec = dict(zip(texts, embedder.embed(texts), strict=True))
    rows = []
    for n in spec["noise"]:
        for item in spec["items"]:
            pool = [item["older"], item["newer"], *noise_of(item, spec["distractors"], n, spec["seed"])]
            scores = np.array([float(np.dot(vec[item["query"]], vec[t])) for t in pool])
            order = list(np.argsort(-scores, kind="stable")[:K])
            rows.append(
                {
                    "id": item["id"],
                    "noise": n,
                    "newer_rank": order.index(1) + 1 if 1 in order else None,
                    "older_rank": order.index(0) + 1 if 0 in order else None,
                    "older_marked": False,
                    "reason": None,
                    "newer_marked": False,
                    "superseded": False,
                    "outcome": "created",
                }
            )
    return rows


def main() -> int:
    spec = json.loads(sys.stdin.read())
    rows = cosine_rows(spec) if "--cosine" in sys.argv else agentmem_rows(spec)
    import agentmem

    print(json.dumps({"rows": rows, "imported_from": str(Path(agentmem.__file__).resolve().parent.parent)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
