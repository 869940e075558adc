"""Where the benchmarks read data and keep caches and results.

The data files are read in place from the shared data folder (default `../shared/data` next to
the repository root); nothing from them is ever copied into the repository.
"""

from __future__ import annotations

from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent
REPO_ROOT = BENCHMARKS.parent
DEFAULT_DATA = (REPO_ROOT / ".." / "shared" / "data").resolve()
CACHE_DIR = BENCHMARKS / ".cache"
RESULTS = BENCHMARKS / "results"
