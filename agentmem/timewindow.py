"""Time in recall: the window a query's time expression names ("last Saturday", "two weeks ago",
"in March", "before 2023"), or an explicit `time_range`, and how well a memory's `valid_from` fits it.

The window is a soft boost, never a filter: recall multiplies a hit's score by
1 + Weights.time x fit, where fit is 1 inside the window and falls off outside it.

>>> now = datetime(2023, 4, 22, 8, 0, tzinfo=UTC)
>>> w = understand("Who did I go with to the music event last Saturday?", None, now)
>>> (w.start.date().isoformat(), w.end.date().isoformat(), w.expression)
('2023-04-15', '2023-04-16', 'last Saturday')

Finding the expressions is a few regular expressions over the query (most queries name no time,
and these cost microseconds); resolving one against the clock is dateparser's work (weekdays, month
names, "N units ago" in words, formatted dates), cached per expression and day because dateparser
takes milliseconds a call. Ranges the library does not resolve ("in the past two weeks", "between
May 1 and May 10", "since", "before") are composed here from the spans it resolved.
"""

from __future__ import annotations

import math
import re
import threading
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any, NamedTuple

import msgspec
from dateutil import parser as _dateutil

from agentmem.errors import ValidationError
from agentmem.records import TimeRange, TimeWindow
from agentmem.validate import utc

DAY = timedelta(days=1)


# -- finding expressions ----------------------------------------------------------------

_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_MONTH_ABBR = "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_WORD_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3, "few": 3, "several": 3,
}  # fmt: skip
_NUM = r"(?:\d{1,3}|a couple of|a few|few|several|an|a|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_UNIT = r"(?:day|week|month|year)s?"
_DAY_NUM = r"\d{1,2}(?:st|nd|rd|th)?"
_YEAR = r"(?:19|20)\d{2}"
_MONTH = rf"(?:{_MONTHS}|(?:{_MONTH_ABBR})\.?(?=\s+(?:{_DAY_NUM}|{_YEAR})\b))"

# One resolvable point or period, most specific first. "May" alone is also a verb: it counts as a
# month only with a day or a year, or after a preposition (see _point_ok).
_POINT = (
    rf"\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}}/\d{{1,2}}/\d{{2,4}}"
    rf"|{_MONTH}\s+{_DAY_NUM}(?:,?\s+{_YEAR})?|{_DAY_NUM}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?"
    rf"|{_MONTH},?\s+{_YEAR}|{_MONTH}"
    rf"|{_NUM}\s+{_UNIT}\s+ago|(?:last|this|next)\s+(?:week(?:end)?|month|year|{_WEEKDAYS})"
    rf"|yesterday|today|tonight|last\s+night|this\s+(?:morning|afternoon|evening)"
    rf"|(?:{_WEEKDAYS})(?!s)|{_YEAR}"
)
_SPAN = re.compile(
    rf"\b(?:(?P<between>between|from)\s+(?P<a>{_POINT})\s+(?:and|to|until)\s+(?P<b>{_POINT})"
    rf"|(?:(?:in|during|over|within|for)\s+)?the\s+(?:past|last)\s+(?P<n>{_NUM}\s+)?(?P<unit>{_UNIT})"
    rf"|(?:(?P<side>since|after|before|until|prior\s+to)\s+|(?P<prep>in|during|on|of|from|at)\s+)?(?P<p>{_POINT}))\b",
    re.IGNORECASE,
)
_GATE = re.compile(rf"\b(?:{_MONTHS}|{_MONTH_ABBR}|{_WEEKDAYS}|ago|last|this|next|past|yesterday|today|tonight|"
                   rf"{_YEAR})\b|\d-\d|\d/\d", re.IGNORECASE)  # fmt: skip


_NAMED_AFTER = re.compile(r"\s+(?P<w>[A-Z][\w'-]*)(?:\s+(?P<w2>[A-Z][\w'-]*))?")
_DAY_PARTS = frozenset({"night", "morning", "afternoon", "evening"})
_TIME_WORD = re.compile(rf"(?:{_MONTHS}|{_MONTH_ABBR}|{_WEEKDAYS})\.?", re.IGNORECASE)


def _in_name(m: re.Match[str]) -> bool:
    """Whether the weekday or month word a match of _SPAN ends on, written with a capital, begins a name: the
    next word is capitalised too and is no time ("Monday Night Football", "March Madness"; not "Saturday
    March 4"). After a preposition, or before a time of day, it takes two such words ("on Saturday Night
    Live"; not "on Saturday Mia threw a party", nor "on Saturday Night")."""
    query, end = m.string, m.end("p")
    last = query[m.start("p") : end].split()[-1]
    if not _TIME_WORD.fullmatch(last) or not last[0].isupper():
        return False
    after = _NAMED_AFTER.match(query, end)
    if after is None or _TIME_WORD.fullmatch(after["w"]):
        return False
    placed = m.group("prep") or m.group("side") or m.group("p").split()[0].lower() in ("last", "this", "next")
    return after["w2"] is not None or not (placed or after["w"].lower() in _DAY_PARTS)


def _not_a_time(m: re.Match[str]) -> bool:
    """A match of _SPAN whose bare point is no time: a lone "may" or year without a preposition, or
    a weekday or month that begins a name."""
    p = m.group("p")
    return p is not None and (not _point_ok(p, m.group("prep") or m.group("side")) or _in_name(m))


def _point_ok(text: str, prep: str | None) -> bool:
    """Whether a bare match is a time at all: a lone "may" only after a preposition, a lone year only
    after one too ("2000 calories" is not a year)."""
    word = text.strip().lower()
    if word == "may" or re.fullmatch(_YEAR, word):
        return prep is not None
    return True


# -- resolving them -------------------------------------------------------------------

_LOCK = threading.Lock()  # dateparser's parsers keep state between calls: one call at a time


@lru_cache(maxsize=4)
def _parser(day: datetime) -> Any:
    """dateparser's parser for relative expressions as seen on `day` (its settings hold the base)."""
    from dateparser.date import DateDataParser  # 0.3 s to import: only once a query names a time

    settings = {"RELATIVE_BASE": day, "PREFER_DATES_FROM": "past", "RETURN_AS_TIMEZONE_AWARE": False}
    return DateDataParser(languages=["en"], settings=settings)


def warm_up() -> None:
    """Import and load dateparser now (a server calls this at startup), not on the first timed query."""
    _resolve("last saturday", datetime(2000, 1, 1))


def _midnight(d: datetime) -> datetime:
    return d.replace(hour=0, minute=0, second=0, microsecond=0)


_ABS_MONTH = rf"(?:{_MONTHS}|{_MONTH_ABBR})\.?"
_ABSOLUTE = (  # a calendar date, month or year, as _POINT finds them: (form, period)
    (re.compile(rf"(?:{_ABS_MONTH}\s+{_DAY_NUM}|{_DAY_NUM}\s+(?:of\s+)?{_ABS_MONTH})(?:,?\s+(?P<y>{_YEAR}))?"
                rf"|(?P<iso>\d{{4}}-\d{{2}}-\d{{2}})"), "day"),
    (re.compile(rf"{_ABS_MONTH}(?:,?\s+(?P<y>{_YEAR}))?"), "month"),
    (re.compile(_YEAR), "year"),
)  # fmt: skip


def _calendar(text: str) -> tuple[re.Match[str], str] | None:
    """The match of `text` (lower case) as a calendar date, month or year, and which period; else None."""
    for form, period in _ABSOLUTE:
        if (m := form.fullmatch(text)) is not None:
            return m, period
    return None


def _absolute(text: str, m: re.Match[str], period: str, day: datetime) -> tuple[datetime, datetime] | None:
    """[start, end) of a calendar date, month or year (`_calendar`'s match) read by dateutil's parser,
    the most recent one on or before `day` when it names no year (as dateparser's PREFER_DATES_FROM
    past reads it; February 29 in the last leap year). None when it is no date ("february 30")."""
    yearless = period != "year" and not (m.group("y") or (period == "day" and m.group("iso")))
    try:  # a yearless date is read in a leap year, so that February 29 is a date
        d = _dateutil.parse(text, default=(day.replace(year=2000) if yearless else day).replace(day=1))
    except (ValueError, OverflowError):
        return None
    if period == "year":
        return d.replace(month=1), d.replace(month=1, year=d.year + 1)
    if yearless:
        d = _on_or_before(d, day)
    return (d, d + DAY) if period == "day" else (d, _next_month(d))


def _on_or_before(d: datetime, day: datetime) -> datetime:
    """The latest date on or before `day` with the month and day of `d`."""
    for year in range(day.year, day.year - 9, -1):
        try:
            got = d.replace(year=year)
        except ValueError:  # February 29 in a common year
            continue
        if got <= day:
            return got
    raise AssertionError("every eight years hold a February 29")


@lru_cache(maxsize=4096)
def _resolve(text: str, day: datetime) -> tuple[datetime, datetime] | None:
    """[start, end) of one point or period (lower case) as seen on `day` (naive UTC midnight): a day,
    a calendar week, month or year, or for "N units ago" the days around that point. Calendar dates
    are dateutil's to read (a tenth of a millisecond); what is relative ("last saturday", "two
    weeks ago") is dateparser's (milliseconds, cached per expression and day)."""
    if (calendar := _calendar(text)) is not None:
        return _absolute(text, *calendar, day)
    with _LOCK:
        data = _parser(day).get_date_data(text)
    if data is None or data.date_obj is None:
        return None
    d = _midnight(data.date_obj.replace(tzinfo=None))
    period = data.period or "day"
    ago = text.endswith("ago")
    if period in ("time", "day"):
        return d, d + DAY
    if period == "week":
        start = d - 3 * DAY if ago else d - timedelta(days=d.weekday())
        return start, start + 7 * DAY
    if period == "month":
        if ago:
            return d - 15 * DAY, d + 16 * DAY
        start = d.replace(day=1)
        return start, _next_month(start)
    if ago:  # "two years ago"
        return d - 182 * DAY, d + 183 * DAY
    start = d.replace(month=1, day=1)
    return start, start.replace(year=start.year + 1)


def _next_month(d: datetime) -> datetime:
    return d.replace(year=d.year + 1, month=1) if d.month == 12 else d.replace(month=d.month + 1)


def _back(now: datetime, n: int, unit: str) -> datetime:
    unit = unit.lower().rstrip("s")
    if unit == "day":
        return now - n * DAY
    if unit == "week":
        return now - 7 * n * DAY
    months = n * (12 if unit == "year" else 1)
    y, m = divmod(now.year * 12 + now.month - 1 - months, 12)
    day = min(now.day, 28)
    return now.replace(year=y, month=m + 1, day=day)


def _count(text: str | None) -> int:
    if not text:
        return 1
    t = text.strip().lower()
    return int(t) if t.isdigit() else _WORD_NUMBERS.get(t, 1)


def _span(m: re.Match[str], now: datetime, day: datetime) -> tuple[datetime | None, datetime | None] | None:
    """The window one match names, naive UTC, or None when it does not resolve."""
    if m.group("between"):
        a, b = _resolve(m.group("a").lower(), day), _resolve(m.group("b").lower(), day)
        if a is None or b is None:
            return None
        return (a[0], b[1]) if a[0] <= b[0] else (b[0], a[1])
    if m.group("unit"):
        return _back(day, _count(m.group("n")), m.group("unit")), day + DAY
    if _not_a_time(m):
        return None
    got = _resolve(m.group("p").lower(), day)
    if got is None:
        return None
    side = (m.group("side") or "").lower()
    if side == "since":
        return got[0], None
    if side == "after":
        return got[1], None
    if side:  # before, until, prior to
        return None, got[0]
    return got


def expressions(query: str) -> list[str]:
    """The time expressions of a query as written ("last year", "in March"), found but not resolved:
    what `from_query` reads a window from (a phrase it cannot resolve aside)."""
    if not _GATE.search(query):
        return []
    return [m.group(0).strip() for m in _SPAN.finditer(query) if not _not_a_time(m)]


def from_query(query: str, now: datetime) -> TimeWindow | None:
    """The window the query's time expressions name, or None when it names none. Several expressions
    ("first in January or in March?") give the smallest window that holds them all."""
    if not _GATE.search(query):
        return None
    naive = now.astimezone(UTC).replace(tzinfo=None)
    day = naive.replace(hour=0, minute=0, second=0, microsecond=0)
    starts: list[datetime | None] = []
    ends: list[datetime | None] = []
    words: list[str] = []
    for m in _SPAN.finditer(query):
        got = _span(m, naive, day)
        if got is None:
            continue
        starts.append(got[0])
        ends.append(got[1])
        words.append(m.group(0).strip())
    if not words:
        return None
    start = None if None in starts else min(s for s in starts if s is not None)
    end = None if None in ends else max(e for e in ends if e is not None)
    return TimeWindow(
        start=start.replace(tzinfo=UTC) if start else None,
        end=end.replace(tzinfo=UTC) if end else None,
        source="query",
        expression="; ".join(words),
    )


_LEADING = re.compile(r"^(?:(?:in|during|on|of|from|at|since|after|before|until|prior\s+to|over|within|for)\s+)+",
                      re.IGNORECASE)  # fmt: skip


class _Named(NamedTuple):
    """How to find the times a query named in a text: the pattern, and the first word of each phrase
    when all are ASCII (a lower-cased ASCII text holding none of them cannot match: a substring test
    each, instead of the pattern)."""

    pattern: re.Pattern[str]
    firsts: tuple[str, ...] | None


@lru_cache(maxsize=1024)
def _named(expression: str) -> _Named | None:
    phrases = {_LEADING.sub("", e.strip()).lower() for e in expression.split("; ")} - {""}
    if not phrases:
        return None
    alternatives = "|".join(r"\s+".join(map(re.escape, p.split())) for p in sorted(phrases))
    firsts = tuple(sorted({p.split()[0] for p in phrases})) if all(p.isascii() for p in phrases) else None
    return _Named(re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE), firsts)


def named_in(w: TimeWindow, text: str) -> bool:
    """Whether `text` says one of the times the query named, in the query's words ("last year",
    "saturday", "2015"; a leading preposition aside). A lasting memory that does is about that time in
    its own words, whenever it was said: "Who won the Super Bowl last year? Kansas City Chiefs.",
    stated the February after, answers "who won the super bowl last year?"."""
    if w.source != "query" or not w.expression:
        return False
    named = _named(w.expression)
    if named is None:
        return False
    if named.firsts is not None and text.isascii():
        low = text.lower()
        if not any(f in low for f in named.firsts):
            return False  # most candidates: no phrase's first word, so no match
    return named.pattern.search(text) is not None


def explicit(value: TimeRange | dict[str, Any] | str, now: datetime) -> TimeWindow:
    """An explicit time_range: a TimeRange (or its dict) of ISO 8601 start and end, an ISO 8601 interval
    "start/end" (".." or nothing for an open side), or a phrase resolved like a query's ("last week").
    Raises ValidationError when it says no time, or when start is not before end."""
    if isinstance(value, dict):
        if unknown := set(value) - {"start", "end"}:
            raise ValidationError(f"time_range: unknown field(s) {', '.join(sorted(unknown))}; use start and end")
        value = TimeRange(start=value.get("start"), end=value.get("end"))  # type: ignore[arg-type]
    if isinstance(value, TimeRange):
        return _checked(utc(value.start, "time_range.start"), utc(value.end, "time_range.end"), None)
    if not isinstance(value, str):
        raise ValidationError(f"time_range: expected {{start, end}} or a string, got {type(value).__name__}")
    text = value.strip()
    if not text:
        raise ValidationError("time_range: empty; give {start, end}, an ISO 8601 interval or a phrase ('last week')")
    if "/" in text and not re.search(r"\d/\d{1,2}/\d", text):  # an interval, not a date such as 3/4/2023
        a, _, b = text.partition("/")
        start = None if a.strip() in ("", "..") else utc(a.strip(), "time_range start")
        end = None if b.strip() in ("", "..") else utc(b.strip(), "time_range end")
        return _checked(start, end, text)
    try:
        point = utc(text, "time_range")
    except ValidationError:
        point = None
    if point is not None:  # one timestamp: the day it falls on
        day = point.replace(hour=0, minute=0, second=0, microsecond=0)
        return _checked(day, day + DAY, text)
    w = from_query(text, now)
    if w is None:
        raise ValidationError(
            f"time_range: could not read {text!r} as a time; give {{start, end}} in ISO 8601, an interval "
            "'2023-03-01/2023-04-01', or a phrase such as 'last week', 'in March', 'two weeks ago'"
        )
    return msgspec.structs.replace(w, source="time_range")


def _checked(start: datetime | None, end: datetime | None, expression: str | None) -> TimeWindow:
    if start is None and end is None:
        raise ValidationError("time_range: give start, end or both")
    if start is not None and end is not None and start >= end:
        raise ValidationError(f"time_range: start ({start.isoformat()}) must be before end ({end.isoformat()})")
    return TimeWindow(start=start, end=end, source="time_range", expression=expression)


def understand(query: str, time_range: TimeRange | dict[str, Any] | str | None, now: datetime) -> TimeWindow | None:
    """The window of one recall: the explicit `time_range` when given, else the query's own expressions."""
    if time_range is not None:
        return explicit(time_range, now)
    return from_query(query, now)


def fit(valid_from: datetime, w: TimeWindow, *, lasting: bool = False, valid_to: datetime | None = None) -> float:
    """1.0 when the memory's time is inside the window; outside it, halving with every `scale` of
    distance, where scale is a quarter of the window's width, at least a day and at most thirty.

    A moment (an event, an observation) has its time at valid_from. A `lasting` memory (a fact, a
    preference) holds from valid_from until valid_to (open when None): it fits a window it overlaps,
    so "who coached the team in 2015?" fits the answer that started in 2012 and held through 2015."""
    if lasting and valid_to is not None and w.start is not None and valid_to <= w.start:
        gap = w.start - valid_to
    elif not lasting and w.start is not None and valid_from < w.start:
        gap = w.start - valid_from
    elif w.end is not None and valid_from >= w.end:
        gap = valid_from - w.end
    else:
        return 1.0
    width = (w.end - w.start) if (w.start is not None and w.end is not None) else 28 * DAY
    scale = min(max(width / 4, DAY), 30 * DAY)
    return math.exp(-math.log(2) * (gap / scale))


def clear_cache() -> None:
    """Forget every resolved expression (the time_parsing benchmark measures a query's cold cost)."""
    _resolve.cache_clear()
