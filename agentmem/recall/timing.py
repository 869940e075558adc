"""Where one recall's time goes, stage by stage: a line on the `agentmem.recall` logger at DEBUG.

Switch it on with `logging.getLogger("agentmem.recall").setLevel(logging.DEBUG)` (or the whole
`agentmem` logger); each record also carries the figures as `record.recall_ms` ({stage: ms}),
which the latency benchmark's profile adds up. A caller within `captured()` gets them too (the
service sends them as a `Server-Timing` header; `agentmem bench` reads them).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

log = logging.getLogger("agentmem.recall")

STAGES = ("parse", "candidates", "fusion", "time fit", "asked", "roll-up", "currentness")

_sink: ContextVar[dict[str, float] | None] = ContextVar("agentmem_recall_ms", default=None)


@contextmanager
def captured() -> Iterator[dict[str, float]]:
    """A dict that the recalls run within fill with their {stage: ms} (added up, if several)."""
    ms: dict[str, float] = {}
    token = _sink.set(ms)
    try:
        yield ms
    finally:
        _sink.reset(token)


def server_timing(ms: dict[str, float]) -> str:
    """A `Server-Timing` header value (RFC: metric names are tokens, so "time fit" is `time-fit`)."""
    return ", ".join(f"{stage.replace(' ', '-')};dur={v:.3f}" for stage, v in ms.items())


def parse_server_timing(header: str) -> dict[str, float]:
    """{stage: ms} of a `Server-Timing` header value; metrics without a duration are left out."""
    out: dict[str, float] = {}
    for metric in header.split(","):
        name, *params = (part.strip() for part in metric.split(";"))
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "dur" and name:
                stage = name.replace("-", " ")
                try:
                    out[stage if stage in STAGES else name] = float(value)
                except ValueError:
                    pass
    return out


class Stopwatch:
    """Milliseconds per stage: `lap(stage)` charges the time since the last lap to `stage`."""

    __slots__ = ("_last", "ms")

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.ms[stage] = self.ms.get(stage, 0.0) + (now - self._last) * 1000.0
        self._last = now

    def report(self, query: str) -> None:
        """The debug line of this recall, when the logger is on for DEBUG; the figures also go to
        the caller's `captured()` dict, if any."""
        sink = _sink.get()
        if sink is not None:
            for stage, v in self.ms.items():
                sink[stage] = sink.get(stage, 0.0) + v
        if log.isEnabledFor(logging.DEBUG):
            ms = {s: round(v, 3) for s, v in self.ms.items()}
            log.debug("recall %.3f ms: %s (query %r)", sum(self.ms.values()),
                      ", ".join(f"{s} {v}" for s, v in ms.items()), query[:80], extra={"recall_ms": ms})  # fmt: skip
