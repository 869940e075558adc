"""Latency statistics: percentiles of timed calls, and of rounds of them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


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


def share(xs: Sequence[bool | float]) -> dict[str, Any]:
    """The percent of true (or the mean of 0..1 scores, in percent) over `xs`, and how many: a table cell."""
    return {"pct": round(100.0 * sum(xs) / len(xs), 1) if xs else None, "n": len(xs)}
