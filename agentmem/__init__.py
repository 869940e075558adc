"""agentmem: a versioned memory for AI agents that keeps only what is current in recall."""

from agentmem.config import Config
from agentmem.errors import (
    AgentMemError,
    ConflictError,
    IndexUnavailableError,
    NotFoundError,
    SchemaTooNewError,
    StoreError,
    StoreLockedError,
    ValidationError,
)
from agentmem.memory import Memory
from agentmem.records import Hit, Link, MemoryVersion, NearDuplicate, NewMemory, RememberResult, Stats, Triple

__version__ = "0.1.0"

__all__ = [
    "AgentMemError",
    "Config",
    "ConflictError",
    "Hit",
    "IndexUnavailableError",
    "Link",
    "Memory",
    "MemoryVersion",
    "NearDuplicate",
    "NewMemory",
    "NotFoundError",
    "RememberResult",
    "SchemaTooNewError",
    "Stats",
    "StoreError",
    "StoreLockedError",
    "Triple",
    "ValidationError",
]
