"""The changing-facts scenario generator: deterministic, and big enough to mean something."""

from __future__ import annotations

import json
from datetime import datetime

from benchmarks.factgen import OUT, generate


def test_same_seed_same_scenario_and_the_committed_file_matches() -> None:
    a, b = generate(7), generate(7)
    assert a == b
    assert generate(8) != a
    assert json.loads(OUT.read_text()) == generate(json.loads(OUT.read_text())["seed"])


def test_invariants() -> None:
    data = generate()
    sessions = data["sessions"]
    assert len(sessions) >= 12
    claims = [c for s in sessions for c in s["claims"]]
    assert len(claims) >= 100
    assert sum(c["change"] for c in claims) >= 20
    dates = [datetime.fromisoformat(s["date"]) for s in sessions]
    assert dates == sorted(dates) and (dates[-1] - dates[0]).days >= 89
    facts = {f["id"]: f for f in data["facts"]}
    assert {f["category"] for f in facts.values()} == {"changed", "stable", "distractor"}
    for f in facts.values():
        assert f["questions"] and f["current"] not in f["dead"]
        assert (f["category"] == "changed") == bool(f["dead"])
        if f["category"] == "distractor":
            assert facts[f["twin"]]["category"] == "changed"
    # every value is stated before it is asked about, and a change never names the value it replaces
    for f in facts.values():
        said = [c for c in claims if c["fact"] == f["id"]]
        assert said and said[-1]["value"] == f["current"]
        for c in said:
            assert not any(d in c["text"] for d in f["dead"] if d != c["value"] and d not in c["value"])
