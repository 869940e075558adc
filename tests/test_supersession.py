"""The supersession rules as a table of cases, through the real DuckDB, Tantivy and hnswlib."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agentmem import Config, Memory, Triple
from agentmem.records import MemoryVersion
from agentmem.supersede import Thresholds, decide, words
from agentmem.text import jaccard, tokens

BACKENDS = ("duckdb", "postgres")  # tests taking `memory` run on both (see conftest.py)

P = "shop"

# (first memory, second memory, expected outcome, expected reason)
CASES: list[tuple[str, dict[str, Any], dict[str, Any], str, str | None]] = [
    (
        "same key, other value",
        {"content": "The API listens on port 8080", "key": "api.port"},
        {"content": "We're on 4000 now", "key": "api.port"},
        "superseded",
        "key",
    ),
    (
        "same key, same content",
        {"content": "The API listens on port 8080", "key": "api.port"},
        {"content": "the API listens on port 8080.", "key": "api.port"},
        "reinforced",
        "key",
    ),
    (
        "same triple slot, other object",
        {"content": "Alice leads the payments team", "triple": Triple("Alice", "leads", "payments")},
        {"content": "Alice now runs search", "triple": Triple("alice", "Leads", "search")},
        "superseded",
        "triple",
    ),
    (
        "same triple, same object",
        {"content": "Alice leads the payments team", "triple": Triple("Alice", "leads", "payments")},
        {"content": "Alice is the lead of payments", "triple": Triple("Alice", "leads", "Payments")},
        "reinforced",
        "triple",
    ),
    (
        "one value swapped for another: same slot, new value",
        {"content": "We use Postgres for the main database of the shop"},
        {"content": "We use MySQL for the main database of the shop"},
        "superseded",
        "new value",
    ),
    (
        "a plain restatement of a new value",
        {"content": "The dev server runs on port 3000."},
        {"content": "The dev server is on port 4000 now."},
        "superseded",
        "new value",
    ),
    (
        "a new value in other words, with a multi-word name",
        {"content": "Our CI pipeline runs on Jenkins for every pull request."},
        {"content": "The CI pipeline runs on GitHub Actions for every pull request now."},
        "superseded",
        "new value",
    ),
    (
        "a restatement with more detail (jaccard above 0.7, nothing swapped)",
        {"content": "Deploys go out every Tuesday afternoon"},
        {"content": "Deploys go out every Tuesday afternoon after tests"},
        "superseded",
        "similarity",
    ),
    (
        "another subject with the same value is another fact, however similar",
        {"content": "The staging database runs PostgreSQL 14."},
        {"content": "The production database runs PostgreSQL 14."},
        "created",
        None,
    ),
    (
        "another subject with a new value is another fact",
        {"content": "The staging database runs PostgreSQL 14."},
        {"content": "The production database runs PostgreSQL 15 now."},
        "created",
        None,
    ),
    (
        "a different name in the leading position is another subject",
        {"content": "Alice is on vacation this week"},
        {"content": "Bob is on vacation this week"},
        "created",
        None,
    ),
    (
        "two values changed at once is another fact",
        {"content": "Alice works from the Lisbon office"},
        {"content": "Bob works from the Berlin office"},
        "created",
        None,
    ),
    (
        "a swapped descriptive word is another claim, even at jaccard above 0.7",
        {"content": "Four children are doing backbends in the gym"},
        {"content": "Four children are doing backbends in the park"},
        "created",
        None,
    ),
    (
        "jaccard between 0.4 and 0.7 only hints",
        {"content": "The deploy pipeline runs on GitHub Actions every night"},
        {"content": "The test pipeline runs on Jenkins every hour"},
        "created",
        None,
    ),
    (
        "jaccard below 0.4",
        {"content": "Our office is in Lisbon"},
        {"content": "The cache uses Redis with a one hour TTL"},
        "created",
        None,
    ),
    (
        "identical content reinforces",
        {"content": "Deploys happen on Tuesdays"},
        {"content": "deploys happen on tuesdays!"},
        "reinforced",
        "same content",
    ),
    (
        "different keys never meet by similarity",
        {"content": "The API listens on port 8080", "key": "api.port"},
        {"content": "The DB listens on port 8080", "key": "db.port"},
        "created",
        None,
    ),
    (
        "a key is an identity: a keyed memory never replaces one without a key",
        {"content": "The dev server runs on port 3000"},
        {"content": "The dev server is on port 4000 now", "key": "dev.port"},
        "created",
        None,
    ),
    (
        "a key is an identity: a memory without a key never replaces a keyed one",
        {"content": "The dev server runs on port 3000", "key": "dev.port"},
        {"content": "The dev server is on port 4000 now"},
        "created",
        None,
    ),
    (
        "a key is an identity: the same text under another key is another memory",
        {"content": "Deploys happen on Tuesdays", "key": "deploy.day"},
        {"content": "Deploys happen on Tuesdays", "key": "release.day"},
        "created",
        None,
    ),
    (
        "different triple slots never meet by similarity",
        {"content": "Alice leads the payments team", "triple": Triple("Alice", "leads", "payments")},
        {"content": "Alice joined the payments team", "triple": Triple("Alice", "joined", "payments")},
        "created",
        None,
    ),
    (
        "an event never supersedes",
        {"content": "We use Postgres for the main database of the shop"},
        {"content": "We use MySQL for the main database of the shop", "kind": "event"},
        "created",
        None,
    ),
    (
        "an event is never superseded",
        {"content": "We use Postgres for the main database of the shop", "kind": "event"},
        {"content": "We use MySQL for the main database of the shop"},
        "created",
        None,
    ),
    (
        "an event is never superseded by key either",
        {"content": "Released version 1.0", "kind": "event", "key": "release"},
        {"content": "Released version 2.0", "key": "release"},
        "created",
        None,
    ),
]


@pytest.mark.parametrize(("first", "second", "outcome", "reason"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_supersession_table(
    memory: Memory, first: dict[str, Any], second: dict[str, Any], outcome: str, reason: str | None
) -> None:
    a = memory.remember(project=P, **first)
    assert a.outcome == "created"
    b = memory.remember(project=P, **second)
    assert b.outcome == outcome
    assert b.reason == (reason if outcome != "created" else None)
    old = memory.get(a.memory.id)
    if outcome == "superseded":
        assert b.superseded_id == a.memory.id
        assert b.memory.lineage_id == a.memory.lineage_id and b.memory.version == 2
        assert b.memory.parent_id == a.memory.id
        assert not old.is_latest and old.status == "superseded"
        assert old.superseded_by == b.memory.id and old.supersede_reason == reason
        assert old.superseded_at is not None and old.valid_to is not None
        assert old.supersede_similarity == b.similarity
    elif outcome == "reinforced":
        assert b.memory.id == a.memory.id and b.memory.reinforcements == 1
        assert old.is_latest and old.status == "active"
    else:
        assert b.memory.id != a.memory.id and old.is_latest and old.status == "active"
    assert memory.check().ok


def test_a_reinforcement_with_a_ttl_renews_the_expiry(memory: Memory, clock: Any) -> None:
    """Said again with a TTL, a memory's expiry runs anew from now (LangGraph's TTL refresh)."""
    a = memory.remember("Deploys happen on Tuesdays", project=P, key="deploy.day", ttl_days=1)
    clock.advance(hours=20)
    b = memory.remember("Deploys happen on Tuesdays", project=P, key="deploy.day", ttl_days=1)
    assert b.outcome == "reinforced" and b.memory.id == a.memory.id
    assert b.memory.expires_at == clock.now + timedelta(days=1) == memory.get(a.memory.id).expires_at
    c = memory.remember("Deploys happen on Tuesdays", project=P, key="deploy.day")
    assert c.outcome == "reinforced" and memory.get(a.memory.id).expires_at == b.memory.expires_at  # no TTL: kept


def test_other_project_is_never_superseded(memory: Memory) -> None:
    a = memory.remember("We use Postgres for the main database of the shop", project="one", key="db")
    b = memory.remember("We use MySQL for the main database of the shop", project="two", key="db")
    assert b.outcome == "created"
    assert memory.get(a.memory.id).is_latest


def test_between_thresholds_names_near_duplicates(memory: Memory) -> None:
    a = memory.remember("The deploy pipeline runs on GitHub Actions every night", project=P)
    b = memory.remember("The test pipeline runs on Jenkins every hour", project=P)
    sim = jaccard(set(tokens(a.memory.content)), set(tokens(b.memory.content)))
    assert 0.4 <= sim < 0.7
    assert [d.id for d in b.near_duplicates] == [a.memory.id]
    assert b.near_duplicates[0].similarity == pytest.approx(sim, abs=1e-4)


def test_best_match_wins_not_first(memory: Memory) -> None:
    weaker = memory.remember("The build server runs on a large machine in the Berlin office rack", project=P)
    stronger = memory.remember("The build server runs on a large machine in the Berlin office", project=P)
    assert stronger.outcome == "superseded" and stronger.superseded_id == weaker.memory.id
    result = memory.remember("The build server runs on a large machine in the Berlin office today", project=P)
    assert result.outcome == "superseded" and result.superseded_id == stronger.memory.id


def mv(i: int, text: str) -> MemoryVersion:
    t = datetime(2026, 1, 1, tzinfo=UTC)
    return MemoryVersion(
        id=i, lineage_id=i, version=1, parent_id=None, is_latest=True, status="active", content=text,
        tier="semantic", kind="fact", project=P, source="api", salience=0.5, confidence=0.7,
        created_at=t, valid_from=t, last_reinforced_at=t,
    )  # fmt: skip


def run_decide(new: str, cands: list[MemoryVersion], cosines: dict[int, float] | None = None, **th: Any) -> Any:
    return decide(
        kind="fact", content=new, triple_object=None, keyed=None, slotted=None, exact=None,
        candidates=cands, thresholds=Thresholds(**th), cosines=cosines,
    )  # fmt: skip


def test_decide_picks_highest_similarity() -> None:
    new = "The build server in the Berlin office runs on port 4000"
    cands = [
        mv(1, "The build server in the Berlin office runs on port 3000 today in the old rack"),
        mv(2, "The build server in the Berlin office runs on port 3000"),
        mv(3, "The cache server runs on port 3000"),
    ]
    d = run_decide(new, cands)
    assert d.outcome == "superseded" and d.target is not None and d.target.id == 2 and d.reason == "new value"


def test_cosines_gate_both_rules() -> None:
    old = [mv(1, "The dev server runs on port 3000")]
    assert run_decide("The dev server is on port 4000 now", old, {1: 0.7}).outcome == "superseded"
    assert run_decide("The dev server is on port 4000", old, {1: 0.35}).outcome == "created"
    # saying "now" is a change stated as news: a lower cosine does
    assert run_decide("The dev server is on port 4000 now", old, {1: 0.35}).outcome == "superseded"
    assert run_decide("The dev server is on port 4000 now", old, {1: 0.2}).outcome == "created"
    assert run_decide("The dev server is on port 4000 now", old, {}).outcome == "created"  # not among the nearest
    assert run_decide("The dev server is on port 4000 now", old, {1: 0.7}, value_rule=False).outcome == "created"
    same = [mv(1, "Deploys go out every Tuesday afternoon")]
    new = "Deploys go out every Tuesday afternoon after tests"
    assert run_decide(new, same, {1: 0.9}).reason == "similarity"
    assert run_decide(new, same, {1: 0.7}).outcome == "created"


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("The dev server is on port 4000 now.", {"4000"}),
        ("Production is on PostgreSQL 15", {"postgresql", "15"}),
        ("CI is on GitHub Actions now.", {"ci", "github", "action"}),
        ("Pull requests need two approvals", {"two"}),
        ("Deploys happen on Tuesday. Standup is at 9:30", {"tuesday", "9", "30"}),
    ],
)
def test_value_words(text: str, values: set[str]) -> None:
    w = words(text)
    assert set(w.values) == values
    assert "now" not in w.words and "is" not in w.words


def test_thresholds_are_configurable(data_dir, embedder, clock) -> None:  # type: ignore[no-untyped-def]
    from agentmem import Config

    strict = Config(thresholds=Thresholds(supersede=0.95, hint=0.5, value_rule=False))
    with Memory(data_dir, embedder=embedder, clock=clock, config=strict) as mem:
        mem.remember("We use Postgres for the main database of the shop", project=P)
        b = mem.remember("We use MySQL for the main database of the shop", project=P)
        assert b.outcome == "created" and len(b.near_duplicates) == 1


def test_invalid_thresholds_rejected() -> None:
    with pytest.raises(ValueError):
        Thresholds(supersede=0.3, hint=0.5)
    with pytest.raises(ValueError):
        Thresholds(value_cosine=1.5)


@pytest.mark.model
def test_real_model_changes_supersede_and_traps_stay(tmp_path, real_embedder) -> None:  # type: ignore[no-untyped-def]
    with Memory(tmp_path / "d", embedder=real_embedder) as mem:
        staging = mem.remember("The staging database runs PostgreSQL 14.", project=P).memory
        prod = mem.remember("The production database runs PostgreSQL 14.", project=P)
        assert prod.outcome == "created"
        port = mem.remember("The dev server runs on port 3000.", project=P).memory
        docs = mem.remember("The docs server runs on port 8000.", project=P)
        assert docs.outcome == "created"
        new_prod = mem.remember("Production is on PostgreSQL 15 now.", project=P)
        assert new_prod.outcome == "superseded" and new_prod.superseded_id == prod.memory.id
        new_port = mem.remember("The dev server is on port 4000 now.", project=P)
        assert new_port.outcome == "superseded" and new_port.superseded_id == port.id
        assert mem.get(staging.id).is_latest and mem.get(docs.memory.id).is_latest


@pytest.mark.parametrize(
    ("old", "new", "fires"),
    [
        # an irregular participle meets its verb
        ("The backend team is led by Alice.", "The backend team lead is Priya.", True),
        # a name at the start of a sentence is a value when the other text never says it
        ("The product manager for checkout is Maria.", "Tom is the product manager for checkout now.", True),
        # both lead with a name: another subject, unless only the new text says "now"
        ("Kenji is on call for payments.", "Sofia is on call for payments now.", True),
        ("Alice is on vacation this week.", "Bob is on vacation this week.", False),
        # a definite subject that now is something else (at a restatement's cosine); not an action,
        # not "a man", not a complement that opens otherwise or holds a value
        ("The default branch is master.", "The default branch is main.", True),
        ("The meeting is on Monday.", "The meeting is in room 4.", False),
        ("Our budget is 5000 dollars.", "Our budget is approved.", False),
        # a value replaces a value; adding one is another fact
        ("My sister is a doctor.", "My sister is in Berlin.", False),
        ("A man is sleeping.", "A man is cooking.", False),
        ("The cat is sleeping.", "The cat is eating.", False),
        ("The man is playing a guitar.", "The man is playing a flute.", False),
        # the words of a bound are one word; another bound is another fact
        ("The maximum upload size is 10 MB.", "Uploads are capped at 25 MB now.", True),
        ("The public API rate limit is 100 requests per minute.", "The public API allows 500 requests a minute.", True),
        ("The maximum upload size is 10 MB.", "The maximum avatar size is 2 MB.", False),
        # light verbs are ignored as verbs only
        ("Production deploys happen on Tuesday.", "Production deploy day is Thursday.", True),
        ("My work laptop is a MacBook Pro.", "My personal laptop is a ThinkPad.", False),
        # a possessor names whose fact it is
        ("My partner's birthday is June 4.", "My birthday is October 19.", False),
        # the new text may be briefer, not add a subject of its own
        ("Our SLA promises 99.9% uptime.", "The SLA was raised to 99.95%.", True),
        ("Payments are processed by Stripe.", "Kenji is on call for the payments service.", False),
    ],
)
def test_value_rule_cases(old: str, new: str, fires: bool) -> None:
    d = run_decide(new, [mv(1, old)], {1: 0.85})
    assert (d.outcome == "superseded") is fires, d


@pytest.mark.parametrize(
    ("old", "new", "fires"),
    [
        # the action of one text is only a thing in the other: the stems meet, the claims do not
        ("The kids are painting the fence", "The kids are washing the fence paint", False),
        ("The intern is filing the reports", "The intern is reading the report files", False),
        ("Priya is reviewing the design doc", "Priya is designing the review doc", False),
        ("The robot is welding the steel frame", "The robot is painting the steel frame welds", False),
        # the same action in another verb form, or with an adverb, still restates
        ("The intern is filing the reports", "The intern is quickly filing the reports", True),
        ("The kids are painting the fence", "The kids painted the fence", True),
        ("We review pull requests on Fridays", "Pull requests are reviewed on Fridays", True),
    ],
)
def test_a_word_in_another_role_is_another_claim(old: str, new: str, fires: bool) -> None:
    d = run_decide(new, [mv(1, old)], {1: 0.9})
    assert (d.outcome == "superseded") is fires, d


@pytest.mark.model
def test_real_model_keeps_a_word_in_another_role_apart(tmp_path, real_embedder) -> None:  # type: ignore[no-untyped-def]
    with Memory(tmp_path / "d", embedder=real_embedder) as mem:
        filing = mem.remember("The intern is filing the reports.", project=P).memory
        reading = mem.remember("The intern is reading the report files.", project=P)
        assert reading.outcome == "created" and mem.get(filing.id).is_latest
        again = mem.remember("The intern is quickly filing the reports.", project=P)
        assert again.outcome == "superseded" and again.superseded_id == filing.id


def test_i_contractions_are_the_pronoun_not_a_name() -> None:
    """Mid-sentence, "I've" folds to a capitalised "Ive": it is the pronoun, no value of the slot."""
    w = words("By the way, I've been on Render since 2021 and I'm happy. I'll stay, I'd say.")
    assert w.values == {"render", "2021"} and not {"ive", "im", "ill", "id"} & set(w.words)


def test_the_action_a_text_states() -> None:
    w = words("A dog is not eagerly chasing the red ball")
    assert w.actions == {"chase"} and "ball" not in w.verbal
    assert words("The reports are being filed by the intern").actions == {"file"}
    assert words("The invoice is thrown away").actions == {"throw"}
    assert words("The king is in the building").actions == set()  # no "-ing" of a verb, no auxiliary before it


def test_a_new_state_needs_a_restatements_cosine() -> None:
    old = [mv(1, "The default branch is master.")]
    assert run_decide("The default branch is main.", old, {1: 0.85}).outcome == "superseded"
    assert run_decide("The default branch is main.", old, {1: 0.6}).outcome == "created"


def bm25_ids(memory: Memory, text: str) -> set[int]:
    memory.indexes.refresh()  # what waits in the BM25 writer is searchable after its commit
    return {i for i, _ in memory.indexes.search_text(text, 10, project=P)}


def test_search_finds_a_brief_update_by_how_its_slot_was_described(memory: Memory) -> None:
    memory.remember("The product cache TTL is 10 minutes", project=P)
    old = memory.remember("The dev server runs on Jenkins port 3000", project=P, key="dev.port")
    new = memory.remember("We're on 4000 now", project=P, key="dev.port")
    assert new.outcome == "superseded" and new.superseded_id == old.memory.id
    # the words of the version it replaced still lead to it; its dead values do not
    assert new.memory.id in bm25_ids(memory, "dev server port")
    assert new.memory.id not in bm25_ids(memory, "3000")
    assert new.memory.id not in bm25_ids(memory, "Jenkins")
    assert [h.memory.id for h in memory.recall("dev server port", project=P, k=1)] == [new.memory.id]
    # names at the start and a state's old complement are dead values too; accents fold
    alice = memory.remember("Alice is on call for payments", project=P, key="oncall")
    bob = memory.remember("Bob is on call for payments now", project=P, key="oncall")
    assert bob.superseded_id == alice.memory.id and bm25_ids(memory, "Alice") == set()
    memory.remember("The default branch is master", project=P, key="branch")
    main = memory.remember("The default branch is main now", project=P, key="branch")
    assert main.memory.id in bm25_ids(memory, "default branch") and bm25_ids(memory, "master") == set()
    # a rebuild from DuckDB indexes the same text as the outbox did
    memory.rebuild(["bm25"])
    assert new.memory.id in bm25_ids(memory, "dev server port")
    assert new.memory.id not in bm25_ids(memory, "3000")


@pytest.mark.parametrize("purge_files", [True, False], ids=["rebuild", "outbox"])
def test_erasing_an_old_version_erases_its_words_from_the_search_index(
    data_dir: Any, embedder: Any, clock: Any, purge_files: bool
) -> None:
    with Memory(data_dir, embedder=embedder, clock=clock, config=Config(purge_index_files=purge_files)) as memory:
        old = memory.remember("The staging payroll host is zebrafinch", project=P, key="payroll.host")
        new = memory.remember("It's blackbird now", project=P, key="payroll.host")
        assert new.memory.id in bm25_ids(memory, "staging payroll")
        memory.delete(reason="erasure request", ids=[old.memory.id])
        assert bm25_ids(memory, "staging payroll") == set()
        assert new.memory.id in bm25_ids(memory, "blackbird")
        assert memory.check().ok


@pytest.mark.parametrize(
    ("old", "new", "fires"),
    [
        # a move stated as news, a change verb, a replacement naming the old value, a retraction
        ("We deploy the shop API on Fly.io", "We're on Render now for the shop API", True),
        ("We use Jenkins for CI", "We switched to GitHub Actions for CI", True),
        ("We use Jenkins for CI", "GitHub Actions replaced Jenkins for CI", True),
        ("We deploy the shop API on Fly.io", "We moved the shop API to Render", True),
        ("We use Jenkins for CI", "We no longer use Jenkins", True),
        ("We use Jenkins for CI", "We don't use Jenkins anymore", True),
        ("Jira is where we track bugs.", "We stopped using Jira", True),
        # another subject, another value dropped, or no word that says it moved
        ("We deploy the shop API on Fly.io", "We moved the blog to Render", False),
        ("We deploy the shop API on Fly.io", "We deploy the blog on Render", False),
        ("The iOS team runs two-week sprints.", "The web team switched to one-week sprints.", False),
        ("We use Jenkins for CI", "We no longer use Travis for CI", False),
        ("Free users can upload files up to 10 MB.", "Premium users can now upload files up to 1 GB.", False),
    ],
)
def test_a_stated_move_supersedes(old: str, new: str, fires: bool) -> None:
    d = run_decide(new, [mv(1, old)], {1: 0.5})
    assert (d.outcome == "superseded") is fires, d


def test_a_stated_move_needs_the_marked_cosine() -> None:
    old = [mv(1, "We deploy the shop API on Fly.io")]
    d = run_decide("We're on Render now for the shop API", old, {1: 0.5})
    assert (d.outcome, d.reason) == ("superseded", "moved")
    assert run_decide("We're on Render now for the shop API", old, {1: 0.2}).outcome == "created"
    assert run_decide("We're on Render now for the shop API", old, {1: 0.5}, value_rule=False).outcome == "created"


def test_a_question_and_its_new_answer_supersedes_and_two_questions_never_meet() -> None:
    old = [mv(1, "Who is the education minister of Bihar? Krishna Nandan Prasad Verma.")]
    d = run_decide("Who is the education minister of Bihar? Vijay Kumar Choudhary.", old, {1: 0.8})
    assert (d.outcome, d.reason) == ("superseded", "new answer")
    # another question is another slot, however alike the words
    other = [mv(2, "When did England last get to the semi final of a world cup? 2018.")]
    assert run_decide("Where did England finish in the world cup? Semi-final.", other, {2: 0.9}).outcome == "created"
    # the same question and answer in other spacing restates it: no new answer
    same = run_decide("who is the education minister of bihar ?  Krishna Nandan Prasad Verma", old, {1: 0.99})
    assert same.reason != "new answer"


def test_a_new_answer_retires_every_memory_that_asks_its_question() -> None:
    """A paraphrase with the same answer was merged first: the new text restates it and answers the
    fact's own older statement anew, so both leave (one write, one lineage continued)."""
    older = mv(1, "Who holds the record for the fastest marathon? Eliud Kipchoge.")
    paraphrase = mv(2, "Who has the record for the fastest marathon? Kelvin Kiptum.")
    unrelated = mv(3, "Who holds the record for the fastest mile? Hicham El Guerrouj.")
    new = "Who holds the record for the fastest marathon? Kelvin Kiptum."
    d = run_decide(new, [older, paraphrase, unrelated], {1: 0.8, 2: 0.95, 3: 0.7})
    assert d.outcome == "superseded" and d.target is not None
    gone = {d.target.id} | {m.id for m, _ in d.also}
    assert gone == {1, 2} and all(n.id not in gone for n in d.near)
    # under the cosine a new answer needs, the older statement stays
    d = run_decide(new, [older, paraphrase], {1: 0.3, 2: 0.95})
    assert d.target is not None and d.target.id == 2 and d.also == ()


def test_a_new_answer_retires_both_through_remember(memory: Memory) -> None:
    older = memory.remember("Who holds the record for the fastest marathon? Eliud Kipchoge.", project=P).memory
    paraphrase = memory.remember("Who has the record for the fastest marathon? Kelvin Kiptum.", project=P).memory
    assert memory.get(older.id).is_latest  # another question with another answer: another slot
    r = memory.remember("Who holds the record for the fastest marathon? Kelvin Kiptum.", project=P)
    assert r.outcome == "superseded" and {r.superseded_id, *r.also_superseded} == {older.id, paraphrase.id}
    for gone in (older, paraphrase):
        v = memory.get(gone.id)
        assert (v.status, v.superseded_by, v.is_latest) == ("superseded", r.memory.id, False)
    assert [h.memory.id for h in memory.recall("fastest marathon record", project=P, k=5)] == [r.memory.id]
    reasons = {e.memory_id: e.reason for e in memory.audit(actions=["supersede"], projects=[P])[0]}
    assert reasons[r.also_superseded[0]] == "new answer"


LEAD_INS = ("", "Quick update: ", "FYI: ", "FYI, ", "Heads up - ", "Update: ")
LEAD_IN_CASES = [  # after "We deploy the shop API on Fly.io"
    ("we're on Render now for the shop API", True),
    ("we moved the shop API to Render", True),
    ("we no longer use Fly.io for the shop API", True),
    ("we're deploying the shop API now", False),  # no value in it: nothing moved
    ("the shop API docs are on Notion now", False),  # another subject
    ("we redeployed the shop API now", False),
]


@pytest.mark.parametrize("lead", LEAD_INS)
@pytest.mark.parametrize(("new", "fires"), LEAD_IN_CASES)
def test_a_lead_in_label_neither_makes_nor_hides_a_move(lead: str, new: str, fires: bool) -> None:
    # "Quick" or "FYI" at a sentence's start reads as a name, a new value: "Quick update: we're
    # deploying the shop API now" killed "We deploy the shop API on Fly.io", and "Heads up - we're
    # on Render now ..." missed the move
    text = lead + (new if lead else new[0].upper() + new[1:])
    d = run_decide(text, [mv(1, "We deploy the shop API on Fly.io")], {1: 0.5})
    assert (d.outcome == "superseded") is fires, d


def test_a_lead_in_label_through_remember_and_observe(tmp_path: Any, real_embedder: Any) -> None:
    from agentmem import NewMemory
    from agentmem.claims import CLAIM

    old = "We deploy the shop API on Fly.io."
    may, june = datetime(2024, 5, 1, tzinfo=UTC), datetime(2024, 6, 1, tzinfo=UTC)
    leads = ("Quick update: ", "FYI: ", "Heads up - ")
    cases = [(lead + new + ".", new + ".", fires) for lead in leads for new, fires in LEAD_IN_CASES]
    with Memory(tmp_path / "data", embedder=real_embedder) as mem:
        for n, (text, said_as, fires) in enumerate(cases):  # each case in its own projects: nothing else to meet
            first = mem.remember(old, project=f"r{n}")
            r = mem.remember(text, project=f"r{n}")
            assert (r.outcome == "superseded" and r.superseded_id == first.memory.id) is fires, (text, r.reason)
            mem.observe([NewMemory(content=old, project=f"o{n}", kind="observation", valid_from=may)])
            mem.observe([NewMemory(content=text, project=f"o{n}", kind="observation", valid_from=june)])
            dead = mem.list_versions(projects=[f"o{n}"], kinds=[CLAIM], status="superseded", latest_only=False)[0]
            assert [v.content for v in dead] == ([old] if fires else []), text
            said = mem.list_versions(projects=[f"o{n}"], kinds=[CLAIM], status="active", latest_only=False)[0]
            assert [v.content for v in said if v.content != old] == [said_as], text  # no label
