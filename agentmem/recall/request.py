"""One recall's arguments, checked once before anything is read."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from agentmem import validate
from agentmem.config import Config
from agentmem.errors import ValidationError
from agentmem.filters import Filter, one_of
from agentmem.kinds import TIERS
from agentmem.operations import RecallRequest
from agentmem.records import TimeRange


class Request(msgspec.Struct, frozen=True, kw_only=True):
    """What `Memory.search` was asked, valid: `when` is `as_of` as an aware UTC datetime; `time_range`
    is checked when the query is parsed (`agentmem.recall.query`), against the clock or `when`."""

    query: str
    project: str | None
    k: int
    agent: str | None
    tiers: list[str]
    kinds: list[str]
    when: datetime | None
    time_range: TimeRange | dict[str, Any] | str | None
    include_superseded: bool

    def scope(self, statuses: tuple[str, ...] | None = None) -> Filter:
        """The request's project, agent, tiers and kinds as a store filter (for DuckDB's candidates)."""
        return Filter(projects=None if self.project is None else (self.project,), agent=self.agent,
                      tiers=one_of(self.tiers), kinds=one_of(self.kinds), statuses=statuses)  # fmt: skip


def checked(config: Config, asked: RecallRequest) -> Request:
    """The request as recall reads it, or ValidationError naming the first field that is not valid
    (a request built in process has its types unchecked)."""
    query = validate.content(asked.query, config, "query")
    k = validate.whole(asked.k, "k", 1, config.max_k)
    project = validate.name(asked.project, "project", config)
    agent = validate.name(asked.agent, "agent", config)
    tiers = validate.choices(asked.tiers, TIERS, "tier")
    kinds = validate.choices(asked.kinds, config.kinds, "kind")
    when = validate.utc(asked.as_of, "as_of")
    include_superseded = asked.include_superseded
    if not isinstance(include_superseded, bool):
        raise ValidationError("include_superseded: expected true or false")
    if include_superseded and when is not None:
        raise ValidationError("include_superseded and as_of: as_of already answers from every version valid then")
    return Request(query=query, project=project, k=k, agent=agent, tiers=tiers, kinds=kinds, when=when,
                   time_range=asked.time_range, include_superseded=include_superseded)  # fmt: skip
