"""The retrieval benchmarks' scoring and roll-up, on hand-worked examples (no model)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from benchmarks.conversations import (
    SessionBM25,
    SessionHit,
    cosine_ranking,
    evidence_recall,
    ndcg,
    recall_all,
    recall_any,
    roll_up,
    rrf,
)
from benchmarks.harness.embedder import VectorCache, VectorsEmbedder


def test_recall_any_and_all() -> None:
    ranked = ["a", "b", "c", "d", "e", "f"]
    assert recall_any(ranked, ["e"], 5) == 1.0
    assert recall_any(ranked, ["f"], 5) == 0.0
    assert recall_any(ranked, ["f", "a"], 1) == 1.0
    assert recall_any(ranked, [], 5) == 0.0
    assert recall_all(ranked, ["a", "f"], 5) == 0.5
    assert recall_all(ranked, ["a", "b"], 2) == 1.0


def test_ndcg_hand_worked() -> None:
    # relevant {b, d}, found at ranks 2 and 4:
    # DCG = 1/log2(3) + 1/log2(5) = 0.63093 + 0.43068; ideal = 1 + 1/log2(3) = 1.63093
    ranked = ["a", "b", "c", "d"]
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert ndcg(ranked, ["b", "d"], 10) == pytest.approx(expected)
    assert ndcg(ranked, ["b", "d"], 10) == pytest.approx(0.65093, abs=1e-5)
    assert ndcg(["b", "d", "a"], ["b", "d"], 10) == pytest.approx(1.0)
    assert ndcg(ranked, ["z"], 10) == 0.0
    assert ndcg(ranked, ["d"], 3) == 0.0  # beyond k
    # LongMemEval's variant: rank 2 has gain 1, rank 4 has 1/log2(4) = 0.5; ideal = 1 + 1
    assert ndcg(ranked, ["b", "d"], 10, lme=True) == pytest.approx((1 + 0.5) / 2)


def test_roll_up_max_sum_decay() -> None:
    hits = [("s1", 0.9), ("s2", 0.8), ("s2", 0.7), ("s3", 0.6), ("s2", 0.5), ("s3", 0.55)]
    assert roll_up(hits, "max") == ["s1", "s2", "s3"]
    # sum of the three best: s2 = 2.0, s3 = 1.15, s1 = 0.9
    assert roll_up(hits, "sum3") == ["s2", "s3", "s1"]
    # decay: s2 = 0.8 + 0.35 + 0.125 = 1.275, s3 = 0.6 + 0.275 = 0.875, s1 = 0.9
    assert roll_up(hits, "decay") == ["s2", "s1", "s3"]
    assert roll_up([("x", 1.0), ("y", 1.0)], "max") == ["x", "y"]  # ties keep first appearance
    with pytest.raises(ValueError):
        roll_up(hits, "median")


def test_session_level_fusion_roll_ups() -> None:
    # (session, score, bm25 rank, vector rank, time fit, whole session)
    hits = [
        SessionHit("s1", 0.9, 1, None, None, False),  # s1: best on words, one turn
        SessionHit("s2", 0.8, 3, 1, None, True),  # s2: its whole session 3rd on words, 1st on vectors
        SessionHit("s3", 0.7, 2, 2, None, False),  # s3: 2nd on both
        SessionHit("s2", 0.5, None, 4, None, False),
    ]
    assert roll_up(hits, "max") == ["s1", "s2", "s3"]
    # bm25 ranks s1, s3, s2; vectors s2, s3: s2 = 1/63 + 1/61 just above s3 = 2/62, s1 = 1/61
    assert roll_up(hits, "rrf") == ["s2", "s3", "s1"]
    # by best score (s1, s2, s3) as a third list: s2 = 1/63 + 1/61 + 1/62, s3 = 2/62 + 1/63, s1 = 2/61
    assert roll_up(hits, "rrf+max") == ["s2", "s3", "s1"]
    # whole-session BM25 only (s2 1st), turn vectors only (s3, then s2's turn), best score (s1, s2, s3):
    # s2 = 1/61 + 2/62, s3 = 1/61 + 1/63, s1 = 1/61 (its turn counts in no list but the score's)
    assert roll_up(hits, "rrf-whole+max") == ["s2", "s3", "s1"]
    assert roll_up([("x", 1.0), ("y", 0.5)], "rrf") == ["x", "y"]  # plain pairs: no ranks, first seen first


def test_locomo_sessions_of_turns() -> None:
    from benchmarks.locomo import sessions_of

    assert sessions_of(["D3:7", "D1:2", "D3:1", "D12:4"]) == ["D3", "D1", "D12"]
    assert evidence_recall(sessions_of(["D3:7", "D1:2"]), sessions_of(["D1:5", "D2:1"]), 1) == (0.0, 0.0)
    assert evidence_recall(sessions_of(["D3:7", "D1:2"]), sessions_of(["D1:5", "D2:1"]), 2) == (0.5, 1.0)


def test_rrf_and_cosine_pooling() -> None:
    assert rrf([["a", "b", "c"], ["b", "c", "a"]]) == ["b", "a", "c"]
    vectors = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]], dtype=np.float32)
    ranked = cosine_ranking(np.array([0.0, 1.0], dtype=np.float32), vectors, ["s1", "s1", "s2"])
    assert [s for s, _ in ranked] == ["s1", "s2"]  # s1's best turn (1.0) beats s2's (0.8)


def test_evidence_recall() -> None:
    ranked = ["D1:1", "D1:2", "D2:5"]
    assert evidence_recall(ranked, ["D1:2", "D3:1"], 2) == (0.5, 1.0)  # (fraction found, any found)
    assert evidence_recall(ranked, ["D3:1"], 3) == (0.0, 0.0)


def test_session_bm25_stems() -> None:
    ix = SessionBM25({"s1": "I adopted two cats last spring", "s2": "We talked about running shoes"})
    assert [s for s, _ in ix.search("cat adoption?", 5)][:1] == ["s1"]
    assert [s for s, _ in ix.search("runs", 5)] == ["s2"]


def test_vector_cache_round_trip(tmp_path: Path) -> None:
    calls: list[list[str]] = []

    def fake(texts: list[str]) -> np.ndarray:
        calls.append(list(texts))
        return np.array([[float(len(t)), 1.0] for t in texts], dtype=np.float32)

    cache = VectorCache(fake, "fake", 2, cache_dir=tmp_path)
    emb = VectorsEmbedder.of(cache)
    assert emb.embed(["ab", "abc"]).tolist() == [[2.0, 1.0], [3.0, 1.0]]
    again = VectorCache(fake, "fake", 2, cache_dir=tmp_path)  # from disk: nothing embedded again
    assert again.get(["abc"]).tolist() == [[3.0, 1.0]]
    assert len(calls) == 1
