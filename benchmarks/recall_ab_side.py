"""One side of benchmarks.recall_ab: a store built from the given texts, then recalls timed on command.

Not run by hand: benchmarks.recall_ab starts it as a script, once per code side, with that side's
source tree alone on PYTHONPATH:

    PYTHONPATH=<side> python benchmarks/recall_ab_side.py SPEC.json

so it imports nothing from `benchmarks` (a baseline's tree has its own, older copy) and only the
surface of agentmem both sides share: `Memory(path, embedder=...)`, `import_lines()`, `check()`,
`recall()`, `close()`, the export format (agentmem.transfer) and the packaged embedders.

It loads the texts and their vectors (files the parent wrote for this process alone) through
`import_lines`, one memory a minute ending at the spec's base time (or, with the spec's `reuse`,
opens the store an earlier process built: a restart), then answers one JSON command a
line on stdin with one JSON reply a line on the protocol stream (stdout; everything else this
process prints goes to stderr):

  {"op": "prewarm", "queries": [...]}   embed each query through the embedder's LRU cache
  {"op": "time", "queries": [...]}      recall(q, project, k) once per query: wall and CPU (process)
                                        milliseconds, the CPU milliseconds (thread) of its currentness
                                        stage (`current_first` of agentmem.recall.pipeline; NaN in a
                                        tree without it), and the hit ids
  {"op": "profile", "queries": [...]}   the same recalls under cProfile (timed by this thread's CPU
                                        time), adding to one profile
  {"op": "profile_report"}              that profile's rows by cumulative time, per recall
  {"op": "gc"}                          gc.collect()
  {"op": "quit"}
"""

from __future__ import annotations

import cProfile
import gc
import json
import os
import pstats
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

# Run as a script, Python puts benchmarks/ first on sys.path: the side's own tree must come first, and of
# benchmarks/ only harness/standalone/ is wanted (sidekit: the standard library only).
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    sys.path[0] = str(Path(__file__).resolve().parent / "harness" / "standalone")

import numpy as np  # noqa: E402
from sidekit import watch_parent  # noqa: E402


def make_embedder(kind: str, cache_size: int) -> Any:
    """The packaged model on ONNX Runtime (the service default) or torch, with an LRU query cache."""
    if kind == "torch":
        from indexes.embed import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(cache_size=cache_size)
    from indexes.onnx_embed import OnnxEmbedder

    return OnnxEmbedder(cache_size=cache_size)


def load(mem: Any, texts: list[str], vectors: np.ndarray, spec: dict[str, Any], say: Any) -> dict[str, Any]:
    """The texts as memories 1..N through import_lines, `chunk` a call; what check() said after."""
    import msgspec

    from agentmem.records import MemoryVersion
    from agentmem.text import sha256
    from agentmem.transfer import FORMAT, FORMAT_VERSION, Header, VersionLine

    base = datetime.fromisoformat(spec["base_time"])
    enc = msgspec.json.Encoder()
    emb = mem.embedder
    header = enc.encode(Header(FORMAT, FORMAT_VERSION, mem.store.schema_version, emb.name, emb.dim, base)) + b"\n"
    n, chunk = len(texts), int(spec["import_chunk"])
    t0 = time.perf_counter()
    for start in range(0, n, chunk):
        lines = [header]
        for i in range(start, min(n, start + chunk)):
            when = base - timedelta(minutes=n - i)  # one a minute, oldest first
            m = MemoryVersion(
                id=i + 1,
                lineage_id=i + 1,
                version=1,
                parent_id=None,
                is_latest=True,
                status="active",
                content=texts[i],
                tier="semantic",
                kind="fact",
                project=spec["project"],
                source="import",
                salience=0.5,
                confidence=0.7,
                created_at=when,
                valid_from=when,
                last_reinforced_at=when,
                content_hash=sha256(texts[i]),
            )
            lines.append(enc.encode(VersionLine(m, vectors[i].tolist())) + b"\n")
        mem.import_lines(lines)
        say(f"imported {min(n, start + chunk)}/{n}")
    load_s = time.perf_counter() - t0
    tc = time.perf_counter()
    check = mem.check()
    return {
        "memories": n,
        "load_seconds": round(load_s, 2),
        "check_ok": bool(check.ok),
        "check_seconds": round(time.perf_counter() - tc, 2),
    }


_UNTIMED: list[float] = []  # what stage_clock gives in a tree without the stage


def stage_clock() -> list[float]:
    """A list that each recall's currentness stage adds its thread CPU milliseconds to: the
    pipeline's `current_first`, wrapped; `_UNTIMED` in a tree that has no such stage."""
    try:
        from agentmem.recall import pipeline
    except ImportError:
        return _UNTIMED
    inner = getattr(pipeline, "current_first", None)
    if inner is None:
        return _UNTIMED
    spent: list[float] = []

    def timed(*args: Any, **kwargs: Any) -> Any:
        c0 = time.thread_time_ns()
        try:
            return inner(*args, **kwargs)
        finally:
            spent.append((time.thread_time_ns() - c0) / 1e6)

    pipeline.current_first = timed  # type: ignore[attr-defined]
    return spent


def profile_rows(prof: cProfile.Profile, root: Path, calls: int, top: int) -> list[dict[str, Any]]:
    """The `top` functions by cumulative time, per recall, with files relative to the side's tree."""
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    rows = []
    prefix = str(root.resolve()) + os.sep
    for (file, line, func), (_cc, ncalls, tottime, cumtime, _callers) in stats.items():
        rows.append(
            {
                "file": file[len(prefix) :] if file.startswith(prefix) else file,
                "line": line,
                "function": func,
                "calls_per_recall": round(ncalls / calls, 3),
                "tottime_ms": round(tottime / calls * 1000, 4),
                "cumtime_ms": round(cumtime / calls * 1000, 4),
            }
        )
    rows.sort(key=lambda r: -r["cumtime_ms"])
    return rows[:top]


def main() -> int:
    watch_parent()
    proto = os.fdopen(os.dup(1), "w", buffering=1)  # the protocol stream; stray prints go to stderr
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    spec = json.loads(Path(sys.argv[1]).read_text())
    tag = spec["side"]

    def say(msg: str) -> None:
        print(f"[{tag}] {msg}", file=sys.stderr, flush=True)

    def reply(obj: dict[str, Any]) -> None:
        proto.write(json.dumps(obj) + "\n")
        proto.flush()

    import agentmem
    import indexes
    from agentmem import Memory

    modules = {"agentmem": agentmem.__file__, "indexes": indexes.__file__}
    texts = json.loads(Path(spec["texts"]).read_text())
    vectors = np.load(spec["vectors"])
    emb = make_embedder(spec["embedder"], int(spec["cache_size"]))
    t0 = time.perf_counter()
    mem = Memory(Path(spec["store"]), embedder=emb)
    opened = round(time.perf_counter() - t0, 2)
    try:
        store = {"memories": len(texts)} if spec.get("reuse") else load(mem, texts, vectors, spec, say)
        store["open_seconds"] = opened
        del texts, vectors
        warmed = False
        try:  # what a server does at startup (agentmem serve): dateparser loaded before the first query
            from agentmem import timewindow

            timewindow.warm_up()
            warmed = True
        except ImportError:
            pass
        gc.collect()
        reply(
            {
                "op": "ready",
                "modules": modules,
                "store": store,
                "embedder": type(emb).__name__,
                "time_warm_up": warmed,
                "pid": os.getpid(),
            }
        )
        stage_ms = stage_clock()
        project, k = spec["project"], int(spec["k"])
        clock, cpu_clock = time.perf_counter_ns, time.process_time_ns
        # CPU time of this thread, not wall time: on a shared machine, waiting for a core is not the code's cost
        prof = cProfile.Profile(time.thread_time)
        profiled = 0
        for line in sys.stdin:
            cmd = json.loads(line)
            op = cmd["op"]
            if op == "quit":
                break
            queries: list[str] = cmd.get("queries", [])
            if op == "prewarm":
                t0 = time.perf_counter()
                for q in queries:
                    emb.embed_query(q)
                reply({"op": op, "seconds": round(time.perf_counter() - t0, 2)})
            elif op == "time":
                load_before = os.getloadavg()
                times, cpu, stage, ids = [], [], [], []
                for q in queries:
                    stage_ms.clear()
                    c0, t0 = cpu_clock(), clock()
                    hits = mem.recall(q, project=project, k=k)
                    times.append((clock() - t0) / 1e6)
                    cpu.append((cpu_clock() - c0) / 1e6)
                    stage.append(float("nan") if stage_ms is _UNTIMED else sum(stage_ms))
                    ids.append([h.memory.id for h in hits])
                reply(
                    {
                        "op": op,
                        "ms": times,
                        "cpu_ms": cpu,
                        "stage_cpu_ms": stage,
                        "ids": ids,
                        "loadavg_before": list(load_before),
                        "loadavg_after": list(os.getloadavg()),
                    }
                )
            elif op == "profile":
                prof.enable()
                for q in queries:
                    mem.recall(q, project=project, k=k)
                prof.disable()
                profiled += len(queries)
                reply({"op": op, "recalls": profiled})
            elif op == "profile_report":
                rows = profile_rows(prof, Path(spec["root"]), max(1, profiled), int(cmd.get("top", 80)))
                reply({"op": op, "recalls": profiled, "rows": rows})
            elif op == "gc":
                gc.collect()
                reply({"op": op})
            else:
                reply({"op": "error", "error": f"unknown op {op!r}"})
    finally:
        mem.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
