"""An agentmem server in a subprocess: launched on a free loopback port, waited for, stopped the way a service is.

The benchmarks that measure over HTTP (http_latency, concurrency, backends) each say how to launch it
(the command, its folder and environment); starting, the wait for /ready, the stop and the log are here.
"""

from __future__ import annotations

import secrets
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"  # loopback only


def free_port() -> int:
    """A TCP port free on HOST now (it may be taken before it is bound: callers retry)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS, VmHWM (kB) and Threads of a process, from /proc/<pid>/status."""
    out: dict[str, int] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "Threads"):
                out[key] = int(value.split()[0])
    except (OSError, ValueError):
        pass
    return out


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


class ServerProcess:
    """A server process with one admin token (`secret`), its output appended to `log_path`.

    `spawn` starts it (on `port`, chosen by the caller), `poll_ready` polls /ready until the engine is
    loaded, `stop` sends SIGTERM (a graceful close that flushes the indexes) and SIGKILL after `stop_timeout`.
    """

    def __init__(self, log_path: Path, *, ready_timeout: float, stop_timeout: float) -> None:
        self.log_path = log_path
        self.ready_timeout = ready_timeout
        self.stop_timeout = stop_timeout
        self.secret = secrets.token_urlsafe(24)  # 32 characters
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_seconds: float | None = None
        self.stop_info: dict[str, Any] = {}
        self._log: Any = None
        self._t0 = 0.0

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.secret}"}

    def spawn(self, cmd: Sequence[str], *, cwd: Path, env: dict[str, str]) -> None:
        """Start the process (returns at once; `poll_ready` waits for it)."""
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self._t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            list(cmd), cwd=cwd, env=env, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )

    def poll_ready(self, poll: float) -> str | None:
        """Wait until /ready says the engine is loaded (`started_seconds` is then set): None, else why not."""
        import httpx

        from agentmem.client import serving

        assert self.proc is not None
        deadline = self._t0 + self.ready_timeout
        with httpx.Client(base_url=self.url, timeout=2.0) as http:
            while time.perf_counter() < deadline and self.proc.poll() is None:
                try:
                    if serving(http.get("/ready")):
                        self.started_seconds = round(time.perf_counter() - self._t0, 2)
                        return None
                except httpx.HTTPError:
                    pass
                time.sleep(poll)
        code = self.proc.poll()
        return f"exited with {code}" if code is not None else f"not serving within {self.ready_timeout} s"

    def stop(self) -> bool:
        """SIGTERM, then SIGKILL after `stop_timeout` seconds (how it went: `stop_info`); False if not running."""
        proc, self.proc = self.proc, None
        if proc is not None:
            self.stop_info = stop_process(proc, self.stop_timeout)
        if self._log is not None:
            self._log.close()
            self._log = None
        return proc is not None

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def log_problems(self) -> list[str]:
        """The log's first 20 errors, tracebacks and warnings."""
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return []
        return [ln for ln in text if " ERROR " in ln or "Traceback" in ln or " WARNING " in ln][:20]

    def rss_mb(self) -> dict[str, float]:
        st = proc_status(self.pid) if self.proc is not None else {}
        return {"rss_mb": round(st.get("VmRSS", 0) / 1024, 1), "peak_rss_mb": round(st.get("VmHWM", 0) / 1024, 1)}


def stop_on_sigterm() -> None:
    """Make a SIGTERM to the benchmark raise SystemExit, so that its finally blocks still stop the servers
    (and databases) it started and delete their data."""

    def _terminate(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, _terminate)
