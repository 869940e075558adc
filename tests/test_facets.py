"""A question naming several events ("which came first, X or Y?", "how many days between X and Y?") recalls
each event on its own as well, so that the evidence of the second one is not crowded out by the first."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest
from litestar.testing import TestClient

from agentmem import Memory, NewMemory
from agentmem.facets import of
from agentmem.ranking import Weights
from agentmem.recall import best_of
from agentmem.records import Hit, MemoryVersion, ScoreParts
from api.app import create_app
from api.settings import load
from fakes import FakeEmbedder
from tests.test_api import ENV, auth

NOW = datetime(2023, 5, 25, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "facets"),
    [
        ("Which device did I set up first, the smart thermostat or the mesh network system?",
         ["Which device did I set up first, the smart thermostat",
          "Which device did I set up first, the mesh network system"]),
        ("Who did I meet first, Mark and Sarah or Tom?",
         ["Who did I meet first, Mark and Sarah", "Who did I meet first, Tom"]),
        ("Which did I read first: Dune, Emma, or Ulysses?",
         ["Which did I read first, Dune", "Which did I read first, Emma", "Which did I read first, Ulysses"]),
        ("How many days passed between the gardening workshop and the day I planted the tomato saplings?",
         ["the gardening workshop", "the day I planted the tomato saplings"]),
        ("How long had I been using the new area rug when I rearranged my living room furniture?",
         ["How long had I been using the new area rug", "I rearranged my living room furniture"]),
        ("How many months before my anniversary did Rachel get engaged?", ["my anniversary", "Rachel get engaged"]),
        ("How many days before my best friend's birthday party did I order her gift?",
         ["my best friend's birthday party", "I order her gift"]),
    ],
)  # fmt: skip
def test_a_question_naming_several_events_has_a_facet_for_each(query: str, facets: list[str]) -> None:
    assert of(query) == facets


@pytest.mark.parametrize(
    "query",
    [
        "What did I cook last week?",
        "the database config",
        "How many days ago did I buy a smoker?",
        "How old was I when I moved to the United States?",  # "how old was I" asks, it names no event
        "How old was I when Alex was born?",
        "Should I use tea or coffee?",  # no question before the alternatives: one ask
        "I asked about fracking before drilling. Can you remind me which state requires it after drilling?",
    ],
)
def test_a_question_about_one_event_has_no_facets(query: str) -> None:
    assert of(query) == []


def test_time_the_window_understood_is_no_event() -> None:
    assert of("What did I do between May 1 and May 10?", "between May 1 and May 10") == []
    assert of("What did I buy since last Tuesday?", "since last Tuesday") == []
    assert of("Which came first in March, the party or the trip?", "in March") == [
        "Which came first, the party",
        "Which came first, the trip",
    ]


def test_best_of_keeps_each_memory_at_its_best_score(tmp_path: Path) -> None:
    with Memory(tmp_path / "data", embedder=FakeEmbedder(), clock=lambda: NOW) as mem:
        made = mem.observe([NewMemory(content=f"m{i}", project="p", kind="event") for i in range(4)])
    stored = {v.id: v for v in made}
    ids = sorted(stored)
    parts = {"effective_confidence": 1.0, "recency": 1.0, "salience": 0.5}

    def hit(i: int, score: float) -> Hit:
        m: MemoryVersion = stored[ids[i - 1]]
        return Hit(memory=m, score=score, parts=ScoreParts(relevance=score, **parts), has_history=False)

    query = [hit(1, 0.9), hit(2, 0.5), hit(3, 0.4)]
    facet_a, facet_b = [hit(3, 1.0), hit(1, 0.2)], [hit(4, 0.6), hit(2, 0.3)]
    merged = best_of(query, [facet_a, facet_b], 0.8, 4)
    assert [(ids.index(h.memory.id) + 1, h.score) for h in merged] == [(1, 0.9), (3, 0.8), (2, 0.5), (4, 0.48)]
    assert merged[1].parts == facet_a[0].parts  # the parts of the recall it scored best in
    assert [ids.index(h.memory.id) + 1 for h in best_of(query, [], 0.8, 10)] == [1, 2, 3]


# -- in a Memory: the real model ------------------------------------------------------------------------

THERMOSTAT = [
    "Which device should I set up first? I set up the smart thermostat in the hallway this morning.",
    "The smart thermostat I set up: 19 degrees on weekdays, 21 at the weekend.",
    "Setting up the smart thermostat was the first thing I did in the new flat.",
    "My smart thermostat device keeps showing a firmware update notice.",
    "How much energy does a smart thermostat device actually save in a year?",
    "The smart thermostat app lets me set the temperature from work.",
]
MESH = "Three nodes of the mesh network now cover the house, no more dead spots upstairs."
QUESTION = "Which device did I set up first, the smart thermostat or the mesh network system?"


def devices(path: Path, embedder: Any, facets: float = Weights().facets) -> Memory:
    mem = Memory(path, embedder=embedder, clock=lambda: NOW)
    mem.config = msgspec.structs.replace(mem.config, weights=Weights(facets=facets))
    mem.observe([NewMemory(content=t, project="shop", kind="event") for t in [*THERMOSTAT, MESH]])
    return mem


def place_of_mesh(mem: Memory, **how: Any) -> tuple[int, list[str]]:
    found = mem.search(QUESTION, project="shop", k=len(THERMOSTAT) + 1, **how)
    return [h.memory.content for h in found.hits].index(MESH), found.facets


@pytest.mark.model
def test_the_second_event_of_a_question_ranks_higher_with_facets(tmp_path: Path, real_embedder: Any) -> None:
    with devices(tmp_path / "on", real_embedder) as mem:
        on, said = place_of_mesh(mem)
        assert said == of(QUESTION)
        assert place_of_mesh(mem, as_of=NOW) == (on, said)  # the same over every version valid then
    with devices(tmp_path / "off", real_embedder, facets=0.0) as mem:
        off, said = place_of_mesh(mem)
        assert said == []
    # One query vector leans to the thermostat, whose memories crowd the mesh network out; its facet lifts it,
    # though not to the top: the facet keeps the question's head ("which device did I set up first"), and that
    # matches the thermostat memories too.
    assert on < off, (on, off)


def test_http_recall_says_the_facets(tmp_path: Path) -> None:
    env = {**ENV, "AGENTMEM_SWEEP_EVERY_MINUTES": "0", "AGENTMEM_CONSOLIDATE_EVERY_MINUTES": "0"}
    with devices(tmp_path / "data", FakeEmbedder()) as mem, TestClient(create_app(load(env=env), mem=mem)) as c:
        r = c.post("/v1/recall", json={"query": QUESTION, "project": "shop"}, headers=auth("read"))
        assert r.status_code == 200, r.text
        assert r.json()["facets"] == of(QUESTION)
        r = c.post("/v1/recall", json={"query": "the smart thermostat", "project": "shop"}, headers=auth("read"))
        assert r.status_code == 200 and r.json()["facets"] == []
