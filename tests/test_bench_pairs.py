"""The hand-written claim pairs and the benchmark that counts the rule's decisions on them."""

from __future__ import annotations

import numpy as np

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
