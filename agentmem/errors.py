"""The one error tree of agentmem; every error a caller can act on derives from AgentMemError.

Each class carries its mapping: `code` (the API's `error.code`), `status` (the API's HTTP status),
`exit_code` (the CLI's: 1 failure, 2 invalid input, 3 unknown id, 4 data directory in use) and
`label` (how the CLI, the MCP server and the viewer name it). The API, the viewer, the CLI and
the MCP server read these; the HTTP client reads a reply back into a class with `for_reply`.

                            status exit
AgentMemError                  500  1   a failure nothing below describes
├── ValidationError            400  2   bad input: nothing was written
├── NotFoundError              404  3   no memory with that id
├── ConflictError              409  1   the request clashes with what is stored (e.g. import ids in use)
├── StoreError                 503  1   the DuckDB file cannot be used
│   ├── StoreLockedError       503  4   another process holds the data directory
│   ├── SchemaTooNewError      503  1   written by a newer agentmem: refused, not touched
│   └── StoreBusyError         503  1   the shared database kept refusing a lock (deadlocks): try again
├── IndexUnavailableError      503  1   an index or the embedding model failed (the store is intact)
├── AccessDeniedError          403  1   no or unknown token (a client reads 401 so too), or no access
├── UnknownHostError           421  1   the Host header names no loopback or allowed host (DNS rebinding?)
├── ServiceUnavailableError    503  1   the service could not be reached, timed out, or failed
│   └── StartingError          503  1   the service is up but still loading its engine
├── ProviderError              502  1   the optional text provider gave no usable reply
└── ProviderCacheMissError     503  1   cache-only mode: the reply is not cached and the model may not be asked
"""

from __future__ import annotations


class AgentMemError(Exception):
    """Root of every agentmem error."""

    code = "agentmem_error"
    status = 500
    exit_code = 1
    label = "error"
    also: tuple[int, ...] = ()  # other HTTP statuses a client reads as this error (Litestar's own refusals)


class ValidationError(AgentMemError, ValueError):
    """The input is not acceptable; nothing was written."""

    code = "invalid_input"
    status = 400
    exit_code = 2
    label = "invalid input"
    also = (413,)  # the body is over the limit


class NotFoundError(AgentMemError, LookupError):
    """No memory (or lineage) with the given id."""

    code = "not_found"
    status = 404
    exit_code = 3
    label = "not found"


class ConflictError(AgentMemError):
    """The request clashes with what is already stored."""

    code = "conflict"
    status = 409
    label = "conflict"


class StoreError(AgentMemError):
    """The DuckDB store cannot be opened or written."""

    code = "store_error"
    status = 503
    label = "store unavailable"


class StoreLockedError(StoreError):
    """Another process has the data directory open for writing."""

    code = "store_locked"
    exit_code = 4  # its own code: a second `serve` on one data directory is not a failure of the first
    label = "store in use"


class SchemaTooNewError(StoreError):
    """The data directory was written by a newer schema than this agentmem knows."""

    code = "schema_too_new"
    label = "schema too new"


class StoreBusyError(StoreError):
    """A shared database (PostgreSQL) gave up on a lock, again and again: nothing was written."""

    code = "store_busy"
    label = "store busy"


class IndexUnavailableError(AgentMemError):
    """An index or the embedding model failed; the store of record is intact."""

    code = "index_unavailable"
    status = 503
    label = "index unavailable"


class AccessDeniedError(AgentMemError):
    """The service refused the request: no or unknown token, or no access to that project or role."""

    code = "forbidden"
    status = 403
    label = "not allowed"
    also = (401,)  # no or unknown token


class UnknownHostError(AgentMemError):
    """The request's Host header names neither loopback nor a configured `allowed_hosts` entry."""

    code = "unknown_host"
    status = 421  # Misdirected Request, as the MCP SDK answers
    label = "unknown host"


class ServiceUnavailableError(AgentMemError):
    """The agentmem service could not be reached, timed out, or failed."""

    code = "unavailable"
    status = 503
    label = "service unavailable"


class StartingError(ServiceUnavailableError):
    """The service listens but is still loading its engine (the embedding model); retry shortly."""

    code = "starting"
    label = "starting"


class ProviderError(AgentMemError):
    """The optional text provider gave no usable reply (timeout, HTTP error, prose, bad JSON, wrong fields)."""

    code = "provider_failed"
    status = 502  # a bad reply from upstream
    label = "provider failed"


class ProviderCacheMissError(AgentMemError):
    """Cache-only mode (a replay): the provider's reply to this request is not cached, and asking the
    model is not allowed. Not a ProviderError: nothing falls back from it, so a replay is exact or fails."""

    code = "provider_cache_miss"
    status = 503
    label = "provider reply not cached"


def _tree(root: type[AgentMemError]) -> list[type[AgentMemError]]:
    return [root, *(c for sub in root.__subclasses__() for c in _tree(sub))]


ERRORS: tuple[type[AgentMemError], ...] = tuple(_tree(AgentMemError))
"""Every error class, the root first, depth first in the order of the tree above."""


def for_reply(status: int, code: str | None = None) -> type[AgentMemError]:
    """The error a client raises for an HTTP error reply.

    The class whose `code` the reply names; for a reply without one of ours (Litestar's own
    refusals, a proxy), a 5xx is ServiceUnavailableError and a 4xx the class that claims the
    status (401 and 403 AccessDeniedError, 413 ValidationError), else AgentMemError.
    >>> for_reply(503, "store_locked").__name__, for_reply(401, "unauthorized").__name__
    ('StoreLockedError', 'AccessDeniedError')
    """
    named = next((c for c in ERRORS if c.code == code), None)
    if named is not None:
        return named
    if status >= 500:
        return ServiceUnavailableError
    return next((c for c in ERRORS[1:] if status == c.status or status in c.also), AgentMemError)
