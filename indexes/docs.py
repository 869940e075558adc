"""What the indexes are given: documents, outbox entries, and their two errors."""

from __future__ import annotations

from typing import Literal

import msgspec
import numpy as np

FILTER_FIELDS = ("project", "agent", "kind", "tier")


class IndexFailure(Exception):
    """An index could not be read or written. The `agentmem` errors wrap this one."""


class StaleModel(Exception):
    """A query vector of one model met a vector index of another (a change of model landed
    between the embedding and the search): embed the query again."""


class IndexCorrupt(IndexFailure):
    """An index on disk is missing, truncated, or was built for another model or schema."""


class Doc(msgspec.Struct, frozen=True):
    """One indexed item: an integer id, its text, its filter fields and its vector."""

    id: int
    text: str
    vector: np.ndarray | None = None
    project: str = ""
    agent: str = ""
    kind: str = ""
    tier: str = ""


# upsert: index the id's current document (or remove it if it has none); delete: remove it;
# purge: remove it and overwrite its vector in place (a governance delete).
OutboxOp = Literal["upsert", "delete", "purge"]


class OutboxEntry(msgspec.Struct, frozen=True, array_like=True):
    """A change the indexes must apply to `memory_id`."""

    seq: int
    op: OutboxOp
    memory_id: int
