"""agentmem: a versioned memory for AI agents that keeps only what is current in recall."""

from agentmem.audit import AuditEntry
from agentmem.config import Config
from agentmem.context import Context
from agentmem.contract import MemoryAPI
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
from agentmem.kinds import KindSpec
from agentmem.lifecycle import DeleteReport, SweepReport
from agentmem.memory import Memory
from agentmem.records import (
    Hit,
    Link,
    MemoryVersion,
    NearDuplicate,
    NewMemory,
    Recalled,
    RememberResult,
    Stats,
    TimeRange,
    TimeWindow,
    Triple,
)
from agentmem.retention import Retention, RetentionPolicy

__version__ = "0.1.0"

__all__ = [
    "AgentMemError",
    "AuditEntry",
    "Config",
    "ConflictError",
    "Context",
    "DeleteReport",
    "Hit",
    "IndexUnavailableError",
    "KindSpec",
    "Link",
    "Memory",
    "MemoryAPI",
    "MemoryVersion",
    "NearDuplicate",
    "NewMemory",
    "NotFoundError",
    "Recalled",
    "RememberResult",
    "Retention",
    "RetentionPolicy",
    "SchemaTooNewError",
    "Stats",
    "StoreError",
    "StoreLockedError",
    "SweepReport",
    "TimeRange",
    "TimeWindow",
    "Triple",
    "ValidationError",
]
