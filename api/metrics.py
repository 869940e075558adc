"""Prometheus metrics through `prometheus_client`: request counts and latencies, index sizes, outbox lag.

Each app has its own registry (tests run many apps in one process). The names are the ones this
service has always served: `agentmem_requests_total` and `agentmem_request_seconds` (a histogram)
by method, route template and status, and one gauge per index figure, read at scrape time.
Litestar's own Prometheus plugin would name them `litestar_*` with other labels, so it is not used.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping

from litestar.types import ASGIApp, Message, Receive, Scope, Send
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class _Gauges(Collector):
    """One scrape's index figures, as gauges."""

    def __init__(self, values: Mapping[str, float]) -> None:
        self.values = values

    def collect(self) -> Iterator[Metric]:
        for name, value in self.values.items():
            yield GaugeMetricFamily(f"agentmem_{name}", f"agentmem {name.replace('_', ' ')}.", value=value)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "agentmem_requests",
            "HTTP requests by method, route and status.",
            ("method", "route", "status"),
            registry=self.registry,
        )
        self.seconds = Histogram(
            "agentmem_request_seconds",
            "HTTP request latency.",
            ("method", "route"),
            buckets=BUCKETS,
            registry=self.registry,
        )

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests.labels(method, route, str(status)).inc()
        self.seconds.labels(method, route).observe(seconds)

    def render(self, gauges: Mapping[str, float], *, requests: bool = True) -> str:
        """The Prometheus text format: the request counters and latencies (unless `requests` is
        False: a project token sees only its own figures), then these gauges."""
        scrape = CollectorRegistry(auto_describe=True)  # this scrape's gauges: nothing shared to guard
        scrape.register(_Gauges(gauges))
        text = generate_latest(scrape).decode("utf-8")
        return generate_latest(self.registry).decode("utf-8") + text if requests else text


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
