"""What a LangGraph item's value becomes as a memory's text, and LangGraph's filters over values.

A value `{"content": text}` is kept as the text itself (what other agentmem tools read); any other
value as its JSON text, keys sorted. What the store must remember about the item besides its value
rides in that JSON under reserved keys: `"$index"`, the put's `index` when it is not the store's
default (False, or a list of paths), and `"$ttl"`, the item's TTL in minutes (a read that refreshes
the TTL needs it). A value that uses a reserved key itself is refused, never misread.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

import msgspec

from agentmem import ValidationError

TEXT = "content"  # the value field that holds a memory's text
INDEX, TTL = "$index", "$ttl"
RESERVED = (INDEX, TTL)
MISSING = object()

Index = Literal[False] | list[str] | None


class Stored(msgspec.Struct, frozen=True):
    """An item as its memory text holds it: the value, the put's `index`, its TTL in minutes."""

    value: dict[str, Any]
    index: Index = None
    ttl: float | None = None


def content_of(value: Mapping[str, Any], index: Index = None, ttl: float | None = None) -> str:
    """The memory text of a value put with `index` and `ttl`: the inverse of `stored_of`."""
    taken = [k for k in RESERVED if k in value]
    if taken:
        raise ValidationError(f"value: the keys {', '.join(taken)} are reserved by agentmem's LangGraph store")
    text = value.get(TEXT)
    if isinstance(text, str) and set(value) == {TEXT} and index is None and ttl is None:
        if text and text == text.strip() and _json_object(text) is None:
            return text
    extra = {k: v for k, v in ((INDEX, index), (TTL, ttl)) if v is not None}
    return json.dumps({**value, **extra}, ensure_ascii=False, sort_keys=True)


def stored_of(content: str) -> Stored:
    """The item a memory text holds (a text not written by the store reads as `{"content": text}`)."""
    obj = _json_object(content)
    if obj is None:
        return Stored({TEXT: content})
    index, ttl = obj.pop(INDEX, None), obj.pop(TTL, None)
    return Stored(obj, index if index is False or isinstance(index, list) else None,
                  float(ttl) if isinstance(ttl, int | float) else None)  # fmt: skip


def _json_object(text: str) -> dict[str, Any] | None:
    if not text.startswith("{"):
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def matches(value: Mapping[str, Any], conditions: Mapping[str, Any]) -> bool:
    """LangGraph's filter semantics: equal values, nested dicts, $eq/$ne/$gt/$gte/$lt/$lte; a key
    with dots ("user.access-level") is a path into nested objects when no top-level key has that name."""
    return all(_compare(at_path(value, k), v) for k, v in conditions.items())


def at_path(value: Mapping[str, Any], path: str) -> Any:
    """The value at a filter key: the key itself, else its dotted path; MISSING when neither is there."""
    if path in value:
        return value[path]
    here: Any = value
    for part in path.split("."):
        if not isinstance(here, Mapping) or part not in here:
            return MISSING
        here = here[part]
    return here


def _compare(have: Any, want: Any) -> bool:
    if isinstance(want, dict):
        if any(k.startswith("$") for k in want):
            return all(_operator(have, op, arg) for op, arg in want.items())
        return isinstance(have, dict) and matches(have, want)
    return have is not MISSING and bool(have == want)


def _operator(have: Any, op: str, arg: Any) -> bool:
    if op == "$eq":
        return have is not MISSING and bool(have == arg)
    if op == "$ne":
        return have is MISSING or bool(have != arg)
    compare = {"$gt": float.__gt__, "$gte": float.__ge__, "$lt": float.__lt__, "$lte": float.__le__}.get(op)
    if compare is None:
        raise ValidationError(f"filter: unsupported operator {op!r} (use $eq, $ne, $gt, $gte, $lt or $lte)")
    if isinstance(have, str) and isinstance(arg, str):  # text against text, in code point order
        return bool({"$gt": str.__gt__, "$gte": str.__ge__, "$lt": str.__lt__, "$lte": str.__le__}[op](have, arg))
    number = (int, float)
    if isinstance(have, bool) or isinstance(arg, bool) or not isinstance(have, number) or not isinstance(arg, number):
        return False  # a number only compares with a number
    return bool(compare(float(have), float(arg)))
