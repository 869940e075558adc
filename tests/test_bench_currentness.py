"""The knowledge-update and SituatedQA benchmarks' scoring, on hand-worked examples (no model)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.knowledge_update import Turns, asks, measures, part_of
from benchmarks.situatedqa import holds, load, scores, statement, valid_at


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
