"""The knowledge-update and SituatedQA benchmarks' scoring, on hand-worked examples (no model); and
the knowledge-update benchmark's adjudicated system recorded from a scripted endpoint, then replayed
from its replies with no endpoint at all."""

from __future__ import annotations

import argparse
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agentmem.config import ClaimRules
from agentmem.errors import ProviderCacheMissError
from benchmarks.knowledge_update import (
    ADJUDICATED,
    Turns,
    adjudication,
    agentmem_rankings,
    asks,
    measures,
    part_of,
    render_markdown,
    summarise,
)
from benchmarks.situatedqa import holds, load, scores, statement, valid_at
from fakes import FakeEmbedder, FakeProvider


def test_which_value_a_question_asks_for() -> None:
    assert asks("How many projects have I completed since starting painting classes?") == (True, False)
    assert asks("Where did I initially keep my old sneakers?") == (False, True)
    assert asks("How often did I play tennis previously? How often do I play now?") == (True, True)
    assert {part_of(f"q{i}") for i in range(20)} == {"tune", "confirm"}
    assert part_of("06db6396") == part_of("06db6396")


def ku_question() -> dict[str, object]:
    def session(texts: list[tuple[str, bool]]) -> list[dict[str, object]]:
        return [{"role": "user", "content": t, "has_answer": a} for t, a in texts]

    return {
        "question_id": "x",
        "question": "How many projects have I completed?",
        "question_date": "2023/11/01 (Wed) 10:00",
        "haystack_dates": ["2023/10/09 (Mon) 13:24", "2023/08/16 (Wed) 03:47"],  # the later one first
        "haystack_session_ids": ["later", "earlier"],
        "haystack_sessions": [
            session([("I just finished my 5th project.", True), ("Any tips?", False)]),
            session([("I've completed 4 projects.", True)]),
        ],
    }


def test_turns_know_fresh_and_stale_evidence_by_date() -> None:
    t = Turns(ku_question())
    assert [sid for sid, _, _ in t.sessions] == ["earlier", "later"]
    assert t.fresh == {"later#0"} and t.stale == {"earlier#0"}
    # fresh first, stale beside it in the top 5
    assert measures(["later#0", "earlier#0"], [], t) == {
        "fresh_first": 1.0, "stale5": 1.0, "fresh5": 1.0, "earlier10": 0.0,
    }  # fmt: skip
    # stale first; the stale one found with history only
    m = measures(["earlier#0", "x", "x", "x", "x", "later#0"], ["later#0", "earlier#0"], t)
    assert (m["fresh_first"], m["stale5"], m["fresh5"], m["earlier10"]) == (0.0, 0.0, 0.0, 1.0)
    # no fresh evidence found at all is never "fresh first"
    assert measures(["x"], [], t)["fresh_first"] == 0.0


def test_situatedqa_versions_probes_and_scores(tmp_path: Path) -> None:
    row = {
        "question": "how many championships does the chicago bulls have",
        "timelines": [{"prev_answers": ["5"], "prev_start": {"year": 1997}, "cur_answers": ["6"],
                       "cur_start": {"year": 1998, "month": 6, "date": 14}}],
        "context_answer_pairs": [{"date": "1997", "answers": ["5"]}, {"date": "June 20, 2013", "answers": ["6"]},
                                 {"date": "someday", "answers": ["6"]}],
    }  # fmt: skip
    unchanged = {"question": "who wrote hamlet", "timelines": [{"cur_answers": ["Shakespeare"],
                                                                "cur_start": {"year": 1600}}]}  # fmt: skip
    path = tmp_path / "sqa.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (row, unchanged, {"question": "no dates", "timelines": None})))
    facts = load(path, None)
    assert [len(f.versions) for f in facts] == [2, 1]
    bulls = facts[0]
    assert [v.text for v in bulls.versions] == [
        "How many championships does the chicago bulls have? 5.",
        "How many championships does the chicago bulls have? 6.",
    ]
    assert bulls.versions[1].start == datetime(1998, 6, 14, tzinfo=UTC)
    assert [d.year for d, _ in bulls.probes] == [1997, 2013]  # an unparseable date is left out
    assert valid_at(bulls, datetime(1997, 1, 1, tzinfo=UTC)) == bulls.versions[0]
    assert valid_at(bulls, datetime(1990, 1, 1, tzinfo=UTC)) is None
    # answers match as whole words in the answer part only
    assert holds("When did it end? 2015.", ["2015"]) and not holds("When did it end? 2015.", ["15"])
    assert not holds("Who won in 2018? France.", ["2018"])
    assert statement("who is it ", "Bob") == "Who is it? Bob."
    now, dead = (bulls.versions[1].text, "0:1"), (bulls.versions[0].text, "0:0")
    s = scores(bulls, [now, dead], [True, False])
    assert s["top1_current"] and s["dead5"] and s["oracle"] == [True, True]
    assert not scores(bulls, [dead, now], [])["top1_current"]
    # another row's paraphrase that gives the current answer is current; it is no dead version
    para = ("How many titles do the Bulls have? 6.", "7:0")
    assert scores(bulls, [para], [])["top1_current"] and not scores(bulls, [para], [])["dead5"]


def notes_question() -> dict[str, object]:
    """Two sessions where the later one moves a fact in words no rule is sure of (the hint band)."""

    def turn(text: str) -> list[dict[str, object]]:
        return [{"role": "user", "content": text, "has_answer": True}]

    return {
        "question_id": "notes",
        "question": "Where do we keep the release notes?",
        "question_date": "2023/11/01 (Wed) 10:00",
        "haystack_dates": ["2023/08/16 (Wed) 03:47", "2023/10/09 (Mon) 13:24"],
        "haystack_session_ids": ["earlier", "later"],
        "haystack_sessions": [
            turn("We keep the release notes in the wiki"),
            turn("We keep the release notes in the repository docs folder"),
        ],
    }


def update_each(body: dict[str, Any]) -> str:
    """A scripted judge: every earlier statement of the request is an update."""
    n = len(re.findall(r"^\d+\. ", body["messages"][1]["content"], re.M))
    return json.dumps({"rulings": [{"statement": i, "ruling": "update", "reason": "moved"} for i in range(1, n + 1)]})


def test_adjudicated_system_records_then_replays_with_no_model(tmp_path: Path) -> None:
    q = notes_question()
    turns = Turns(q)
    provider = FakeProvider()
    provider.mode, provider.script = "script", update_each
    out = tmp_path / "results"
    args = argparse.Namespace(adjudicate=provider.url, model="judge", replies=None, out=out, cache_only=False)
    try:
        cfg, path, replies = adjudication(args)
        assert cfg is not None and cfg.adjudicate and path == out / "knowledge_update_replies.json" and replies == {}
        recorded = agentmem_rankings(q, turns, ADJUDICATED, FakeEmbedder(), tmp_path, ClaimRules(), cfg, replies)  # type: ignore[arg-type]
        plain = agentmem_rankings(q, turns, "remember", FakeEmbedder(), tmp_path, ClaimRules())  # type: ignore[arg-type]
    finally:
        provider.stop()  # no model from here on
    assert len(provider.requests) == 1 and recorded[2]["superseded"] == 1 and recorded[2]["asked"] == 1
    assert recorded[0] == ["later#0"] and recorded[1] == ["later#0", "earlier#0"]  # the stale turn only in history
    assert plain[2]["superseded"] == 0 and sorted(plain[0]) == ["earlier#0", "later#0"]  # the rules alone keep both
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(replies))  # what main() writes
    replay_args = argparse.Namespace(adjudicate=None, model="judge", replies=None, out=out, cache_only=True)
    cfg, _, loaded = adjudication(replay_args)
    assert cfg is not None and cfg.cache_only and list(loaded) == ["notes"]
    replayed = agentmem_rankings(q, turns, ADJUDICATED, FakeEmbedder(), tmp_path, ClaimRules(), cfg, loaded)  # type: ignore[arg-type]
    assert replayed[:2] == recorded[:2] and (replayed[2]["asked"], replayed[2]["cached"]) == (0, 1)
    with pytest.raises(ProviderCacheMissError):  # a reply the file does not hold: an error, never a guess
        agentmem_rankings(q, turns, ADJUDICATED, FakeEmbedder(), tmp_path, ClaimRules(), cfg, {})  # type: ignore[arg-type]
    systems = ("naive", "observe", "remember", ADJUDICATED)
    runs = dict.fromkeys(systems[:3], plain) | {ADJUDICATED: replayed}
    scored = {s: measures(r[0], r[1], turns) for s, r in runs.items()}
    per_q = [{"id": "notes", "part": part_of("notes"), "current": True, "earlier": False, "scores": scored}]
    res = {"questions": 1, "history": True, "systems": list(systems), "summary": summarise(per_q, systems),
           "superseded_turns": {"remember": 0, ADJUDICATED: 1},
           "adjudication": {"cache_only": True, "model": "judge", "url": None, "asked": 0, "cached": 1},
           "seconds": 0.0, "machine": {"cpu_model": "x", "git": {"commit": "abc"}}}  # fmt: skip
    md = render_markdown(res)
    assert "| adjudicated | 100.0 (n=1) | 0.0 (n=1) |" in md and "replayed from the cache, no model" in md
    with pytest.raises(SystemExit, match="does not exist"):
        adjudication(argparse.Namespace(adjudicate=None, model="m", replies=tmp_path / "none.json", out=out,
                                        cache_only=True))  # fmt: skip
