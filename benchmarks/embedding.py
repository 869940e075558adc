"""The embedder the quality benchmarks run, the service's own unless told otherwise, and the
caches of its vectors, kept apart per embedder kind.

`--embedder onnx | onnx-int8 | torch` (default: `AGENTMEM_EMBEDDER`, else `onnx`, as the service
chooses, see `indexes.onnx_embed.default_embedder`). Unlike the service, `onnx` never falls back
to torch here: a benchmark that says ONNX embedded with ONNX, and vectors cached as ONNX's are
ONNX's (a machine without ONNX Runtime runs `--embedder torch`). Threads a call as in the
service: `AGENTMEM_EMBED_THREADS`, else 1 on ONNX Runtime (on a quiet machine
`AGENTMEM_EMBED_THREADS=2` embeds a new cache faster; on a loaded one, 1 is faster), torch's own
default on torch; the thread count does not change the vectors.

Vector caches in benchmarks/.cache (or `--cache-dir`), per kind: torch keeps the names it always
had (`content-vectors-all-MiniLM-L6-v2.{keys,npy}`, `embeddings-all-MiniLM-L6-v2-<hash>.npy`);
ONNX Runtime's carry `-onnx` after the model's name (`content-vectors-all-MiniLM-L6-v2-onnx.*`,
and `...-int8-onnx.*` for the int8 model), so ONNX and torch vectors never mix.

    python -m benchmarks.embedding                 # ONNX's vectors against torch's, on the texts both caches hold
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.cli import command_line, parser, say
from benchmarks.harness.embedder import VectorCache
from benchmarks.harness.machine import machine_info
from benchmarks.harness.paths import CACHE_DIR
from benchmarks.harness.report import write_results
from benchmarks.harness.tables import table
from indexes.embed import MINILM_NAME, SentenceTransformerEmbedder
from indexes.onnx_embed import EMBEDDERS, OnnxEmbedder

KINDS = EMBEDDERS  # onnx, onnx-int8, torch: the choices of AGENTMEM_EMBEDDER


def service_kind() -> str:
    """The embedder kind the service would use here (`AGENTMEM_EMBEDDER`, default onnx)."""
    choice = os.environ.get("AGENTMEM_EMBEDDER", "onnx").strip().lower()
    if choice not in KINDS:
        raise SystemExit(f"AGENTMEM_EMBEDDER must be one of {', '.join(KINDS)}, not {choice!r}")
    return choice


def add_arguments(p: argparse.ArgumentParser, *, cache_dir: bool = True) -> None:
    """`--embedder` (and `--cache-dir`) on a benchmark's parser; read them back with `kind_of`."""
    p.add_argument(
        "--embedder",
        choices=KINDS,
        default=None,
        help="the embedder (default: AGENTMEM_EMBEDDER, else onnx: what the service uses)",
    )
    if cache_dir:
        p.add_argument(
            "--cache-dir",
            type=Path,
            default=CACHE_DIR,
            help="where cached vectors are kept (default benchmarks/.cache)",
        )


def kind_of(args: argparse.Namespace) -> str:
    return str(args.embedder) if getattr(args, "embedder", None) else service_kind()


def threads(kind: str) -> int | None:
    """Threads a call, as the service sets them: `AGENTMEM_EMBED_THREADS`, else 1 on ONNX Runtime and
    torch's own default (every core) on torch (None)."""
    raw = os.environ.get("AGENTMEM_EMBED_THREADS", "").strip()
    if not raw:
        return None if kind == "torch" else 1
    if not raw.isdigit() or not 1 <= int(raw) <= 64:
        raise SystemExit(f"AGENTMEM_EMBED_THREADS must be a whole number from 1 to 64, not {raw!r}")
    return int(raw)


def model_embedder(kind: str, *, cache_size: int = 0, batch_size: int | None = None) -> Any:
    """The real model on `kind`'s runtime, with a query cache of `cache_size` (0: none)."""
    if kind == "torch":
        return SentenceTransformerEmbedder(cache_size=cache_size, threads=threads(kind), batch_size=batch_size or 64)
    if kind in ("onnx", "onnx-int8"):
        return OnnxEmbedder(
            cache_size=cache_size, threads=threads(kind) or 1, batch_size=batch_size or 32, int8=kind != "onnx"
        )
    raise SystemExit(f"--embedder must be one of {', '.join(KINDS)}, not {kind!r}")


def cache_name(kind: str, model: str) -> str:
    """What a kind's cache files are named after: the model, and the runtime unless it is torch."""
    if kind not in KINDS:
        raise ValueError(f"unknown embedder kind {kind!r}")
    return model if kind == "torch" else f"{model}-onnx"


def model_name(kind: str) -> str:
    return f"{MINILM_NAME}-int8" if kind == "onnx-int8" else MINILM_NAME


def vector_cache(kind: str, embedder: Any = None, cache_dir: Path = CACHE_DIR) -> VectorCache:
    """The content-keyed vector cache of `kind` (embedding what is missing with `embedder`, made on first need)."""
    model = model_name(kind)
    made: list[Any] = [embedder]

    def embed(texts: list[str]) -> np.ndarray:
        if made[0] is None:
            made[0] = model_embedder(kind)
        return np.asarray(made[0].embed(texts), dtype=np.float32)

    return VectorCache(embed, model, 384, cache_dir=cache_dir, name=cache_name(kind, model))


def info(kind: str, embedder: Any = None) -> dict[str, Any]:
    """What a result file records of the embedder: kind, model, runtime and threads, vector cache."""
    runtime = "torch" if kind == "torch" else "onnxruntime"
    try:
        version: str | None = metadata.version(runtime)
    except metadata.PackageNotFoundError:
        version = None
    out: dict[str, Any] = {"kind": kind, "model": model_name(kind), "runtime": f"{runtime} {version}",
                           "threads": threads(kind), "vectors": cache_name(kind, model_name(kind))}  # fmt: skip
    if embedder is not None and getattr(embedder, "backend", "not loaded") != "not loaded":
        out["backend"] = embedder.backend
    return out


def describe(e: dict[str, Any] | None) -> str:
    """One line for a results table: which embedder made the vectors."""
    if not e:
        return "embedder not recorded (torch, before the --embedder option)"
    return f"embedder {e['kind']} ({e['model']} on {e['runtime']})"


# -- ONNX against torch ----------------------------------------------------------


def agreement(a: VectorCache, b: VectorCache) -> dict[str, Any]:
    """Cosine between the two caches' vectors of every text both hold (both unit length)."""
    keys = a.keys() & b.keys()
    if not keys:
        return {"texts": 0}
    order = sorted(keys)
    va, vb = a.vectors_of(order).astype(np.float64), b.vectors_of(order).astype(np.float64)
    cos = np.einsum("ij,ij->i", va, vb)
    p = np.percentile(cos, [0, 0.1, 1, 50])
    return {"texts": len(order), "min": round(float(p[0]), 7), "p0.1": round(float(p[1]), 7),
            "p1": round(float(p[2]), 7), "median": round(float(p[3]), 7),
            "largest_1_minus_cosine": float(f"{1 - p[0]:.2e}"),
            "largest_component_difference": float(f"{np.abs(va - vb).max():.2e}"),
            "below_0.999": int((cos < 0.999).sum()), "below_0.9999": int((cos < 0.9999).sum())}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    p = parser("embedding", __doc__)
    p.add_argument("--against", choices=KINDS, default="torch", help="the reference kind (default torch)")
    p.add_argument("--embedder", choices=KINDS, default="onnx", help="the kind compared (default onnx)")
    p.add_argument("--cache-dir", type=Path, default=CACHE_DIR)
    args = p.parse_args(argv)
    a, b = vector_cache(args.embedder, cache_dir=args.cache_dir), vector_cache(args.against, cache_dir=args.cache_dir)
    say(f"{args.embedder}: {len(a)} cached vectors; {args.against}: {len(b)}")
    res = {"command": command_line("embedding", argv), "compared": args.embedder, "against": args.against,
           "cosine": agreement(a, b), "machine": machine_info(info(args.embedder))}  # fmt: skip
    c = res["cosine"]
    md = (
        f"# {args.embedder} vectors against {args.against} vectors\n\n"
        f"Cosine between the two vectors of each text both caches hold ({c['texts']} texts):\n\n"
        + "\n".join(table(
            ["min", "p0.1", "p1", "median", "largest 1 - cosine", "largest component difference", "below 0.9999"],
            [[c[k] if c["texts"] else "" for k in ("min", "p0.1", "p1", "median", "largest_1_minus_cosine",
                                                   "largest_component_difference", "below_0.9999")]], "r" * 7))
        + "\n"  # fmt: skip
        + f"\nProduced by (from the repository root):\n\n    {res['command']}\n"
    )
    print(md)
    write_results(args.out, f"embedding-{args.embedder}-vs-{args.against}", res, md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
