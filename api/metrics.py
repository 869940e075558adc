"""Prometheus text-format metrics: request counts and latencies, index sizes, outbox lag."""

from __future__ import annotations

import threading
import time
from collections import defaultdict

from litestar.types import ASGIApp, Message, Receive, Scope, Send

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: dict[tuple[str, str, int], int] = defaultdict(int)
        self.buckets: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0] * (len(BUCKETS) + 1))
        self.sums: dict[tuple[str, str], float] = defaultdict(float)

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        with self._lock:
            self.requests[(method, route, status)] += 1
            counts = self.buckets[(method, route)]
            for i, edge in enumerate(BUCKETS):
                if seconds <= edge:
                    counts[i] += 1
            counts[-1] += 1
            self.sums[(method, route)] += seconds

    def render(self, gauges: dict[str, float], *, requests: bool = True) -> str:
        """The text format: the request counters and latencies (unless `requests` is False), then `gauges`."""
        with self._lock:
            out = self._requests() if requests else []
        for name, value in gauges.items():
            out += [f"# TYPE agentmem_{name} gauge", f"agentmem_{name} {value}"]
        return "\n".join(out) + "\n"

    def _requests(self) -> list[str]:
        out = [
            "# HELP agentmem_requests_total HTTP requests by method, route and status.",
            "# TYPE agentmem_requests_total counter",
        ]
        for (method, route, status), n in sorted(self.requests.items()):
            out.append(f'agentmem_requests_total{{method="{method}",route="{route}",status="{status}"}} {n}')
        out += [
            "# HELP agentmem_request_seconds HTTP request latency.",
            "# TYPE agentmem_request_seconds histogram",
        ]
        for (method, route), counts in sorted(self.buckets.items()):
            labels = f'method="{method}",route="{route}"'
            for edge, n in zip(BUCKETS, counts, strict=False):
                out.append(f'agentmem_request_seconds_bucket{{{labels},le="{edge}"}} {n}')
            out.append(f'agentmem_request_seconds_bucket{{{labels},le="+Inf"}} {counts[-1]}')
            out.append(f"agentmem_request_seconds_sum{{{labels}}} {self.sums[(method, route)]:.6f}")
            out.append(f"agentmem_request_seconds_count{{{labels}}} {counts[-1]}")
        return out


def middleware(app: ASGIApp) -> ASGIApp:
    """Times each HTTP request and counts it under its route template (never the raw path)."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def capture(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await app(scope, receive, capture)
        finally:
            handler = scope.get("route_handler")
            route = next(iter(handler.paths)) if handler is not None else "unmatched"
            method = str(scope.get("method", "GET"))
            scope["app"].state.metrics.observe(method, route, status, time.perf_counter() - start)

    return wrapped
