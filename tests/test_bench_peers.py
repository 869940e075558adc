"""benchmarks.peers end to end on a tiny input: agentmem always, each peer when its package is installed."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks import peers
from benchmarks.__main__ import BENCHMARKS, GROUPS

TURNS = [
    "We moved the staging database to PostgreSQL 16 last spring.",
    "My sister adopted a grey kitten called Pepper in June.",
    "The quarterly report is due on the first Friday of October.",
    "I started learning the cello after watching a concert in Vienna.",
    "Our team switched the build from Make to Bazel this year.",
    "The bakery on Elm Street sells rye bread only on Saturdays.",
    "Caroline ran her first half marathon in two hours and five minutes.",
    "The office plants need watering every Tuesday and Thursday.",
    "I booked a cabin near Lake Tahoe for the last week of August.",
    "Melanie painted a sunrise over the harbour for her mother.",
    "The API gateway rejects requests larger than eight megabytes.",
    "He prefers green tea without sugar in the afternoon.",
    "Our landlord replaced the broken dishwasher on Monday.",
    "The museum's dinosaur exhibit closes at the end of the month.",
    "I finally fixed the squeaky hinge on the garden gate.",
    "The conference keynote was about compilers for tiny chips.",
    "We adopted a rule that pull requests need two reviews.",
    "My grandfather grew tomatoes and beans behind the garage.",
    "The new intern speaks Portuguese, Spanish and a little Korean.",
    "Sam sold his old motorbike to a collector in Lyon.",
]
QUESTIONS = [
    "What did Caroline run?",
    "Where is the cabin booked?",
    "What does the bakery sell on Saturdays?",
    "Which database does staging use?",
    "What did Melanie paint?",
]


def tiny_data(root: Path) -> Path:
    """A data folder in the shared data's formats, holding the handful of texts above."""
    data = root / "data"
    data.mkdir()
    locomo = [{"conversation": {"session_1": [{"speaker": "A", "text": t} for t in TURNS[:12]]},
               "qa": [{"question": q} for q in QUESTIONS]}]  # fmt: skip
    (data / "locomo10.json").write_text(json.dumps(locomo))
    lme = {"question": "Who sold it?", "haystack_sessions": [[{"role": "user", "content": t} for t in TURNS[12:]]]}
    with gzip.open(data / "longmemeval_s_dev50.jsonl.gz", "wt") as f:
        f.write(json.dumps(lme) + "\n")
    return data


def test_rounds_rotate_and_slice_evenly() -> None:
    assert peers.rotated(["a", "b", "c"], 0) == ["a", "b", "c"]
    assert peers.rotated(["a", "b", "c"], 1) == ["b", "c", "a"]
    assert peers.rotated(["a", "b", "c"], 4) == ["b", "c", "a"]
    parts = peers.slices(list(range(10)), 3)
    assert [len(p) for p in parts] == [3, 3, 4] and sum(parts, []) == list(range(10))


def test_vector_texts_put_cached_first_and_stay_distinct() -> None:
    a, b, c, d, e = (f"{w} is a text long enough to be a memory" for w in "abcde")
    cached = {b, d}
    out = peers.vector_texts([a, b, c, "too short", "x" * 2001], [b, d, e, "   "], cached.__contains__, seed=1)
    assert sorted(out[:2]) == [b, d] and sorted(out) == [a, b, c, d, e]


def test_lookup_serves_the_given_vectors() -> None:
    v = np.eye(3, 384, dtype=np.float32)
    lookup = peers.Lookup(["x", "y", "z"], v)
    emb = peers.lookup_embedder(lookup)
    assert np.array_equal(emb.embed(["z", "x"]), v[[2, 0]]) and np.array_equal(emb.embed_query("y"), v[1])
    with pytest.raises(KeyError):
        emb.embed(["not there"])


def test_a_missing_peer_is_named_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(peers.MODULES, "chromadb", "no_such_module_for_peers")
    assert "not installed" in (peers.missing_reason("chromadb") or "")
    assert peers.missing_reason("agentmem") is None


def test_listed_and_in_the_speed_group() -> None:
    assert "peers" in BENCHMARKS and "peers" in GROUPS["speed"]


@pytest.mark.model
def test_end_to_end_tiny(tmp_path: Path) -> None:
    data = tiny_data(tmp_path)
    out = tmp_path / "results"
    argv = ["--data", str(data), "--out", str(out), "--embed-size", "10", "--vector-size", "16", "--timed-adds", "6",
            "--questions", "4", "--rounds", "2", "--work-dir", str(tmp_path),
            "--cache-dir", str(tmp_path / "cache")]  # fmt: skip
    assert peers.main(argv) == 0
    results = json.loads((out / "peers.json").read_text())
    assert (out / "peers.md").read_text().startswith("# Peers side by side") and (out / "peers.png").stat().st_size
    embed_row, vector_row = results["rows"]
    assert (embed_row["mode"], embed_row["size"]) == ("embed", 10)
    assert (vector_row["mode"], vector_row["size"], vector_row["preload"]) == ("vectors", 16, 10)
    for row, adds in ((embed_row, 10), (vector_row, 6)):
        for name in peers.SYSTEMS:
            r = row["systems"][name]
            reason = peers.missing_reason(name)
            if reason is not None:  # a peer that is not installed is skipped, with why
                assert name != "agentmem" and r == {"skipped": reason}
                continue
            assert "skipped" not in r, r
            assert r["held_at_search"] == row["size"], (name, r)  # distinct texts: every system holds them all
            assert r["adds"] == adds and r["adds_per_second"] > 0
            assert r["search_ms"]["n"] == 4 and r["mean_hits"] > 0
            assert len(r["add_round_per_second"]) == 2 and len(r["search_round_p50"]) == 2
        if "llm_calls" in row["systems"]["mem0"]:
            assert row["systems"]["mem0"]["llm_calls"] == 0
    merged_out = tmp_path / "merged"
    assert peers.main(["--out", str(merged_out), "--merge", str(out / "peers.json"), str(out / "peers.json")]) == 0
    merged = json.loads((merged_out / "peers.json").read_text())
    assert len(merged["rows"]) == 4 and merged["command"].count("benchmarks.peers") == 2
