"""Which versions a read is about: one typed filter, turned into a query by the store alone.

Every field narrows the selection; the default `Filter()` selects every version. A tuple
field means "one of these" (an empty tuple selects nothing), None means "any".

>>> Filter(projects=("shop",), kinds=("fact", "decision"), current_only=True)  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import msgspec


class Filter(msgspec.Struct, frozen=True, kw_only=True):
    """A selection of memory versions (see `agentmem.store.filter_sql` for its one translation)."""

    ids: tuple[int, ...] | None = None
    lineages: tuple[int, ...] | None = None
    projects: tuple[str, ...] | None = None
    kinds: tuple[str, ...] | None = None
    tiers: tuple[str, ...] | None = None
    statuses: tuple[str, ...] | None = None
    agent: str | None = None
    session: str | None = None
    source: str | None = None
    source_ref: str | None = None
    content_hash: str | None = None
    exclude_deleted: bool = False  # leave out erased versions (status 'deleted')
    latest_only: bool = False  # the newest version of each lineage, whatever its status
    current_only: bool = False  # latest and active: what the indexes hold
    created_from: datetime | None = None  # created_at >= created_from
    created_to: datetime | None = None  # created_at < created_to
    valid_at: datetime | None = None  # valid_from <= t < valid_to, and not expired at t
    before_id: int | None = None  # id < before_id (the cursor of a page, newest first)

    def narrow(self, **fields: object) -> Filter:
        """This filter with some fields replaced."""
        return msgspec.structs.replace(self, **fields)


def one_of(values: Sequence[str] | None) -> tuple[str, ...] | None:
    """A filter's list field from a caller's sequence in which empty means "any"."""
    return tuple(values) if values else None


ALL = Filter()
