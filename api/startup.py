"""The service's start: the port is bound at once, and the engine is ready once the model is loaded.

`serve` opens the data directory before it binds (so a second server on it fails at once, in one
line), then loads the embedding model in the background. Meanwhile `/health` answers 200,
`/ready` answers 503 with state `starting`, and the other routes wait for the engine for up to
`WAIT_SECONDS` before they answer 503 `starting` themselves.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from agentmem.errors import StartingError

log = logging.getLogger("agentmem")

WAIT_SECONDS = 60.0  # how long a request made while starting waits for the engine


class Startup:
    """Whether the engine is ready; `begin` runs the slow part in a thread and marks it ready."""

    def __init__(self) -> None:
        self._ready = threading.Event()

    @property
    def state(self) -> str:
        return "ready" if self._ready.is_set() else "starting"

    @property
    def is_ready(self) -> bool:
        return self._ready.is_set()

    def begin(self, load: Callable[[], object] | None) -> None:
        """Ready now (`load` None), or once `load` has run in a thread of its own (failures are logged)."""
        if load is None:
            self._ready.set()
            return

        def run() -> None:
            try:
                load()
            except Exception:  # the engine degrades (e.g. BM25 only) rather than never becoming ready
                log.exception("warming up the engine failed")
            self._ready.set()
            log.info("agentmem ready")

        threading.Thread(target=run, name="agentmem-startup", daemon=True).start()

    def wait(self, timeout: float = WAIT_SECONDS) -> None:
        """Return once ready; StartingError (503) if still starting after `timeout` seconds."""
        if not self._ready.wait(timeout):
            raise StartingError("the service is starting (loading the embedding model): retry shortly")
