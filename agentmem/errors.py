"""The one error tree of agentmem; every error a caller can act on derives from AgentMemError.

AgentMemError
├── ValidationError        bad input: nothing was written
├── NotFoundError          no memory with that id
├── ConflictError          the request clashes with what is stored (e.g. import ids in use)
├── StoreError             the DuckDB file cannot be used
│   ├── StoreLockedError   another process holds the data directory
│   └── SchemaTooNewError  written by a newer agentmem: refused, not touched
└── IndexUnavailableError  an index or the embedding model failed (the store is intact)
"""

from __future__ import annotations


class AgentMemError(Exception):
    """Root of every agentmem error."""

    code = "agentmem_error"


class ValidationError(AgentMemError, ValueError):
    """The input is not acceptable; nothing was written."""

    code = "invalid_input"


class NotFoundError(AgentMemError, LookupError):
    """No memory (or lineage) with the given id."""

    code = "not_found"


class ConflictError(AgentMemError):
    """The request clashes with what is already stored."""

    code = "conflict"


class StoreError(AgentMemError):
    """The DuckDB store cannot be opened or written."""

    code = "store_error"


class StoreLockedError(StoreError):
    """Another process has the data directory open for writing."""

    code = "store_locked"


class SchemaTooNewError(StoreError):
    """The data directory was written by a newer schema than this agentmem knows."""

    code = "schema_too_new"


class IndexUnavailableError(AgentMemError):
    """An index or the embedding model failed; the store of record is intact."""

    code = "index_unavailable"


class AccessDeniedError(AgentMemError):
    """The service refused the request: no or unknown token, or no access to that project or role."""

    code = "forbidden"


class ServiceUnavailableError(AgentMemError):
    """The agentmem service could not be reached, timed out, or failed."""

    code = "unavailable"


class ProviderError(AgentMemError):
    """The optional text provider gave no usable reply (timeout, HTTP error, prose, bad JSON, wrong fields)."""

    code = "provider_failed"
