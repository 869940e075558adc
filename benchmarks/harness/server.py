"""A server in a subprocess: started, waited for, and stopped the way a service is."""

from __future__ import annotations

import signal
import subprocess
import time
from typing import Any


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
