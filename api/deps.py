"""Litestar dependencies shared by the route modules."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from anyio.to_thread import run_sync as run
from litestar.connection import ASGIConnection
from litestar.datastructures import State
from litestar.di import NamedDependency

from agentmem import Memory
from agentmem.errors import NotFoundError, ValidationError
from agentmem.records import MemoryVersion
from api.auth import Principal
from api.startup import Startup

Who = NamedDependency[Principal]
Mem = NamedDependency[Memory]


async def memory(state: State) -> Memory:
    """The engine; while the service starts, waits for it (503 `starting` if that takes too long)."""
    startup: Startup = state.startup
    if not startup.is_ready:
        await run(startup.wait)
    return state.memory  # type: ignore[no-any-return]


def memory_now(state: State) -> Memory:
    """`memory` for synchronous handlers (already in a worker thread, so they may block)."""
    startup: Startup = state.startup
    startup.wait()
    return state.memory  # type: ignore[no-any-return]


def visible(mem: Memory, who: Principal, memory_id: int) -> MemoryVersion:
    """A version the caller may see; another project's id reads exactly like an unknown one."""
    v = mem.get(memory_id)
    if not who.allows(v.project):
        raise NotFoundError(f"no memory with id {memory_id}")
    return v


def digits_only(*names: str) -> Callable[[ASGIConnection[Any, Any, Any, Any], Any], None]:
    """A route guard: the query parameters `names` are whole numbers written in digits ("1e3" and
    "10.0" are refused, not read as 1000 and 10)."""

    def guard(connection: ASGIConnection[Any, Any, Any, Any], _: Any) -> None:
        for name in names:
            for value in connection.query_params.getall(name, []):
                if not (value.isascii() and value.isdigit()):
                    raise ValidationError(f"{name}: expected a whole number in digits, got {value!r}")

    return guard
