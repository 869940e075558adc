"""The hand-written claim pairs and the benchmark that counts the rule's decisions on them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from agentmem.supersede import Thresholds, decide
from benchmarks.claim_pairs import LABELS, SETS, load, rates


def test_both_sets_load_and_stay_apart() -> None:
    dev, test = (load(SETS[name]) for name in ("dev", "test"))
    for pairs in (dev, test):
        assert {p["label"] for p in pairs} == set(LABELS)
        assert min(sum(p["label"] == lbl for p in pairs) for lbl in LABELS) >= 40
    # the test set judges the rules on pairs the dev set never showed
    assert not {(p["old"], p["new"]) for p in dev} & {(p["old"], p["new"]) for p in test}


def test_rates_count_what_the_rule_decides() -> None:
    pairs = [
        {"old": "The dev server runs on port 3000.", "new": "The dev server is on port 4000 now.", "label": "update"},
        {"old": "The staging database runs PostgreSQL 14.", "new": "The production database runs PostgreSQL 15.",
         "label": "different"},
        {"old": "I like tea.", "new": "I enjoy long walks.", "label": "different"},
        {"old": "Omar owns billing.", "new": "Billing is owned by Omar.", "label": "restate"},
    ]  # fmt: skip
    r = rates(pairs, np.array([0.8, 0.9, 0.1, 0.9]), decide, Thresholds())
    assert r["update"] == {"pairs": 1, "fired": 1, "rate": 1.0, "by_reason": {"new value": 1}}
    assert r["different"]["pairs"] == 2 and r["different"]["fired"] == 0
    assert r["restate"]["pairs"] == 1


def test_the_held_out_pairs_are_apart_from_every_training_pair() -> None:
    import sys

    from benchmarks.pair_heldout import DATA
    from benchmarks.pair_heldout import LABELS as HELD_LABELS
    from benchmarks.pair_heldout import load as load_held

    sys.path.insert(0, str(DATA.parent.parent / "scripts"))
    from train_pair_model import pairs as training_pairs

    held = load_held(DATA)
    assert {p["label"] for p in held} == set(HELD_LABELS) and len(held) >= 1000
    trained = {(a, b) for a, b, _, _ in training_pairs()}
    assert not {(p["older"], p["newer"]) for p in held} & trained


@pytest.mark.model
def test_the_held_out_benchmark_runs_the_shipped_model(tmp_path: Path) -> None:
    from benchmarks.pair_heldout import main

    assert main(["--limit", "40", "--out", str(tmp_path), "--cache-dir", str(tmp_path / "cache")]) == 0
    results = json.loads((tmp_path / "pair_heldout.json").read_text())
    model = results["systems"]["pair model"]["by_label"]
    assert results["pairs"] == 40 and sum(r["pairs"] for r in model.values()) == 40
    assert (tmp_path / "pair_heldout.md").exists() and (tmp_path / "pair_heldout.png").stat().st_size > 0
