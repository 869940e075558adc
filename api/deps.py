"""Litestar dependencies shared by the route modules."""

from __future__ import annotations

from litestar.datastructures import State
from litestar.di import NamedDependency

from agentmem import Memory
from agentmem.errors import NotFoundError
from agentmem.records import MemoryVersion
from api.auth import Principal

Who = NamedDependency[Principal]
Mem = NamedDependency[Memory]


def memory(state: State) -> Memory:
    return state.memory  # type: ignore[no-any-return]


def visible(mem: Memory, who: Principal, memory_id: int) -> MemoryVersion:
    """A version the caller may see; another project's id reads exactly like an unknown one."""
    v = mem.get(memory_id)
    if not who.allows(v.project):
        raise NotFoundError(f"no memory with id {memory_id}")
    return v
