"""A deadline for a request's headers, which uvicorn lacks.

uvicorn (0.55) has no header read timeout: its keep-alive timer runs only between requests, starts
after a response, and any byte received cancels it, so a connection that sends part of a request
head, or one byte now and then, stays open for ever. `with_header_timeout` gives uvicorn's own
HTTP protocol (httptools, else h11) a timer: from the moment a connection opens, or its last
response is complete, its next request's headers must be in within the timeout, or the
connection is closed. Bodies and responses are not timed (bodies are bounded in size instead).
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol


def with_header_timeout(seconds: float) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol class, closing a connection whose request headers take over `seconds`."""

    class HeaderDeadline(AutoHTTPProtocol):  # type: ignore[misc,valid-type]
        _deadline: asyncio.TimerHandle | None = None

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

        def _waiting(self) -> bool:
            """No request is under way: the next one's headers are awaited."""
            return self.cycle is None or bool(self.cycle.response_complete)

        def _watch(self) -> None:
            if not self._waiting() or self.transport.is_closing():
                self._stop()
            elif self._deadline is None:
                self._deadline = self.loop.call_later(seconds, self._expire)

        def _stop(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expire(self) -> None:
            self._deadline = None
            if self._waiting() and not self.transport.is_closing():
                self.transport.close()

    return HeaderDeadline
