"""Latency statistics: percentiles of timed calls, and of rounds of them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def percentiles(values_ms: Sequence[float], points: Sequence[int] = (50, 95, 99), digits: int = 4) -> dict[str, Any]:
    """n, mean, the percentiles `points` (keys p50, ...) and max of `values_ms`, rounded to `digits`."""
    a = np.asarray(values_ms, dtype=np.float64)
    if a.size == 0:
        return {"n": 0}
    at = np.percentile(a, list(points))
    out: dict[str, Any] = {"n": int(a.size), "mean": round(float(a.mean()), digits)}
    out.update({f"p{p}": round(float(v), digits) for p, v in zip(points, at, strict=True)})
    out["max"] = round(float(a.max()), digits)
    return out


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
