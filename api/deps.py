"""Litestar dependencies shared by the route modules."""

from __future__ import annotations

from anyio.to_thread import run_sync as run
from litestar.datastructures import State
from litestar.di import NamedDependency

from agentmem import Memory
from agentmem.errors import NotFoundError
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
