"""Where one recall's time goes, stage by stage: a line on the `agentmem.recall` logger at DEBUG.

Switch it on with `logging.getLogger("agentmem.recall").setLevel(logging.DEBUG)` (or the whole
`agentmem` logger); each record also carries the figures as `record.recall_ms` ({stage: ms}),
which the latency benchmark's profile adds up.
"""

from __future__ import annotations

import logging
import time

log = logging.getLogger("agentmem.recall")

STAGES = ("parse", "candidates", "fusion", "time fit", "asked", "roll-up", "currentness")


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
        """The debug line of this recall, when the logger is on for DEBUG."""
        if log.isEnabledFor(logging.DEBUG):
            ms = {s: round(v, 3) for s, v in self.ms.items()}
            log.debug("recall %.3f ms: %s (query %r)", sum(self.ms.values()),
                      ", ".join(f"{s} {v}" for s, v in ms.items()), query[:80], extra={"recall_ms": ms})  # fmt: skip
