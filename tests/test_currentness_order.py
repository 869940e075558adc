"""Recall's currentness stage (agentmem.currentness): the newer statement of a topic first, the
older directly under it, marked only when the pair model (or a same-question rule) says replaced."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from conftest import Clock

from agentmem import Memory, slots
from agentmem.currentness import analysis, pair
from agentmem.currentness.order import PAIR_MODEL, SAME_QUESTION, order
from agentmem.records import Hit, MemoryVersion, ScoreParts
from agentmem.text import token_set

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DIM = 4
PARTS = ScoreParts(relevance=1.0, effective_confidence=0.7, recency=1.0, salience=0.5)


def version(i: int, content: str, days: int = 0, kind: str = "fact") -> MemoryVersion:
    return MemoryVersion(id=i, lineage_id=i, version=1, parent_id=None, is_latest=True, status="active",
                         content=content, tier="semantic", kind=kind, project="p", source="api", salience=0.5,
                         confidence=0.7, created_at=T0 + timedelta(days=days), valid_from=T0 + timedelta(days=days),
                         last_reinforced_at=T0 + timedelta(days=days))  # fmt: skip


def hit(i: int, content: str, days: int, kind: str = "fact") -> Hit:
    return Hit(memory=version(i, content, days, kind), score=1.0 / i, parts=PARTS, has_history=False)


def unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def model(bias: float) -> pair.PairModel:
    """A pair model whose verdict is its bias alone: every pair gets sigmoid(bias)."""
    none = np.zeros(0, np.float32)
    head = pair.Head(weights=np.zeros(2 + 3 * DIM, np.float32), bias=bias, added=none, dropped=none)
    return pair.PairModel(embedder="test", orders=head, marks=head, mark=0.7, order=0.3, topic=0.5, beside=-1.0,
                          vocabulary=pair.shipped().vocabulary, both=pair.Heads.of([head, head]))  # fmt: skip


# ranked: an older fact first, an unrelated memory, then the newer statement of the older's topic
HITS = [hit(1, "The nightly backup runs at 2am", 0), hit(2, "Lunch is at noon", 1), hit(3, "Backups moved to 4am", 9)]
VECTORS = {1: unit(1, 0.2, 0, 0), 2: unit(0, 0, 1, 0), 3: unit(1, 0.4, 0, 0)}


def read(hits: list[Hit]) -> dict[int, analysis.Analysis]:
    """The hits' analyses, as the live set holds them (none for an event)."""
    return analysis.of_versions([h.memory for h in hits], {})


READ = read(HITS)


def ids(hits: list[Hit]) -> list[int]:
    return [h.memory.id for h in hits]


def test_the_newer_statement_of_a_topic_goes_first_and_the_older_right_under_it() -> None:
    out = order(HITS, window=10, vectors=VECTORS, analyses=READ, model=model(bias=0.0))  # p = 0.5: ordered, not marked
    assert ids(out) == [3, 1, 2]  # the unrelated memory is never put above the older statement
    assert all(h.older_than is None for h in out)


def test_the_older_one_is_marked_when_the_model_says_replaced() -> None:
    out = order(HITS, window=10, vectors=VECTORS, analyses=READ, model=model(bias=3.0))  # p = 0.95
    assert ids(out) == [3, 1, 2]
    assert (out[1].older_than, out[1].older_reason) == (3, PAIR_MODEL) and out[0].older_than is None


def test_nothing_moves_below_the_order_threshold_or_across_topics_or_without_a_model() -> None:
    assert ids(order(HITS, window=10, vectors=VECTORS, analyses=READ, model=model(bias=-3.0))) == [1, 2, 3]
    far = {**VECTORS, 3: unit(0, 0, 0, 1)}  # another topic: the cosine is under `topic`
    assert ids(order(HITS, window=10, vectors=far, analyses=READ, model=model(bias=3.0))) == [1, 2, 3]
    assert ids(order(HITS, window=10, vectors=VECTORS, analyses=READ, model=None)) == [1, 2, 3]
    past = order(HITS, window=2, vectors=VECTORS, analyses=READ, model=model(bias=3.0))
    assert ids(past) == [1, 2, 3]  # 3 is past the window


def test_events_and_question_pairs_are_not_ordered_by_the_model() -> None:
    events = [hit(1, "Deployed v1", 0, kind="event"), hit(3, "Deployed v2", 9, kind="event")]
    assert ids(order(events, window=10, vectors=VECTORS, analyses=read(events), model=model(bias=3.0))) == [1, 3]
    asked = [hit(1, "Who leads payments? Priya.", 0), hit(3, "Who leads search? Omar.", 9)]
    assert ids(order(asked, window=10, vectors=VECTORS, analyses=read(asked), model=model(bias=3.0))) == [1, 3]
    same = [hit(1, "Who leads payments? Priya.", 0), hit(3, "Who leads payments? Omar.", 9)]
    out = order(same, window=10, vectors=VECTORS, analyses=read(same), model=None, rule_pairs=[(0, 1)])
    assert ids(out) == [3, 1] and out[1].older_reason == SAME_QUESTION


def test_a_slot_rule_orders_without_marking() -> None:
    out = order(HITS, window=10, vectors={}, analyses=READ, model=None, rule_pairs=[(0, 2)])
    assert ids(out) == [3, 1, 2] and all(h.older_than is None for h in out)


def test_without_the_value_rules_hits_pair_on_a_question_or_on_enough_query_words() -> None:
    hits = [
        hit(1, "The nightly backup runs at 2am", 0),
        hit(2, "Who won the Super Bowl last year? The Chiefs.", 1),
        hit(3, "The backup disk holds 2TB", 2),  # one query word: too few to pair with anyone
        hit(4, "The nightly backup runs at 4am", 5),
        hit(5, "Who won the Super Bowl last year? The Eagles.", 6),
        hit(6, "Lunch is at noon", 7),
    ]
    q = slots.query_words("when does the nightly backup run")
    assert slots.pairs(hits, read(hits), q, frozenset(), query_words_needed=2, value_rules=False) == [(0, 3), (1, 4)]


def test_the_shipped_model_reads_only_its_own_embedders_vectors() -> None:
    shipped = pair.shipped()
    assert pair.for_embedder(shipped.embedder) is shipped and pair.for_embedder("fake-hash-64") is None
    assert 0 < shipped.order < shipped.mark < 1 and 0 < shipped.topic < 1
    assert shipped.orders.weights.shape == shipped.marks.weights.shape == (2 + 3 * 384,) and shipped.dim == 384
    assert not shipped.orders.added.size  # only marking reads words
    assert shipped.marks.added.any() and shipped.marks.dropped.any()


# -- through the real model, store and indexes ---------------------------------------------------

NEWS = [  # the cases: no rule names their words
    ("We deploy the shop API on Fly.io", "We're on Render now for the shop API", "where is the shop API deployed?"),
    ("Our team uses Jira for tickets", "We switched to Linear for tickets last week",
     "which tool do we use for tickets?"),
    ("The nightly backup runs at 2am", "Backups moved to 4am", "when does the nightly backup run?"),
    ("Priya works as a data analyst at Shopify.", "Priya changed jobs, she's now a product manager at Stripe.",
     "Where does Priya work?"),
    ("The user is vegetarian.", "The user isn't vegetarian anymore; they started eating fish and chicken again.",
     "What does the user eat?"),
]  # fmt: skip


@pytest.mark.model
@pytest.mark.parametrize(("older", "newer", "query"), NEWS)
def test_the_newer_statement_wins_and_the_older_is_gone_or_marked(
    tmp_path: Path, real_embedder, older: str, newer: str, query: str
) -> None:  # type: ignore[no-untyped-def]
    clock = Clock(T0)
    with Memory(tmp_path / "d", embedder=real_embedder, clock=clock) as mem:
        for i, text in enumerate(["Lunch is at noon on Fridays", "The office wifi is called acme-guest"]):
            mem.remember(text, project="p", valid_from=T0 - timedelta(days=i + 1))
        a = mem.remember(older, project="p").memory.id
        clock.advance(days=7)
        b = mem.remember(newer, project="p").memory.id
        clock.advance(days=1)
        hits = mem.recall(query, project="p", k=5)
        assert hits[0].memory.id == b
        stale = [h for h in hits if h.memory.id == a]
        assert stale == [] or (stale[0].older_than == b and stale[0].older_reason == PAIR_MODEL)


@pytest.mark.model
def test_two_true_look_alike_facts_both_stay_unmarked(tmp_path: Path, real_embedder) -> None:  # type: ignore[no-untyped-def]
    clock = Clock(T0)
    with Memory(tmp_path / "d", embedder=real_embedder, clock=clock) as mem:
        a = mem.remember("The auth service listens on port 8081.", project="p").memory.id
        clock.advance(days=7)
        b = mem.remember("The billing service listens on port 8082.", project="p").memory.id
        hits = mem.recall("which ports do the services listen on?", project="p", k=5)
        assert {a, b} <= {h.memory.id for h in hits} and all(h.older_than is None for h in hits)


@pytest.mark.model
def test_the_shipped_weights_are_what_the_training_script_makes() -> None:
    root = Path(__file__).parent.parent
    done = subprocess.run([sys.executable, str(root / "scripts" / "train_pair_model.py"), "--check"],
                          capture_output=True, text=True, cwd=root)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def _by_features(head: pair.Head, older: np.ndarray, newer: np.ndarray, texts: tuple[list[str], list[str]],
                 vocab: pair.Vocabulary) -> np.ndarray:  # fmt: skip
    """A head's probabilities as training weighs them: `features` and `word_features`, pair by pair."""
    z = []
    for o, n, a, b in zip(older, newer, *texts, strict=True):
        said = 0.0
        for w in pair.word_features(a, b):
            i = int(vocab.ids([w[1:]])[0])
            if i < vocab.known and head.added.size:
                said += float((head.added if w[0] == "+" else head.dropped)[i])
        z.append(pair.features(o, n, a, b) @ head.weights + head.bias + said)
    return 1 / (1 + np.exp(-np.array(z)))


def test_the_batched_verdict_is_the_trained_features_weighed() -> None:
    """Recall weighs many pairs at once without building `features`; training builds them: both agree."""
    model, rng = pair.shipped(), np.random.default_rng(0)
    older, newer = (rng.normal(size=(6, model.dim)).astype(np.float32) for _ in range(2))
    older /= np.linalg.norm(older, axis=1, keepdims=True)
    newer /= np.linalg.norm(newer, axis=1, keepdims=True)
    texts = [f"the backup runs at {h}am" for h in range(6)], [f"backups moved to {h + 2}am now" for h in range(6)]
    vocab = model.vocabulary
    for head in (model.orders, model.marks):
        assert np.allclose(head.each(older, newer, *texts, vocab), _by_features(head, older, newer, texts, vocab),
                           atol=1e-6)  # fmt: skip


def test_a_window_of_many_pairs_is_the_trained_features_weighed() -> None:
    """A recall's window: each text in many pairs, in both directions, more pairs than one block
    (`pair._CHUNK`)."""
    model, rng = pair.shipped(), np.random.default_rng(1)
    texts = [f"the {w} backup runs at {h}am" for w in ("nightly", "weekly", "audit") for h in range(4)]
    texts += ["backups moved to 4am now", "we also back up the logs", "Tomas speaks Portuguese."]
    vectors = rng.normal(size=(len(texts), model.dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ij = [(i, j) for i in range(len(texts)) for j in range(len(texts)) if i != j]
    older, newer = np.array([i for i, _ in ij]), np.array([j for _, j in ij])
    assert len(ij) > 2 * pair._CHUNK
    vocab = model.vocabulary
    w = pair.Window.of(vectors, [vocab.ids(token_set(t)) for t in texts])
    apart = ([texts[i] for i in older], [texts[j] for j in newer])
    for head in (model.orders, model.marks):
        expected = _by_features(head, vectors[older], vectors[newer], apart, vocab)
        assert np.allclose(head.weigh(w, older, newer), expected, atol=1e-6)


def test_the_vocabulary_puts_the_models_words_first_and_keeps_each_id() -> None:
    vocab = pair.Vocabulary(["also", "now"])
    assert vocab.ids(["now", "also"]).tolist() == [0, 1] and vocab.known == 2
    new = vocab.ids(["zebra", "now", "quokka"]).tolist()
    assert new[0] == 1 and sorted(new[1:]) == [2, 3]  # words the model never saw come after its own
    assert vocab.ids(["quokka", "zebra"]).tolist() == sorted(new[1:])  # and keep their ids
