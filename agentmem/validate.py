"""Checks on what callers send, turning bad input into ValidationError before anything is written."""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Collection
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec

from agentmem.config import Config
from agentmem.errors import ValidationError
from agentmem.kinds import SOURCES, STATUSES, TIERS
from agentmem.records import MAX_ID, MemoryVersion, NewMemory, Triple

YEARS = (1, 9999)  # every year a datetime can hold: facts have histories ("the treaty took effect in 1815")
RECORDED_FROM = datetime(1970, 1, 1, tzinfo=UTC)  # times agentmem itself recorded (created_at, ...) are not older
MAX_COUNT = 2**31 - 1  # a version number or a count (reinforcements, accesses): a 32-bit column in both stores


def utc(value: datetime | str | None, field: str) -> datetime | None:
    """An aware UTC datetime from a datetime or an ISO 8601 string (naive means UTC)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValidationError(f"{field}: {value!r} is not an ISO 8601 timestamp") from None
    if not isinstance(value, datetime):
        raise ValidationError(f"{field}: expected a timestamp, got {type(value).__name__}")
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    try:
        value = value.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00+05:00 is in year 0 in UTC, 9999-12-31T23:00-05:00 in year 10000
        offset = value.utcoffset()
        side = f"before year {YEARS[0]}" if offset and offset > timedelta(0) else f"after year {YEARS[1]}"
        raise ValidationError(f"{field}: {value.isoformat()} is {side} in UTC") from None
    if not YEARS[0] <= value.year <= YEARS[1]:
        raise ValidationError(f"{field}: year {value.year} is out of range ({YEARS[0]} to {YEARS[1]})")
    return value


def _visible(value: str) -> bool:
    """Whether any character shows: not only spaces, controls and zero-width format characters."""
    return any(unicodedata.category(c) not in ("Cc", "Cf", "Zs", "Zl", "Zp") for c in value)


BREAKS = ("Cc", "Zl", "Zp")  # controls (C0, DEL, C1 such as U+0085) and U+2028, U+2029


def name(value: str | None, field: str, config: Config, *, required: bool = False) -> str | None:
    """A project, agent, session or key: non-empty when given, bounded, no control characters."""
    if value is None:
        if required:
            raise ValidationError(f"{field} is required")
        return None
    if not isinstance(value, str):
        raise ValidationError(f"{field}: expected a string")
    value = value.strip()
    if not _visible(value):  # given but blank: refused, not read as "none" ("key": "" is no key)
        raise ValidationError(f"{field} {'is required and ' if required else ''}may not be empty")
    if len(value) > config.max_name_chars:
        raise ValidationError(f"{field}: at most {config.max_name_chars} characters")
    if any(unicodedata.category(c) in BREAKS for c in value):
        raise ValidationError(f"{field}: control characters and line or paragraph separators are not allowed")
    return value


def content(value: str, config: Config, field: str = "content") -> str:
    if not isinstance(value, str):
        raise ValidationError(f"{field}: expected a string")
    if "\x00" in value:
        raise ValidationError(f"{field}: NUL characters are not allowed")
    value = value.strip()
    if not _visible(value):
        raise ValidationError(f"{field} may not be empty (it has no visible character)")
    if len(value) > config.max_content_chars:
        raise ValidationError(f"{field}: {len(value)} characters, at most {config.max_content_chars} allowed")
    return value


def path(value: str | Path, field: str = "path") -> str | Path:
    """A path to read: no NUL character (the operating system cannot name one)."""
    if "\x00" in str(value):
        raise ValidationError(f"{field}: NUL characters are not allowed in a path")
    return value


def choice(value: str, allowed: Collection[str], field: str) -> str:
    if value not in allowed:
        raise ValidationError(f"unknown {field} {value!r}: choose one of {', '.join(sorted(allowed))}")
    return value


def choices(values: Collection[str], allowed: Collection[str], field: str) -> list[str]:
    """Each of `values` checked by `choice` (a list filter: `?kind=fact&kind=event`)."""
    return [choice(v, allowed, field) for v in values]


def unit(value: float, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0 or math.isnan(value):
        raise ValidationError(f"{field}: expected a number from 0 to 1, got {value!r}")
    return float(value)


def whole(value: object, field: str, low: int, high: int) -> int:
    """`value` if it is a whole number from `low` to `high` (a bool is not one), else ValidationError."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValidationError(f"{field}: expected a whole number from {low} to {high}")
    return value


def memory_id(value: object, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_ID:
        raise ValidationError(f"{field}: {value!r} is not a memory id (1 to 2**53)")
    return value


def _fields(m: NewMemory | MemoryVersion, config: Config, *, erased: bool = False) -> dict[str, Any]:
    """The checks a new memory and an imported version share: text, names, choices, scores.

    `erased`: a governance-delete tombstone, whose content, title, key, triple and source_ref
    must be blank (they were erased), not valid.
    """
    if erased:
        if m.content or m.title is not None or m.key is not None or m.triple is not None or m.source_ref is not None:
            raise ValidationError("a deleted version keeps no content, title, key, triple or source_ref")
        text: dict[str, Any] = {}
    else:
        triple = m.triple
        if triple is not None:
            triple = Triple(
                *(content(getattr(triple, f), config, f"triple.{f}") for f in ("subject", "predicate", "object"))
            )
        text = {
            "content": content(m.content, config),
            "title": content(m.title, config, "title") if m.title is not None else None,
            "key": name(m.key, "key", config),
            "triple": triple,
            "source_ref": name(m.source_ref, "source_ref", config),
        }
    return {
        **text,
        "project": name(m.project, "project", config, required=True),
        "kind": choice(m.kind, config.kinds, "kind"),
        "tier": choice(m.tier, TIERS, "tier"),
        "agent": name(m.agent, "agent", config),
        "session": name(m.session, "session", config),
        "source": choice(m.source, SOURCES, "source"),
        "source_ids": [memory_id(i, "source_ids") for i in m.source_ids],
        "salience": unit(m.salience, "salience"),
        "confidence": unit(m.confidence, "confidence") if m.confidence is not None else None,
    }


def new_memory(m: NewMemory, config: Config, now: datetime) -> NewMemory:
    """The request with names trimmed, times in UTC and TTL turned into expires_at; or ValidationError."""
    checked = _fields(m, config)
    valid_from = utc(m.valid_from, "valid_from")
    expires_at = utc(m.expires_at, "expires_at")
    if m.ttl_days is not None:
        if expires_at is not None:
            raise ValidationError("give either expires_at or ttl_days, not both")
        if isinstance(m.ttl_days, bool) or not 0 < m.ttl_days <= 36_500:
            raise ValidationError(f"ttl_days: expected more than 0 and at most 36500, got {m.ttl_days!r}")
        expires_at = now + timedelta(days=m.ttl_days)
    if expires_at is not None and expires_at <= now:
        raise ValidationError("expires_at is in the past")
    return msgspec.structs.replace(m, **checked, valid_from=valid_from, expires_at=expires_at, ttl_days=None)


WORLD_TIMES = ("valid_from", "valid_to", "expires_at")  # when it was true: any year
RECORDED_TIMES = ("created_at", "last_reinforced_at", "last_accessed_at", "superseded_at", "archived_at", "deleted_at")


def version(v: MemoryVersion, config: Config) -> MemoryVersion:
    """A stored version from outside (an import), checked field by field as a new memory is, plus
    its own numbers: ids in range, a version from 1, counts from 0, times recorded since 1970."""
    status = choice(v.status, STATUSES, "status")
    checked = _fields(v, config, erased=status == "deleted")
    for field in ("id", "lineage_id", "parent_id", "superseded_by"):
        if getattr(v, field) is not None:
            memory_id(getattr(v, field), field)
    for field in ("version", "reinforcements", "accesses"):
        n = getattr(v, field)
        if isinstance(n, bool) or not isinstance(n, int) or not (1 if field == "version" else 0) <= n <= MAX_COUNT:
            raise ValidationError(f"{field}: {n!r} is out of range")
    sim = v.supersede_similarity
    if sim is not None and (not isinstance(sim, int | float) or not -1.0 <= sim <= 1.0):
        raise ValidationError(f"supersede_similarity: expected a number from -1 to 1, got {sim!r}")
    times = {f: utc(getattr(v, f), f) for f in (*WORLD_TIMES, *RECORDED_TIMES)}
    for f in RECORDED_TIMES:
        t = times[f]
        if t is not None and t < RECORDED_FROM:
            raise ValidationError(f"{f}: {t.isoformat()} is before 1970; agentmem recorded nothing then")
    valid_to, valid_from = times["valid_to"], times["valid_from"]
    if valid_to is not None and valid_from is not None and valid_to < valid_from:
        raise ValidationError("valid_to is before valid_from")
    return msgspec.structs.replace(v, **checked, **times, status=status)


def as_new_memory(item: NewMemory | str | None, fields: dict[str, Any]) -> NewMemory:
    """remember()'s arguments as one NewMemory: a NewMemory, or its fields as keywords (content first or named)."""
    if isinstance(item, NewMemory):
        if fields:
            raise ValidationError("pass either a NewMemory or keyword fields, not both")
        return item
    if item is not None:
        fields = {**fields, "content": item}
    try:
        return NewMemory(**fields)
    except TypeError as exc:
        raise ValidationError(str(exc)) from None
