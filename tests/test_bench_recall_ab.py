"""benchmarks.recall_ab: the query plan, the statistics, and a tiny run of this tree against itself."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from benchmarks import recall_ab
from benchmarks.__main__ import BENCHMARKS, GROUPS
from benchmarks.harness.paths import DEFAULT_DATA, REPO_ROOT

NOW = datetime(2023, 5, 20, 12, 0, tzinfo=UTC)
TIMED = ["What did I do last Saturday?", "What did we decide in March?", "What did I buy two weeks ago?"]
PLAIN = [f"Which colour is the door number {i}?" for i in range(27)]


def test_listed_and_in_the_speed_group() -> None:
    assert "recall_ab" in BENCHMARKS and "recall_ab" in GROUPS["speed"]


def test_plan_keeps_the_pool_share_and_never_repeats_a_query() -> None:
    pool = TIMED + PLAIN + PLAIN[:5]  # repeats in the pool count once
    plan = recall_ab.Plan(pool, NOW, rounds=2, per_round={"recall": 10, "recall+embed": 3}, warmup=2, seed=1)
    assert plan.pool == {"distinct": 30, "time": 3, "plain": 27}
    assert [plan.kind[q] for q in TIMED] == ["time"] * 3 and plan.kind[PLAIN[0]] == "plain"
    used = plan.warmup + [q for r in plan.rounds for m in recall_ab.MODES for q in r[m]]
    assert len(used) == len(set(used)) == 2 + 2 * 13
    for r in plan.rounds:  # 10% of the pool names a time: one query in each recall round of 10
        assert len(r["recall"]) == 10 and sum(plan.kind[q] == "time" for q in r["recall"]) == 1
        assert len(r["recall+embed"]) == 3
    assert not plan.short
    short = recall_ab.Plan(pool, NOW, rounds=3, per_round={"recall": 10, "recall+embed": 5}, warmup=2, seed=1)
    assert short.short  # 30 questions cannot fill 3 x 15 + 2


def test_summaries_paired_differences_and_target() -> None:
    plan = recall_ab.Plan(TIMED + PLAIN, NOW, rounds=1, per_round={"recall": 10, "recall+embed": 0}, warmup=0,
                          seed=0)  # fmt: skip
    queries = plan.rounds[0]["recall"]
    base = [1.0 + i for i in range(10)]
    new = [t + (3.0 if plan.kind[q] == "time" else 0.5) for q, t in zip(queries, base, strict=True)]
    timings: dict[str, dict[str, list[list[float]]]] = {
        "baseline": {"recall": [base], "recall+embed": [[]]},
        "new": {"recall": [new], "recall+embed": [[]]},
    }
    s = recall_ab.summarise(timings, plan, ["baseline", "new"], seed=0)
    assert s["recall"]["all"]["paired"]["median_ms"] == pytest.approx(0.5)
    assert s["recall"]["time"]["paired"]["median_ms"] == pytest.approx(3.0)
    assert s["recall"]["plain"]["delta"]["p50"] == pytest.approx(0.5)
    assert s["recall"]["all"]["new"]["n"] == 10 and s["recall+embed"]["all"]["new"]["n"] == 0
    lo, hi = s["recall"]["all"]["paired"]["ci95_ms"]
    assert lo <= 0.5 <= hi
    t = recall_ab.target({"modes": s, "settings": {"size": 100_000}})
    assert t is not None and t["met"] and t["measured_ms"] == pytest.approx(s["recall"]["all"]["delta"]["p50"])
    slow: dict[str, dict[str, list[list[float]]]] = {"baseline": {"recall": [base], "recall+embed": [[]]},
            "new": {"recall": [[x + 2.0 for x in base]], "recall+embed": [[]]}}  # fmt: skip
    t = recall_ab.target({"modes": recall_ab.summarise(slow, plan, ["baseline", "new"], 0), "settings": {"size": 1}})
    assert t is not None and not t["met"] and t["paired_median_ms"] == pytest.approx(2.0)


def test_profile_growth_lists_the_core_by_growth() -> None:
    def rows(*items: tuple[str, str, float]) -> dict[str, object]:
        return {"rows": [{"file": f, "function": fn, "cumtime_ms": ms, "calls_per_recall": 1.0} for f, fn, ms in items]}

    profiles = {
        "baseline": rows(("agentmem/recall.py", "fuse", 2.0), ("agentmem/memory.py", "recall", 5.0)),
        "new": rows(("agentmem/recall.py", "fuse", 2.5), ("agentmem/memory.py", "recall", 9.0),
                    ("agentmem/slots.py", "newer_first", 3.0), ("/usr/lib/python3/x.py", "other", 50.0)),
    }  # fmt: skip
    g = recall_ab.profile_growth(profiles)  # type: ignore[arg-type]
    assert [(x["function"], x["growth_ms"]) for x in g] == [("recall", 4.0), ("newer_first", 3.0), ("fuse", 0.5)]
    assert g[1]["baseline_ms"] is None


@pytest.mark.model
@pytest.mark.skipif(not (DEFAULT_DATA / "locomo10.json").exists(), reason="the shared data folder is not here")
def test_end_to_end_tiny_against_this_tree(tmp_path: Path) -> None:
    out = tmp_path / "results"
    argv = ["--against", ".", "--size", "300", "--rounds", "1", "--queries", "12", "--embed-queries", "3", "--warmup",
            "2", "--batch", "5", "--profile", "6", "--out", str(out), "--work-dir", str(tmp_path)]  # fmt: skip
    assert recall_ab.main(argv) == 0
    results = json.loads((out / "recall_ab.json").read_text())
    md = (out / "recall_ab.md").read_text()
    assert md.startswith("# Recall latency at 300 memories") and (out / "recall_ab.png").stat().st_size
    assert "python -m benchmarks.recall_ab --against ." in md
    for side in ("baseline", "new"):
        s = results["sides"][side]
        assert s["store"]["memories"] == 300 and s["store"]["check_ok"], s
        assert all(Path(f).resolve().is_relative_to(REPO_ROOT) for f in s["modules"].values())
        assert s["embedder"] == "OnnxEmbedder" and s["time_warm_up"]
        for metric in ("modes", "cpu"):
            assert results[metric]["recall"]["all"][side]["n"] == 12
            assert results[metric]["recall+embed"]["all"][side]["n"] == 3
            assert results[metric]["recall"]["all"][side]["p50"] > 0
    assert results["queries"]["timed_naming_time"]["recall"] >= 1  # 14% of the real questions: 2 of 12
    assert results["agreement"]["all"]["queries"] == 15
    assert results["agreement"]["all"]["mean_overlap"] >= 0.9  # same code, same memories
    assert results["target"]["measured_ms"] == results["modes"]["recall"]["all"]["delta"]["p50"]
    assert results["profiles"]["new"]["recalls"] == 6 and results["profiles"]["new"]["rows"]
    assert len(results["load"]) == 2 * (12 // 5 + 1 + 3 // 5 + 1)  # a turn each per batch of 5, each mode
    alone = copy.deepcopy(results)  # the report of a run without a baseline
    del alone["sides"]["baseline"]
    for key in ("agreement", "profile_growth", "target"):
        alone.pop(key)
    text = recall_ab.render_markdown(alone)
    assert "new p50" in text and "baseline p50" not in text
