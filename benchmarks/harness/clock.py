"""Clocks: the settable clock a benchmark hands agentmem (written once, in standalone.sidekit, for the side
scripts too), the timing of calls one after another, and the CPU clocks a measured window reads.

CPU seconds come from /proc (Linux): a process's own, the whole machine's busy time, this process's.
`CpuWindow` puts them together around a window, so that a figure says who used the cores.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from benchmarks.harness.standalone.sidekit import Clock

__all__ = ["Clock", "CpuWindow", "machine_busy_seconds", "proc_cpu_seconds", "self_cpu_seconds", "time_calls"]

T = TypeVar("T")

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def proc_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process (its own threads), from /proc/<pid>/stat."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
        fields = raw[raw.rindex(")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / _TICK
    except (OSError, ValueError, IndexError):
        return None


def machine_busy_seconds() -> float | None:
    """CPU seconds spent busy by the whole machine since boot (all cores), from /proc/stat."""
    try:
        first = Path("/proc/stat").read_text().splitlines()[0].split()
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in first[1:9])
        return (user + nice + system + irq + softirq + steal) / _TICK
    except (OSError, ValueError, IndexError):
        return None


def self_cpu_seconds() -> float:
    """User + system CPU seconds of this process."""
    t = os.times()
    return t.user + t.system


class CpuWindow:
    """CPU accounting around a measured window: server, clients, this process and everyone else."""

    def __init__(self, server_pid: int | Sequence[int] | None) -> None:
        # several pids (the nodes of one database, and its processes): their CPU summed as "server"
        self.server_pid = [server_pid] if isinstance(server_pid, int) else list(server_pid or [])
        self.busy0 = machine_busy_seconds()
        self.server0 = self._server_cpu()
        self.self0 = self_cpu_seconds()
        self.t0 = time.perf_counter()

    def finish(self, client_cpu: float) -> dict[str, Any]:
        wall = time.perf_counter() - self.t0
        busy1 = machine_busy_seconds()
        server1 = self._server_cpu()
        out: dict[str, Any] = {"window_seconds": round(wall, 3), "client_cpu_seconds": round(client_cpu, 3)}
        server_cpu = None if server1 is None or self.server0 is None else server1 - self.server0
        out["server_cpu_seconds"] = None if server_cpu is None else round(server_cpu, 3)
        self_cpu = self_cpu_seconds() - self.self0
        if busy1 is not None and self.busy0 is not None and server_cpu is not None and wall > 0:
            busy = busy1 - self.busy0
            other = max(0.0, busy - server_cpu - client_cpu - self_cpu)
            out["machine_busy_cores"] = round(busy / wall, 2)
            out["server_cores"] = round(server_cpu / wall, 2)
            out["client_cores"] = round(client_cpu / wall, 2)
            out["other_cores"] = round(other / wall, 2)  # other processes on the machine: contention
        return out

    def _server_cpu(self) -> float | None:
        seconds = [proc_cpu_seconds(pid) for pid in self.server_pid]
        return None if None in seconds else sum(s for s in seconds if s is not None)


def time_calls(fn: Callable[[T], object], items: Iterable[T]) -> list[float]:
    """Milliseconds of each call fn(item), one after the other, on the nanosecond wall clock."""
    out = []
    clock = time.perf_counter_ns
    for item in items:
        t0 = clock()
        fn(item)
        out.append((clock() - t0) / 1e6)
    return out
