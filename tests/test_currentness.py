"""Currentness in conversations: the newer statement of a slot ranks first (the older one marked
`older_than`), and superseded versions stay reachable with `include_superseded`."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import Clock
from sentencex import segment

from agentmem import Config, Memory, NewMemory, ValidationError
from agentmem.currentness.analysis import _may_hold_value, claims
from agentmem.records import Hit
from agentmem.slots import query_words, same_slot, time_words
from agentmem.supersede import words
from fakes import FakeEmbedder

BACKENDS = ("duckdb", "postgres")  # the behaviour suite runs on both

P = "me"
AUGUST = datetime(2023, 8, 16, tzinfo=UTC)
OCTOBER = datetime(2023, 10, 9, tzinfo=UTC)


def turn(text: str, when: datetime, session: str) -> NewMemory:
    return NewMemory(content=text, project=P, kind="observation", tier="working", session=session, valid_from=when)


def said_in(h: Hit) -> int:
    """The turn a hit stands for: a claim's turn (`stated_in`), or the turn itself."""
    return h.stated_in.id if h.stated_in is not None else h.memory.id


def newer_turn(hits: list[Hit], h: Hit) -> int | None:
    """The turn of the hit that `h` is older than (a hit of the reply, or the claim that replaced it)."""
    if h.older_than is None:
        return None
    of = {x.memory.id: said_in(x) for x in hits}
    return of.get(h.older_than, h.older_than)


def directly_under(hits: list[Hit], old: int, new: int) -> bool:
    """The hit standing for turn `old` comes right after the one standing for turn `new`."""
    ids = [said_in(h) for h in hits]
    return new in ids and old in ids and ids.index(old) == ids.index(new) + 1


def observe_two(mem: Memory, clock: Clock, old: str, new: str) -> tuple[int, int]:
    clock.now = AUGUST
    a = mem.observe([turn(old, AUGUST, "s1")])[0].id
    clock.now = OCTOBER
    b = mem.observe([turn(new, OCTOBER, "s2")])[0].id
    clock.now = OCTOBER + timedelta(days=1)
    return a, b


@pytest.mark.parametrize(
    ("older", "newer", "query", "same"),
    [
        # the query names the slot; both answer it with another number
        (
            "I've completed 4 projects since starting painting classes, and I feel confident.",
            "By the way, I just finished my 5th project since starting painting classes!",
            "How many projects have I completed since starting painting classes?",
            True,
        ),
        (
            "My highest score in Ticket to Ride so far is 124 points.",
            "I just got my highest score in Ticket to Ride - 132 points!",
            "What is my current highest score in Ticket to Ride?",
            True,
        ),
        # a supersession rule's same slot needs no query words
        ("We deploy the shop API on Fly.io", "We're on Render now for the shop API", "hosting", True),
        # another subject, or no value that differs
        (
            "I've completed 4 projects since starting painting classes.",
            "I bought 3 new brushes for the painting classes.",
            "How many projects have I completed since starting painting classes?",
            False,
        ),
        (
            "My highest score in Ticket to Ride is 124 points.",
            "My highest score in Ticket to Ride is 124 points, still.",
            "What is my highest score in Ticket to Ride?",
            False,
        ),
        # a number for a name is not a new value of one slot
        (
            "My highest score in Ticket to Ride is 124 points.",
            "My highest score in Ticket to Ride came when I played with Alice.",
            "What is my highest score in Ticket to Ride?",
            False,
        ),
    ],
)
def test_same_slot(older: str, newer: str, query: str, same: bool) -> None:
    assert same_slot(older, newer, query_words(query), 2) is same


@pytest.mark.parametrize(
    ("older", "newer", "query", "same"),
    [
        # said in a conversation: both answer the query, the older one in words with no value
        (
            "I've been dedicating about an hour each day to coding exercises, which has helped.",
            "By the way, I've been dedicating about two hours each day to coding exercises.",
            "How much time do I dedicate to coding exercises each day?",
            True,
        ),
        (
            "I've been trying to get my mom to use the app, but she's still stuck on her old paper grocery list.",
            "My mom is actually using the same grocery list app as me now.",
            "Is my mom using the same grocery list method as me?",
            True,
        ),
        # the newer one lacks the older one's number: it does not win
        (
            "My highest score in Ticket to Ride is 124 points.",
            "My highest score in Ticket to Ride came when I played with Alice.",
            "What is my highest score in Ticket to Ride?",
            False,
        ),
        # the same words again, or too few of the query's words shared
        (
            "I love hiking in the mountains near home.",
            "I love hiking in the mountains near home.",
            "Do I love hiking in the mountains near home?",
            False,
        ),
        (
            "I've completed 4 projects since starting painting classes.",
            "I bought new brushes for the painting classes.",
            "How many projects have I completed since starting painting classes?",
            False,
        ),
    ],
)
def test_same_slot_of_things_said(older: str, newer: str, query: str, same: bool) -> None:
    """Things said (observations, claims) state a slot when they answer the query the same way,
    with or without a value; remembered facts need a value for a value (the test above)."""
    assert same_slot(older, newer, query_words(query), 2, said=True) is same
    if same:
        assert same_slot(older, newer, query_words(query), 2) is False


PAINTING_OLD = (
    'I have a digital print of "Moonlit Ocean" by Jack Harris that I plan to hang in my bedroom. And of course, '
    "I'll make sure to leave the \"Ethereal Dreams\" painting above my living room sofa as is, since it's already a "
    "great conversation starter."
)
PAINTING_NEW = (
    'I\'ve been inspired by the "Moonlit Ocean" print in my bedroom. By the way, speaking of my bedroom, I recently '
    'moved the "Ethereal Dreams" painting by Emma Taylor above my bed, and it adds a nice touch to the space.'
)
PAINTING_Q = "Where is the painting 'Ethereal Dreams' by Emma Taylor currently hanging?"
WEIGHT_OLD = "I've lost 5 pounds in the past month, which is slow but steady progress."
WEIGHT_NEW = (
    "By the way, speaking of my cardio days, I've been doing great and I just realized I've lost 10 pounds since "
    "I started going consistently to the gym 3 months ago."
)
WEIGHT_Q = "How much weight have I lost since I started going to the gym consistently?"


def test_the_time_a_query_names_is_no_slot() -> None:
    """Two things said "last year" answer no one question for sharing those words (LoCoMo)."""
    q = "What did Melanie and her family see during their camping trip last year?"
    assert time_words(q) == {"last", "year"} and {"last", "year"} <= query_words(q)
    camping = (
        "Melanie: I'll always remember our camping trip last year when we saw the Perseid meteor shower. It was "
        "so amazing lying there and watching the sky light up."
    )
    pride = (
        "Caroline: I'm always here for you, Mel! We had a blast last year at the Pride fest. Those supportive "
        "friends definitely make everything worth it!"
    )
    assert not same_slot(camping, pride, query_words(q), 2, said=True, when=time_words(q))
    assert same_slot(camping, pride, query_words(q), 2, said=True)  # as it paired before


def test_a_stated_move_ranks_first_through_observe(memory: Memory, clock: Clock) -> None:
    old, new = observe_two(memory, clock, PAINTING_OLD, PAINTING_NEW)
    hits = memory.recall(PAINTING_Q, project=P, k=10)
    assert said_in(hits[0]) == new and directly_under(hits, old, new)
    # a slot rule orders, and does not mark: on natural writing it paired more true facts than updates
    assert all(h.older_reason != "slot rule" for h in hits)


def test_a_newer_turn_in_other_words_ranks_first(memory: Memory, clock: Clock) -> None:
    old, new = observe_two(
        memory,
        clock,
        "I've been dedicating about an hour each day to coding exercises, which has helped.",
        "By the way, I've been dedicating about two hours each day to coding exercises.",
    )
    hits = memory.recall("How much time do I dedicate to coding exercises each day?", project=P, k=5)
    assert directly_under(hits, old, new)


def test_claims_are_the_sentences_that_hold_a_value() -> None:
    text = "Thanks for the tips! I lead a team of 4 engineers now.\nWe ship on Fridays. Sounds good."
    assert [c.text for c in claims(text)] == ["I lead a team of 4 engineers now.", "We ship on Fridays."]


@pytest.mark.parametrize(
    "sentence",
    [
        "We ship on Fridays.",  # a name past the first word
        "The limit is 40 requests.",  # a digit
        "I have two cats.",  # a number word
        "Our stack runs on MySQL now.",  # an inner capital
        "AI can help here.",  # an inner capital in the first word
        "ok IM here",  # "IM" is no contraction of "I"
        '"Hello there," she said.',  # a capital after punctuation that ends no sentence
        "Il est arrivé à Zürich.",  # not ASCII: left to words()
    ],
)
def test_the_value_screen_passes_every_sentence_with_a_value(sentence: str) -> None:
    """`claims` reads a sentence's words only past the screen: it must never drop a value."""
    assert words(sentence).values and _may_hold_value(sentence)


def test_the_value_screen_drops_no_sentence_with_a_value_from_the_hand_written_pairs() -> None:
    """Over every sentence of the supersession pairs (updates, restatements, other claims): a sentence
    the screen skips has no value by `words`."""
    data = Path(__file__).parent.parent / "data"
    lines = [
        x
        for n in ("supersession_pairs.jsonl", "supersession_pairs_test.jsonl")
        for x in (data / n).read_text().splitlines()
    ]
    texts = [t for line in lines if line.strip() for r in [json.loads(line)] for t in (r["old"], r["new"])]
    sentences = [" ".join(p.split()) for t in texts for line in t.split("\n") for p in segment("en", line)]
    skipped = [s for s in sentences if s and not _may_hold_value(s)]
    assert len(sentences) > 800 and skipped  # the screen is tried, and skips some
    assert [s for s in skipped if words(s).values] == []


@pytest.mark.parametrize(
    "sentence", ["I think so.", "Yes, I'm sure I've seen it and I'd say I'll go.", "Thanks a lot for that!"]
)
def test_the_value_screen_skips_sentences_without_one(sentence: str) -> None:
    assert not _may_hold_value(sentence) and not words(sentence).values
    assert claims(sentence) == ()


def test_the_newer_statement_ranks_first_and_the_older_one_is_marked(memory: Memory, clock: Clock) -> None:
    old, new = observe_two(
        memory,
        clock,
        "I've completed 4 projects since starting painting classes, and I'm feeling pretty confident.",
        "I just finished my 5th project since starting painting classes.",
    )
    clock.now = OCTOBER + timedelta(days=1)
    memory.observe([turn("I'm planning a trip to Lisbon next spring.", OCTOBER, "s2")])
    hits = memory.recall("How many projects have I completed since starting painting classes?", project=P, k=3)
    assert directly_under(hits, old, new)
    assert {said_in(h): h for h in hits}[new].older_than is None
    # both are still there: nothing is deleted, and k=1 answers with the newer one
    assert [said_in(h) for h in memory.recall("projects completed painting classes", project=P, k=1)] == [new]


def test_the_newer_one_is_pulled_up_from_below_k(memory: Memory, clock: Clock) -> None:
    old, new = observe_two(
        memory,
        clock,
        "My highest score in Ticket to Ride is 124 points, and Ticket to Ride is my favourite game.",
        "Speaking of games, my highest score in Ticket to Ride is now 132 points.",
    )
    hits = memory.recall("highest score Ticket to Ride favourite game", project=P, k=1)
    assert [said_in(h) for h in hits] == [new]


def test_slot_window_zero_turns_it_off(data_dir: Path, embedder: FakeEmbedder, clock: Clock) -> None:
    with Memory(data_dir, embedder=embedder, clock=clock, config=Config(slot_window=0)) as mem:
        old, new = observe_two(
            mem, clock, "My highest score in Ticket to Ride is 124 points.", "My highest score in Ticket to Ride: 132."
        )
        hits = mem.recall("highest score in Ticket to Ride", project=P, k=2)
        assert all(h.older_than is None for h in hits)
    with pytest.raises(ValueError):
        Config(slot_query_words=0)


def test_include_superseded_ranks_old_versions_under_their_successor(memory: Memory) -> None:
    first = memory.remember("We deploy the shop API on Fly.io", project=P).memory
    second = memory.remember("We're on Render now for the shop API", project=P)
    assert second.outcome == "superseded" and second.superseded_id == first.id
    memory.remember("The shop API is written in Go", project=P)
    plain = memory.recall("where do we deploy the shop API on Fly.io?", project=P, k=5)
    assert first.id not in [h.memory.id for h in plain]
    hits = memory.recall("where do we deploy the shop API on Fly.io?", project=P, k=5, include_superseded=True)
    ids = [h.memory.id for h in hits]
    assert first.id in ids and ids.index(second.memory.id) < ids.index(first.id)
    old = hits[ids.index(first.id)].memory
    assert old.status == "superseded" and old.superseded_by == second.memory.id and old.supersede_reason == "moved"


def test_include_superseded_is_checked(memory: Memory) -> None:
    with pytest.raises(ValidationError, match="include_superseded"):
        memory.recall("x", include_superseded="yes")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="as_of"):
        memory.recall("x", include_superseded=True, as_of="2026-01-01T00:00:00Z")


@pytest.mark.model
def test_real_model_cli_example_and_conversation(tmp_path: Path, real_embedder) -> None:  # type: ignore[no-untyped-def]
    clock = Clock(AUGUST)
    with Memory(tmp_path / "d", embedder=real_embedder, clock=clock) as mem:
        fly = mem.remember("We deploy the shop API on Fly.io", project="shop")
        render = mem.remember("We're on Render now for the shop API", project="shop")
        assert render.outcome == "superseded" and render.superseded_id == fly.memory.id
        hits = mem.recall("where is the shop API deployed?", project="shop", k=3)
        assert hits[0].memory.id == render.memory.id and fly.memory.id not in [h.memory.id for h in hits]
        old, new = observe_two(
            mem,
            clock,
            "I've completed 4 projects since starting painting classes, and I'm feeling pretty confident.",
            "By the way, I just finished my 5th project since starting painting classes, and I'm proud!",
        )
        hits = mem.recall("How many projects have I completed since starting painting classes?", project=P, k=5)
        assert directly_under(hits, old, new)
        for older, newer, query in ((PAINTING_OLD, PAINTING_NEW, PAINTING_Q), (WEIGHT_OLD, WEIGHT_NEW, WEIGHT_Q)):
            old, new = observe_two(mem, clock, older, newer)
            hits = mem.recall(query, project=P, k=5)
            assert said_in(hits[0]) == new and directly_under(hits, old, new)


def test_events_take_no_part(memory: Memory, clock: Clock) -> None:
    clock.now = AUGUST
    old = memory.observe([NewMemory(content="My highest score in Ticket to Ride is 124 points.", project=P,
                                    kind="event", valid_from=AUGUST)])[0].id  # fmt: skip
    new = memory.observe([NewMemory(content="I just got my highest score in Ticket to Ride - 132 points!", project=P,
                                    kind="event", valid_from=OCTOBER)])[0].id  # fmt: skip
    hits = memory.recall("What is my highest score in Ticket to Ride?", project=P, k=2)
    assert {h.memory.id for h in hits} == {old, new} and all(h.older_than is None for h in hits)


def test_the_cheap_pair_check_never_drops_a_pair_the_rules_would_pair() -> None:
    """`_may_pair` skips the rules only where they would say no: over every claim pair of the
    hand-written supersession pairs (updates, restatements, other claims), both ways, and across pairs."""
    import json

    from agentmem.slots import _may_pair, _rule_slot
    from agentmem.supersede import words

    data = Path(__file__).parent.parent / "data"
    names = ("supersession_pairs.jsonl", "supersession_pairs_test.jsonl")
    lines = [x for n in names for x in (data / n).read_text().splitlines()]
    rows = [json.loads(line) for line in lines if line.strip()]
    said = [words(t) for r in rows for t in (r["old"], r["new"])]
    said += [c.words for r in rows for t in (r["old"], r["new"]) for c in claims(t)]
    assert len(rows) > 400
    paired = skipped = 0
    for i, a in enumerate(said):
        for b in said[max(0, i - 40) : i + 40]:  # each pair's own texts, both ways, and its neighbours'
            may = _may_pair(a, frozenset(a.words), b, frozenset(b.words))
            if _rule_slot(a, b):
                paired += 1
                assert may, (a.raw, b.raw)
            skipped += not may
    assert paired > 100 and skipped > paired  # it prunes, and the rules still pair what they paired
