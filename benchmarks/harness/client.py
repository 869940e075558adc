"""What a load-generating client process needs: a request counter shared by the processes, one keep-alive
connection with the benchmark's token, and a timed POST that counts a failure instead of stopping.

Used inside the client processes of http_latency and concurrency (multiprocessing, spawned).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx


def take(counter: Any) -> int:
    """The next slot of a multiprocessing.Value counter shared by every client."""
    with counter.get_lock():
        i = int(counter.value)
        counter.value = i + 1
    return i


def keepalive_client(url: str, secret: str, timeout: float) -> httpx.Client:
    """An HTTP client with one keep-alive connection and the bearer token."""
    import httpx

    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {secret}"}, timeout=timeout, limits=limits)


def timed_post(
    http: httpx.Client, path: str, body: dict[str, Any], clock: Callable[[], float], errors: list[str], label: str = ""
) -> tuple[int, bytes, float]:
    """POST `body`: (status, content, milliseconds to the whole response). A failure is status 0 and empty
    content, its exception noted in `errors` (the first 5, after `label`)."""
    t0 = clock()
    try:
        r = http.post(path, json=body)
        content = r.content
        t1 = clock()
        code = r.status_code
    except Exception as exc:  # an error like any other; the caller's loop is bounded by time and count
        t1 = clock()
        code, content = 0, b""
        if len(errors) < 5:
            errors.append(f"{label}{type(exc).__name__}: {exc}")
    return code, content, (t1 - t0) * 1000.0
