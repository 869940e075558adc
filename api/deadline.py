"""Deadlines for a request's headers and body, which uvicorn lacks.

uvicorn (0.55) has no header or body read timeout: its keep-alive timer runs only between
requests, starts after a response, and any byte received cancels it, so a connection that sends
part of a request head, or a body slower than it promised, one byte now and then, stays open for
ever. `with_timeouts` gives uvicorn's own HTTP protocol (httptools, else h11) a timer: from the
moment a connection opens, or its last response is complete, its next request's headers must be
in within `header_seconds`; from the end of the headers, the whole body within `body_seconds`.
Otherwise the connection is closed (a body cut off is never handed to a route whole, so nothing
is written). Responses are not timed.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol


def with_timeouts(header_seconds: float, body_seconds: float) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol class, closing a connection whose request headers take over
    `header_seconds` or whose body takes over `body_seconds`."""

    class Deadline(AutoHTTPProtocol):  # type: ignore[misc,valid-type]
        _deadline: asyncio.TimerHandle | None = None
        _for: str | None = None  # the phase the running timer times: "headers" or "body"

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._watch()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._watch()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._watch()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop()
            super().connection_lost(exc)

        def _phase(self) -> str | None:
            """What is awaited now: the next request's "headers", the current request's "body", or
            None while a request is served."""
            if self.cycle is None or self.cycle.response_complete:
                return "headers"
            return "body" if self.cycle.more_body else None

        def _watch(self) -> None:
            phase = self._phase()
            if phase is None or self.transport.is_closing():
                self._stop()
            elif self._deadline is None or self._for != phase:
                self._stop()
                seconds = header_seconds if phase == "headers" else body_seconds
                self._deadline, self._for = self.loop.call_later(seconds, self._expire), phase

        def _stop(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
            self._deadline = self._for = None

        def _expire(self) -> None:
            self._deadline = self._for = None
            if self._phase() is not None and not self.transport.is_closing():
                self.transport.close()

    return Deadline
