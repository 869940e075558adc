"""Time-aware recall: time named in a query, or an explicit time_range, boosts memories whose valid_from
falls in that window (never filters), and the reply says which window was understood."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import msgspec
import pytest
from litestar.testing import TestClient
from mcp import Client as McpClient

from agentmem import Config, Memory, NewMemory, ValidationError
from agentmem.client import Client
from agentmem.ranking import Weights
from agentmem.records import TimeRange, TimeWindow
from agentmem.timewindow import explicit, expressions, fit, from_query, named_in
from api.app import create_app
from api.mcp_backend import McpSettings
from api.mcp_server import build_server
from api.settings import load
from fakes import FakeEmbedder
from servers import TOKEN, Server
from tests.test_api import ENV, auth

NOW = datetime(2023, 4, 22, 8, 1, tzinfo=UTC)  # a Saturday


def day(s: str) -> datetime:
    return datetime.fromisoformat(s).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("What did I buy on August 20?", "2022-08-20", "2022-08-21"),  # no year, later than today: last year's
        ("What did I buy on 22 April?", "2023-04-22", "2023-04-23"),  # today
        ("What did I do on the 15th of December, 2023?", "2023-12-15", "2023-12-16"),  # a year given: as said
        ("the party on Feb 29", "2020-02-29", "2020-03-01"),  # the last leap year
        ("what did I do in June", "2022-06-01", "2022-07-01"),
        ("what did I do in Sept. 2021", "2021-09-01", "2021-10-01"),
    ],
)  # fmt: skip
def test_calendar_dates_read_without_a_year_are_the_latest_one_so_far(query: str, start: str, end: str) -> None:
    w = from_query(query, NOW)
    assert w is not None and (w.start, w.end) == (day(start), day(end))


def test_a_date_that_does_not_exist_names_no_time() -> None:
    assert from_query("what happened on February 30?", NOW) is None


def test_calendar_dates_resolve_as_dateparser_resolves_them() -> None:
    """The calendar forms read with dateutil start their window where dateparser's reading does (as
    dateparser alone resolved them before): the day, or the first of the month or year."""
    from dateparser.date import DateDataParser

    texts = ["august 20", "20 august", "20th of august, 2021", "aug. 3rd 2022", "feb 29", "june", "june 2021",
             "december, 2020", "2021", "2023-02-28", "may 22", "31 april"]  # fmt: skip
    for base in (datetime(2023, 4, 22), datetime(2024, 2, 29), datetime(2023, 12, 31)):
        settings = {"RELATIVE_BASE": base, "PREFER_DATES_FROM": "past", "RETURN_AS_TIMEZONE_AWARE": False}
        reference = DateDataParser(languages=["en"], settings=settings)
        for text in texts:
            w = from_query(f"what happened in {text}", base.replace(tzinfo=UTC))
            data = reference.get_date_data(text)
            if data.date_obj is None:
                assert w is None, (base, text)
                continue
            d = data.date_obj.replace(hour=0, minute=0, second=0, microsecond=0, tzinfo=UTC)
            start = {"month": d.replace(day=1), "year": d.replace(month=1, day=1)}.get(data.period, d)
            assert w is not None and w.start == start, (base, text, w, start)


@pytest.mark.parametrize(
    ("query", "start", "end", "words"),
    [
        ("Who did I go with to the music event last Saturday?", "2023-04-15", "2023-04-16", "last Saturday"),
        ("What did I do two weeks ago?", "2023-04-05", "2023-04-12", "two weeks ago"),
        ("What did we decide in March?", "2023-03-01", "2023-04-01", "in March"),
        ("Which pair of shoes did I clean last month?", "2023-03-01", "2023-04-01", "last month"),
        ("what happened yesterday", "2023-04-21", "2023-04-22", "yesterday"),
        ("What did I eat on March 3rd?", "2023-03-03", "2023-03-04", "on March 3rd"),
        ("Who did I meet with during the lunch last Tuesday?", "2023-04-18", "2023-04-19", "last Tuesday"),
        ("what did I do last week", "2023-04-10", "2023-04-17", "last week"),
        ("what happened 3 days ago", "2023-04-19", "2023-04-20", "3 days ago"),
        ("in 2022 what car did I drive", "2022-01-01", "2023-01-01", "in 2022"),
        ("events I attended in the past month", "2023-03-22", "2023-04-23", "in the past month"),
        ("what did I do on 2023-03-05", "2023-03-05", "2023-03-06", "on 2023-03-05"),
        ("the trip in January or the party in March, which came first?", "2023-01-01", "2023-04-01",
         "in January; in March"),
        ("meetings between March 1 and March 10", "2023-03-01", "2023-03-11", "between March 1 and March 10"),
    ],
)  # fmt: skip
def test_time_in_a_query_becomes_a_window(query: str, start: str, end: str, words: str) -> None:
    w = from_query(query, NOW)
    assert w is not None
    assert (w.start, w.end, w.expression, w.source) == (day(start), day(end), words, "query")


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [("What did we do since last week?", "2023-04-10", None), ("what happened before March 2023", None, "2023-03-01"),
     ("What did I do after May 2022?", "2022-06-01", None)],
)  # fmt: skip
def test_since_after_and_before_open_one_side(query: str, start: str | None, end: str | None) -> None:
    w = from_query(query, NOW)
    assert w is not None and (w.start, w.end) == (start and day(start), end and day(end))


@pytest.mark.parametrize(
    "query",
    ["the database config", "I may go to the gym", "We burned 2000 calories", "What time do I wake up on Tuesdays?",
     "How many titles are on my to-watch list?", "How many days ago did I buy a smoker?",
     # a weekday or month that begins a name is no time
     "Who has hosted Saturday Night Live the most?", "Who won Monday Night Football?", "What is March Madness?"],
)  # fmt: skip
def test_no_time_no_window(query: str) -> None:
    assert from_query(query, NOW) is None


@pytest.mark.parametrize(
    ("query", "words"),
    [("What did I watch on Saturday Night?", "on Saturday"),  # a time of day after it: still a time
     ("Are we meeting Saturday, March 4?", "Saturday; March 4"), ("the party on Saturday Mia threw", "on Saturday"),
     ("who has hosted the most saturday night live shows", "saturday"),  # no capitals: no name to tell by
     ("What happened on Saturday Night Live last Saturday?", "last Saturday")],
)  # fmt: skip
def test_a_weekday_or_month_not_part_of_a_name_stays_a_time(query: str, words: str) -> None:
    w = from_query(query, NOW)
    assert w is not None and w.expression == words


def test_expressions_are_found_as_written_without_resolving() -> None:
    assert expressions("what did we do last year and in March?") == ["last year", "in March"]
    assert expressions("Who has hosted Saturday Night Live?") == [] and expressions("I may go") == []


def test_a_text_names_the_query_time_in_its_words() -> None:
    w = from_query("who won the super bowl last year", NOW)
    assert w is not None and named_in(w, "Who won the football Super Bowl last year? Kansas City Chiefs.")
    assert not named_in(w, "Who won the Super Bowl? Kansas City Chiefs.") and not named_in(w, "my last yearbook")
    w = from_query("who won the cup in 2015", NOW)
    assert w is not None and named_in(w, "Who won the cup in 2015? Spain.") and named_in(w, "the 2015 cup: Spain")
    assert not named_in(w, "code 20150") and not named_in(explicit("last year", NOW), "last year")  # query words only
    w = from_query("what did we do last year", NOW)
    assert w is not None and named_in(w, "LAST   YEAR we moved") and named_in(w, "In Zürich, last year.")  # any case
    assert not named_in(w, "the year before last") and not named_in(w, "À Zürich, l'an dernier.")


@pytest.mark.parametrize(
    ("value", "start", "end"),
    [({"start": "2023-03-01T00:00:00Z", "end": "2023-04-01T00:00:00Z"}, "2023-03-01", "2023-04-01"),
     (TimeRange(start=day("2023-03-01")), "2023-03-01", None), ("2023-03-01/2023-04-01", "2023-03-01", "2023-04-01"),
     ("../2023-04-01", None, "2023-04-01"), ("2023-03-05", "2023-03-05", "2023-03-06"),
     ("last week", "2023-04-10", "2023-04-17")],
)  # fmt: skip
def test_explicit_time_range(value: Any, start: str | None, end: str | None) -> None:
    w = explicit(value, NOW)
    assert (w.start, w.end, w.source) == (start and day(start), end and day(end), "time_range")


@pytest.mark.parametrize(
    ("value", "message"),
    [("no time here", "could not read 'no time here' as a time"), ("", "empty"),
     ("2023-04-01/2023-03-01", "must be before end"), ({"start": None}, "give start, end or both"),
     ({"from": "2023-01-01"}, "unknown field(s) from"), ("2023-13-01/..", "not an ISO 8601 timestamp"),
     (5, "expected {start, end} or a string")],
)  # fmt: skip
def test_bad_time_range_says_what_is_wrong(value: Any, message: str) -> None:
    with pytest.raises(ValidationError, match="time_range") as e:
        explicit(value, NOW)
    assert message in str(e.value)


def test_fit_is_one_inside_and_falls_off_outside() -> None:
    w = TimeWindow(start=day("2023-04-15"), end=day("2023-04-16"), source="query")
    inside, near, far = (fit(day(d) + timedelta(hours=3), w) for d in ("2023-04-15", "2023-04-16", "2023-04-25"))
    assert inside == 1.0 and 0.0 < far < near < 1.0
    assert fit(day("2023-04-14"), w) == pytest.approx(fit(day("2023-04-16") + timedelta(hours=24), w))


def test_a_lasting_memory_fits_every_window_it_overlaps() -> None:
    w = TimeWindow(start=day("2015-01-01"), end=day("2016-01-01"), source="query")
    started, ended, later = day("2012-03-01"), day("2014-06-01"), day("2016-02-01")
    assert fit(started, w, lasting=True) == 1.0  # held from 2012 on, so in 2015 too
    assert fit(started, w, lasting=True, valid_to=day("2015-03-01")) == 1.0
    assert fit(started, w, lasting=True, valid_to=ended) == pytest.approx(fit(ended, w))  # over before the window
    assert fit(later, w, lasting=True) == pytest.approx(fit(later, w)) and fit(later, w) < 1.0  # began after it
    assert fit(started, w) < 0.01  # a moment of 2012 is far from 2015


# -- in a Memory (FakeEmbedder, fixed clock) -----------------------------------------------------


def dinner_memory(path: Path) -> Memory:
    """The same memory, observed three times a week apart (observations never reinforce)."""
    mem = Memory(path, embedder=FakeEmbedder(), clock=lambda: NOW)
    when = ("2023-04-08T19:00", "2023-04-15T19:00", "2023-04-21T19:00")
    mem.observe([NewMemory(content="Dinner with Ana at the corner place", project="p", kind="event", valid_from=day(w))
                 for w in when])  # fmt: skip
    return mem


@pytest.fixture
def dinners(tmp_path: Path) -> Iterator[Memory]:
    mem = dinner_memory(tmp_path / "data")
    yield mem
    mem.close()


def dates(hits: list[Any]) -> list[str]:
    return [h.memory.valid_from.date().isoformat() for h in hits]


def test_a_time_in_the_query_lifts_memories_from_then(dinners: Memory) -> None:
    plain = dinners.search("dinner with Ana at the corner place", project="p")
    assert plain.window is None and all(h.parts.time_fit is None for h in plain.hits)
    for said, top in (("two weeks ago", "2023-04-08"), ("last Saturday", "2023-04-15"), ("yesterday", "2023-04-21")):
        assert dates(dinners.recall(f"dinner with Ana at the corner place {said}", project="p"))[0] == top, said
    found = dinners.search("dinner with Ana at the corner place last Saturday", project="p")
    assert found.window is not None and found.window.expression == "last Saturday"
    assert dates(found.hits)[0] == "2023-04-15" and found.hits[0].parts.time_fit == 1.0
    assert len(found.hits) == 3  # a boost, not a filter: the others are still there, lower
    assert all(h.parts.time_fit is not None and h.parts.time_fit < 1.0 for h in found.hits[1:])
    assert dinners.recall("dinner with Ana at the corner place last Saturday", project="p")[0].memory.id == (
        found.hits[0].memory.id
    )


def test_an_explicit_time_range_wins_over_the_query(dinners: Memory) -> None:
    found = dinners.search("dinner with Ana last Saturday", project="p", time_range="2023-04-08/2023-04-09")
    assert found.window == TimeWindow(start=day("2023-04-08"), end=day("2023-04-09"), source="time_range",
                                      expression="2023-04-08/2023-04-09")  # fmt: skip
    assert dates(found.hits)[0] == "2023-04-08"
    with pytest.raises(ValidationError, match="time_range: start"):
        dinners.search("dinner", project="p", time_range={"start": "2023-04-09", "end": "2023-04-08"})


def test_as_of_resolves_time_against_that_moment(dinners: Memory) -> None:
    found = dinners.search("dinner with Ana yesterday", project="p", as_of="2023-04-16T12:00:00Z")
    assert found.window is not None and found.window.start == day("2023-04-15")
    assert dates(found.hits)[0] == "2023-04-15"


def test_a_year_in_the_question_lifts_the_fact_that_held_then_not_the_one_that_began_then(tmp_path: Path) -> None:
    """A fact holds from its valid_from until replaced: 'in 2015' fits the coach who started in 2012
    and was still coach in 2015 better than one who started in 2015 at another club (SituatedQA)."""
    with Memory(tmp_path / "data", embedder=FakeEmbedder(), clock=lambda: NOW) as mem:
        mem.remember("The Harbour FC coach is Lena Ortiz", project="p", valid_from=day("2012-03-01"))
        mem.remember("The Harbour FC coach is Lena Ortiz's assistant Tom Ruiz", project="p",
                     valid_from=day("2015-05-01"), kind="event")  # fmt: skip
        found = mem.search("The Harbour FC coach in 2015", project="p")
        assert found.window is not None and found.window.start == day("2015-01-01")
        fits = {h.memory.kind: h.parts.time_fit for h in found.hits}
        assert fits["fact"] == 1.0 and fits["event"] == 1.0
        old = mem.search("The Harbour FC coach in 2010", project="p")
        assert {h.memory.kind: h.parts.time_fit for h in old.hits}["fact"] < 1.0  # it began after 2010


def test_a_fact_that_names_the_query_time_fits_it_whenever_it_began(tmp_path: Path) -> None:
    """ "Who won the Super Bowl last year?" stated in February 2020 is about last year as of then: asked
    as of December 2020 ("last year" is 2019), it fits fully though it began after 2019, and a fact
    that only held through 2019 does not outrank it (SituatedQA)."""
    clock = {"now": day("2019-01-01")}
    with Memory(tmp_path / "data", embedder=FakeEmbedder(), clock=lambda: clock["now"]) as mem:
        other = mem.remember("Who won the Super Bowl in the end? The home team.", project="p",
                             valid_from=day("2019-01-01")).memory  # fmt: skip
        clock["now"] = day("2020-02-02")
        chiefs = mem.remember("Who won the Super Bowl last year? Kansas City Chiefs.", project="p",
                              valid_from=day("2020-02-02")).memory  # fmt: skip
        found = mem.search("who won the super bowl last year", project="p", as_of="2020-12-09T00:00:00Z")
        assert found.window is not None and found.window.start == day("2019-01-01")
        fits = {h.memory.id: h.parts.time_fit for h in found.hits}
        assert fits[chiefs.id] == 1.0 and fits[other.id] == 1.0 and found.hits[0].memory.id == chiefs.id
        moment = mem.observe([NewMemory(content="We watched the Super Bowl last year at Sam's.", project="p",
                                        kind="event", valid_from=day("2020-02-02"))])[0]  # fmt: skip
        found = mem.search("the super bowl last year", project="p", as_of="2020-12-09T00:00:00Z")
        assert {h.memory.id: h.parts.time_fit for h in found.hits}[moment.id] < 1.0  # a moment keeps its own time


def test_a_zero_weight_turns_the_boost_off(dinners: Memory) -> None:
    plain = [h.memory.id for h in dinners.recall("dinner with Ana at the corner place", project="p")]
    dinners.config = msgspec.structs.replace(dinners.config, weights=Weights(time_query=0.0))
    found = dinners.search("dinner with Ana at the corner place last Saturday", project="p")
    assert found.window is not None  # understood and said, but not weighed
    assert [h.memory.id for h in found.hits] == plain and all(h.parts.time_fit == 1.0 or h.parts.time_fit < 1
                                                              for h in found.hits)  # fmt: skip


# -- over HTTP and MCP ---------------------------------------------------------------------------


def test_http_recall_takes_time_range_and_says_the_window(dinners: Memory) -> None:
    env = {**ENV, "AGENTMEM_SWEEP_EVERY_MINUTES": "0", "AGENTMEM_CONSOLIDATE_EVERY_MINUTES": "0"}
    dinners.remember("Dinner with Ana in the shop project", project="shop", kind="event", valid_from=day("2023-04-15"))
    with TestClient(create_app(load(env=env), mem=dinners)) as c:
        r = c.post("/v1/recall", json={"query": "dinner with Ana last Saturday"}, headers=auth("read"))
        assert r.status_code == 200, r.text
        assert r.json()["window"] == {"start": "2023-04-15T00:00:00Z", "end": "2023-04-16T00:00:00Z",
                                      "source": "query", "expression": "last Saturday"}  # fmt: skip
        assert r.json()["hits"][0]["parts"]["time_fit"] == 1.0
        body = {"query": "dinner", "time_range": {"start": "2023-04-01T00:00:00Z"}}
        r = c.post("/v1/recall", json=body, headers=auth("read"))
        assert r.status_code == 200 and r.json()["window"]["source"] == "time_range"
        assert c.post("/v1/recall", json={"query": "dinner"}, headers=auth("read")).json()["window"] is None
        for bad, says in [("whenever", "could not read 'whenever'"), ("2023-05-01/2023-04-01", "must be before end"),
                          ({"start": "2023-05-01T00:00:00Z", "end": "2023-04-01T00:00:00Z"}, "must be before end"),
                          ({"start": "2023-05-01"}, "time_range.start: Invalid RFC3339"),
                          ({"begin": "2023-04-01T00:00:00Z"}, "begin"), (7, "time_range")]:  # fmt: skip
            r = c.post("/v1/recall", json={"query": "dinner", "time_range": bad}, headers=auth("read"))
            assert r.status_code == 400, (bad, r.text)
            assert says in r.json()["error"]["message"], r.text


def test_mcp_recall_takes_time_range_and_says_the_window(tmp_path: Path) -> None:
    dinners = dinner_memory(tmp_path / "data")  # the adapter closes it
    settings = McpSettings(project="p", projects=("p",), agent="tester", session="s-1")
    seen: dict[str, Any] = {}

    async def body(c: McpClient) -> None:
        r = await c.call_tool("recall", {"query": "dinner with Ana", "time_range": "2023-04-08/2023-04-09"})
        assert not r.is_error, r.content
        seen["ok"] = r.structured_content
        bad = await c.call_tool("recall", {"query": "dinner", "time_range": "whenever"})
        seen["bad"] = (bad.is_error, str(bad.content[0].text))  # type: ignore[union-attr]

    async def run() -> None:
        async with McpClient(server) as c:
            await body(c)

    server, scoped = build_server(settings, lambda: dinners)
    try:
        anyio.run(run)
    finally:
        scoped.close()
    assert seen["ok"]["window"]["expression"] == "2023-04-08/2023-04-09"
    assert seen["ok"]["hits"][0]["valid_from"].startswith("2023-04-08")
    assert seen["bad"][0] and "could not read 'whenever'" in seen["bad"][1]


# -- the real server and model, over a socket ----------------------------------------------------


@pytest.mark.model
@pytest.mark.slow
def test_the_real_server_weighs_time(server: Server) -> None:
    server.start()
    today = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)
    with Client(server.url, token=TOKEN) as c:
        for days_ago in (1, 14, 40):
            when = today - timedelta(days=days_ago)
            c.remember(f"Went hiking in the hills with Sam ({days_ago} days back)", project="shop", kind="event",
                       valid_from=when)  # fmt: skip
        found = c.search("where did I go hiking with Sam two weeks ago?", project="shop", k=3)
        assert found.window is not None and found.window.expression == "two weeks ago"
        assert found.hits[0].memory.content.endswith("(14 days back)") and len(found.hits) == 3
        explicit_range = f"{(today - timedelta(days=45)).date()}/{(today - timedelta(days=35)).date()}"
        found = c.search("hiking with Sam", project="shop", time_range=explicit_range)
        assert found.window is not None and found.window.source == "time_range"
        assert found.hits[0].memory.content.endswith("(40 days back)")
    r = httpx.post(f"{server.url}/v1/recall", json={"query": "hiking", "time_range": "2026-05-01/2026-04-01"},
                   headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)  # fmt: skip
    assert r.status_code == 400 and "must be before end" in r.json()["error"]["message"]


def test_a_stored_question_that_asks_the_query_ranks_as_the_slot_asked_for(tmp_path: Path) -> None:
    """Asked as of 2014 "when is the last time the padres made the playoffs", the stored question that
    asks just that (answered 1998) ranks above another team's answer stated that very year, which
    recency alone favours (SituatedQA); its parts say why. Without the boost the other one wins."""
    def ask(weights: Weights) -> list[Any]:
        clock = {"now": datetime(1998, 1, 1, tzinfo=UTC)}
        where = tmp_path / f"data-{weights.asked}"
        with Memory(where, embedder=FakeEmbedder(), clock=lambda: clock["now"], config=Config(weights=weights)) as mem:
            mem.remember("When is the last time the padres made the playoffs? 1998.", project="p",
                         valid_from=clock["now"])  # fmt: skip
            clock["now"] = datetime(2014, 1, 1, tzinfo=UTC)
            mem.remember("When is the last time the lions made the playoffs? 2014.", project="p",
                         valid_from=clock["now"])  # fmt: skip
            clock["now"] = datetime(2020, 1, 1, tzinfo=UTC)
            return mem.recall("when is the last time the padres made the playoffs", project="p", k=2,
                              as_of="2014-01-01T00:00:00Z")  # fmt: skip

    hits = ask(Weights())
    assert "padres" in hits[0].memory.content and hits[0].parts.asked is True
    assert hits[1].parts.asked is None
    plain = ask(Weights(asked=0.0))
    assert "lions" in plain[0].memory.content
