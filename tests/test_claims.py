"""Claims, not chunks: an observed turn is kept whole, each of its sentences that states something is a
claim of its own, linked to the turn, superseded or reinforced on its own; recall reads them together."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from conftest import Clock

from agentmem import Config, Memory, NewMemory, ValidationError
from agentmem.admission.policy import remark
from agentmem.claims import CLAIM, of_turn, states_something
from agentmem.config import ClaimRules
from agentmem.records import Hit
from fakes import FakeEmbedder
from servers import TOKEN, Server

P = "shop"
MAY = datetime(2024, 5, 1, tzinfo=UTC)
JUNE = datetime(2024, 6, 1, tzinfo=UTC)
RULES = ClaimRules()
OLD = "Hi there! We deploy the shop API on Fly.io. Can you help me write a Dockerfile for it?"
NEW = "Quick update: we're on Render now for the shop API. Thanks for the help!"
QUERY = "where is the shop API deployed?"


def turn(text: str, when: datetime, session: str, **kw: object) -> NewMemory:
    return NewMemory(content=text, project=P, kind="observation", tier="working", session=session, valid_from=when,
                     **kw)  # type: ignore[arg-type]  # fmt: skip


def claims_of(mem: Memory, status: str | None = "active") -> list:  # type: ignore[type-arg]
    return mem.list_versions(projects=[P], kinds=[CLAIM], status=status, latest_only=False)[0]


def two_turns(mem: Memory, clock: Clock, old: str = OLD, new: str = NEW) -> tuple[int, int]:
    clock.now = MAY
    a = mem.observe([turn(old, MAY, "s1")])[0].id
    clock.now = JUNE
    b = mem.observe([turn(new, JUNE, "s2")])[0].id
    clock.now = JUNE + timedelta(days=1)
    return a, b


def said_in(h: Hit) -> int:
    return h.stated_in.id if h.stated_in is not None else h.memory.id


@pytest.mark.parametrize(
    ("sentence", "states"),
    [
        ("We deploy the shop API on Fly.io.", True),
        ("I've completed 4 projects since starting painting classes.", True),
        ("Can you help me write a Dockerfile for it?", False),  # a question
        ("Please write a Dockerfile for the shop API.", False),  # a request to the listener
        ("Thanks for the help with the shop API!", False),  # a courtesy
        ("If we move to Render, the shop API gets cheaper.", False),  # hypothetical: never retires a fact
        ("I'm thinking of moving the shop API to Render.", False),
        ("Sounds good.", False),
        ("We ship on Fridays now.", True),  # two content words: a change is often said briefly
        ("Lovely!", False),  # too few content words
        ("The api_key is sk-abcdefghijklmnopqrstuv1234", False),  # a secret is never a memory
        ("def deploy(app): return fly.launch(app)", False),  # code
    ],
)
def test_which_sentences_state_something(sentence: str, states: bool) -> None:
    assert states_something(sentence, RULES) is states


@pytest.mark.parametrize(
    ("sentence", "reason"),
    [  # remarks whose form does not open the sentence (seen as claims in LongMemEval's knowledge updates)
        ("I'm also thinking of working on some gift ideas for my sister's birthday next month.", "hypothetical"),
        ("By the way, I've been thinking about our team's workload.", "hypothetical"),
        ("I was thinking of trying out that new rose tea my sister introduced me to.", "hypothetical"),
        ("Speaking of which, I'm thinking of trying a new tea subscription service.", "hypothetical"),
        ("We deploy the shop API on Fly.io, but we might move it to Render.", "hypothetical"),
        ("The shop API is slow, so I want to add a cache in front of it.", "hypothetical"),
        ("I use vim and I'm also considering switching to Helix.", "hypothetical"),
        ("That's really helpful, thank you!", "procedural"),
        ("That's really helpful!", "procedural"),
        ("That's great to know!", "procedural"),
        ("Oh, that's a great idea, thanks for the tips.", "procedural"),
        ("So thanks for the help with the shop API.", "procedural"),
        ("Great, thanks!", "procedural"),
        # ordinary statements stay statements, with a conjunction, a condition or praise inside
        ("We deploy on Fridays, but if a release fails we roll back.", None),
        ("We're on Render now for the shop API, and it is cheaper.", None),
        ("That's great, we moved the shop API to Render last week.", None),
        ("It's useful for caching sessions of the shop API.", None),
        ("So now, we use Render for the shop API.", None),
        ("I moved to Denver and I love the mountains.", None),
        ("I have a dog and I could not be happier.", None),
        ("We've been planning the migration for months, and it is done.", None),
        ("I think City View Rooftop sounds like a great option.", None),
        ("I've completed 4 projects since starting painting classes.", None),
    ],
)
def test_remarks_are_read_wherever_a_clause_begins(sentence: str, reason: str | None) -> None:
    assert remark(sentence) == reason
    assert states_something(sentence, RULES) is (reason is None)


def test_a_sentence_states_what_comes_before_its_hedged_clause() -> None:
    # the statement before "so I was thinking of ..." is a claim; what someone wondered aloud is not
    text = (
        "I'm thinking of somewhere more relaxed. My friend Rachel just moved back to the suburbs, so I was "
        "thinking of somewhere near a major city. We deploy the shop API on Fly.io, but we might move it to Render."
    )
    assert of_turn(text, RULES) == [
        "My friend Rachel just moved back to the suburbs.",
        "We deploy the shop API on Fly.io.",
    ]
    assert of_turn("Maybe we deploy on Fridays, and we might deploy on Mondays.", RULES) == []


def test_a_turn_is_split_by_sentencex_and_labels_are_dropped() -> None:
    text = "User asked: Dr. Patel leads the payments team at Acme. Can you draft a memo?\n- We ship on Fridays now."
    assert of_turn(text, RULES) == ["Dr. Patel leads the payments team at Acme.", "We ship on Fridays now."]
    assert of_turn("We ship on Fridays. We ship on Fridays.", RULES) == ["We ship on Fridays."]
    many = " ".join(f"Service number {n} runs on port {8000 + n}." for n in range(30))
    assert len(of_turn(many, RULES)) == RULES.max_per_turn
    with pytest.raises(ValueError):
        ClaimRules(min_words=0)


def test_observe_keeps_the_turn_and_links_each_claim_to_it(memory: Memory, clock: Clock) -> None:
    (t,) = memory.observe([turn(OLD, MAY, "s1")])
    assert t.kind == "observation" and t.content == OLD  # the turn, whole, is what observe returns
    (c,) = claims_of(memory)
    assert c.content == "We deploy the shop API on Fly.io." and c.kind == CLAIM and c.source_ids == [t.id]
    assert (c.session, c.valid_from, c.project) == ("s1", t.valid_from, P)
    prov = memory.provenance(c.id)
    assert [e.id for e in prov.evidence] == [t.id] and [d.id for d in memory.provenance(t.id).derived] == [c.id]


def test_a_later_claim_supersedes_the_earlier_one_and_recall_reads_them_with_their_turns(
    memory: Memory, clock: Clock
) -> None:
    old_turn, new_turn = two_turns(memory, clock)
    (dead,) = claims_of(memory, "superseded")
    (alive,) = claims_of(memory)
    assert dead.superseded_by == alive.id and dead.supersede_reason == "moved" and alive.source_ids == [new_turn]
    assert memory.get(old_turn).status == "active"  # the turn stays, as evidence: never superseded
    hits = memory.recall(QUERY, project=P, k=5)
    assert hits[0].memory.id == alive.id and hits[0].stated_in is not None and hits[0].stated_in.id == new_turn
    assert [said_in(h) for h in hits] == [new_turn, old_turn]  # one hit per turn
    stale = hits[1]
    assert stale.memory.id == old_turn and stale.older_than == alive.id  # its answer was replaced: why, by whom
    history = memory.recall(QUERY, project=P, k=5, include_superseded=True)
    ids = [h.memory.id for h in history]
    assert ids.index(alive.id) < ids.index(dead.id)
    old = history[ids.index(dead.id)]
    assert old.memory.status == "superseded" and old.memory.superseded_by == alive.id
    assert old.stated_in is not None and old.stated_in.id == old_turn


def test_a_claim_said_again_is_reinforced_and_links_the_new_turn(memory: Memory, clock: Clock) -> None:
    a, b = two_turns(memory, clock, "We ship the mobile app on Fridays.", "Yes! We ship the mobile app on Fridays.")
    (c,) = claims_of(memory, None)
    assert c.reinforcements == 1 and c.source_ids == [a]
    assert sorted(e.id for e in memory.provenance(c.id).evidence) == [a, b]


def test_a_turn_with_a_live_and_a_dead_claim(memory: Memory, clock: Clock) -> None:
    old_turn, _ = two_turns(memory, clock, "We deploy the shop API on Fly.io. The design team meets on Mondays.")
    assert {c.content for c in claims_of(memory)} == {"The design team meets on Mondays.",
                                                     "we're on Render now for the shop API."}  # fmt: skip
    hits = memory.recall("when does the design team meet?", project=P, k=5)
    (mine,) = [h for h in hits if said_in(h) == old_turn]
    assert mine.older_than is None  # its live half answers this query: it is not older news


def test_tool_observations_events_and_claims_off_make_no_claims(
    data_dir: Path, embedder: FakeEmbedder, clock: Clock
) -> None:
    with Memory(data_dir, embedder=embedder, clock=clock) as mem:
        mem.observe([turn("Used Edit: we deploy the shop API on Fly.io now", MAY, "s1", title="Edit")])
        mem.observe([NewMemory(content="We deployed the shop API on Fly.io today.", project=P, kind="event")])
        assert claims_of(mem, None) == []
    with Memory(data_dir.parent / "off", embedder=embedder, clock=clock,
                config=Config(claims=ClaimRules(enabled=False))) as mem:  # fmt: skip
        mem.observe([turn(OLD, MAY, "s1")])
        assert claims_of(mem, None) == []


def test_observe_stays_all_or_nothing(memory: Memory) -> None:
    with pytest.raises(ValidationError, match="observation 1"):
        memory.observe([turn(OLD, MAY, "s1"), turn(" ", MAY, "s1")])
    assert memory.list_versions(projects=[P], status=None)[0] == []


def test_claims_never_replace_a_remembered_memory(memory: Memory, clock: Clock) -> None:
    fact = memory.remember("We deploy the shop API on Fly.io", project=P).memory
    clock.now = JUNE
    memory.observe([turn(NEW, JUNE, "s2")])
    assert memory.get(fact.id).status == "active"  # what was said is evidence; a remembered fact is revised
    (said,) = claims_of(memory)
    again = memory.remember(said.content, project=P)  # and a remembered memory never counts as a claim
    assert again.superseded_id != said.id and memory.get(said.id).reinforcements == 0
    assert memory.get(said.id).status == "active"


@pytest.mark.model
def test_real_model_claims_through_observe(tmp_path: Path, real_embedder) -> None:  # type: ignore[no-untyped-def]
    clock = Clock(MAY)
    with Memory(tmp_path / "d", embedder=real_embedder, clock=clock) as mem:
        old_turn, new_turn = two_turns(mem, clock)
        (dead,) = claims_of(mem, "superseded")
        assert dead.content == "We deploy the shop API on Fly.io." and dead.supersede_reason == "moved"
        hits = mem.recall(QUERY, project=P, k=3)
        assert said_in(hits[0]) == new_turn
        assert [h.older_than is not None for h in hits if said_in(h) == old_turn] == [True]


@pytest.mark.model
@pytest.mark.slow
def test_claims_over_the_real_http_server(server: Server) -> None:
    server.start()
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=server.url, headers=auth, timeout=60) as http:
        for text, when in ((OLD, "2024-05-01T10:00:00Z"), (NEW, "2024-06-01T10:00:00Z")):
            r = http.post("/v1/observations", json={"observations": [{"content": text, "session": "s", "at": when}]})
            assert r.status_code in (200, 201), r.text
        r = http.post("/v1/recall", json={"query": QUERY, "k": 3})
        assert r.status_code == 200, r.text
        top = r.json()["hits"][0]
        assert top["memory"]["kind"] == "claim" and "Render" in top["memory"]["content"]
        assert top["stated_in"]["content"] == NEW and top["stated_in"]["kind"] == "observation"
        r = http.post("/v1/recall", json={"query": QUERY, "k": 3, "include_superseded": True})
        dead = [h for h in r.json()["hits"] if h["memory"]["status"] == "superseded"]
        assert dead and dead[0]["memory"]["supersede_reason"] == "moved" and dead[0]["stated_in"]["content"] == OLD


@pytest.mark.model
@pytest.mark.slow
def test_conversation_ingest_keeps_turns_whole_over_the_real_http_server(server: Server) -> None:
    server.start()
    auth = {"Authorization": f"Bearer {TOKEN}"}
    messages = [
        {"role": "user", "content": OLD, "id": "m1", "time": "2024-05-01T10:00:00Z"},
        {"role": "assistant", "content": "Sure, here is a Dockerfile.", "id": "m2"},
        {"role": "user", "content": NEW, "id": "m3", "time": "2024-06-01T10:00:00Z"},
    ]
    with httpx.Client(base_url=server.url, headers=auth, timeout=60) as http:
        r = http.post("/v1/ingest/conversation", json={"messages": messages, "session": "chat-1"})
        assert r.status_code == 200, r.text
        report = r.json()
        assert (report["turns"], report["claims"], report["skipped"]) == ({"created": 2}, 2, {"assistant_message": 1})
        r = http.post("/v1/recall", json={"query": QUERY, "k": 3})
        assert r.status_code == 200, r.text
        top = r.json()["hits"][0]
        assert top["memory"]["kind"] == "claim" and "Render" in top["memory"]["content"]
        said = top["stated_in"]
        assert (said["content"], said["kind"], said["source"], said["session"], said["source_ref"]) == (
            NEW, "observation", "conversation", "chat-1", "chat-1#m3")  # fmt: skip
        assert said["valid_from"].startswith("2024-06-01")
        r = http.post("/v1/recall", json={"query": QUERY, "k": 3, "include_superseded": True})
        dead = [h for h in r.json()["hits"] if h["memory"]["status"] == "superseded"]
        assert dead and dead[0]["memory"]["supersede_reason"] == "moved" and dead[0]["stated_in"]["content"] == OLD
        again = http.post("/v1/ingest/conversation", json={"messages": messages, "session": "chat-1"}).json()
        assert (again["turns"], again["claims"]) == ({"unchanged": 2}, 0)  # a re-scan writes nothing new


def test_deleting_a_turn_erases_the_claims_stated_in_it(memory: Memory) -> None:
    (turn,) = memory.observe([NewMemory(content="We deploy the billing service on Hetzner. It has 4 nodes.",
                                        project="p", kind="observation")])  # fmt: skip
    said = memory.store.built_on_each([turn.id])[turn.id]
    assert said
    report = memory.delete(ids=[turn.id], reason="erase request", actor="t")
    assert set(report.ids) == {turn.id, *(c.id for c in said)}
    assert all(memory.get(c.id).status == "deleted" for c in said)
    assert not memory.recall("where is billing deployed?", project="p") and memory.check().ok


def test_a_turn_whose_claim_is_said_again_is_no_older_news(memory: Memory, clock: Clock) -> None:
    first, _ = two_turns(
        memory,
        clock,
        "By the way, I have a cocktail-making class on Fridays, so maybe something I can try then.",
        "Speaking of cocktails, I have a cocktail-making class on Friday.",
    )
    [dead] = claims_of(memory, "superseded")
    assert dead.content == "I have a cocktail-making class on Fridays."  # the hedged clause is no part of it
    assert dead.supersede_reason in ("same value", "similarity")
    hits = memory.recall("What day of the week do I take a cocktail-making class?", project=P, k=5)
    (mine,) = [h for h in hits if said_in(h) == first]
    assert mine.older_than is None  # the later turn says the same: the earlier one is not older news
